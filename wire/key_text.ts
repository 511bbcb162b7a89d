/**
 * `ed25519:` keys as text: formatting, parsing and the canonical-form
 * check. Pure string work, apart from the signing code of `keys.ts`, so
 * what only reads or checks keys (the CLI's flags) loads no crypto.
 *
 * @module
 */

import { decodeBase64, encodeBase64Url } from "./base64.ts";

/** The prefix of every AWP key string. */
export const KEY_PREFIX = "ed25519:";

/**
 * The length of an Ed25519 public key, in bytes.
 *
 * @example
 * ```ts
 * import { KEY_BYTES } from "./key_text.ts";
 * console.log(KEY_BYTES); // 32
 * ```
 */
export const KEY_BYTES = 32;

const CANONICAL_KEY = /^ed25519:[A-Za-z0-9_-]{43}$/;

/**
 * Formats a 32-byte public key as `ed25519:` + unpadded base64url.
 *
 * @example
 * ```ts
 * import { formatKey } from "./key_text.ts";
 * console.log(formatKey(new Uint8Array(32))); // "ed25519:AAAA...AAA"
 * ```
 */
export function formatKey(publicKey: Uint8Array): string {
  if (!(publicKey instanceof Uint8Array) || publicKey.length !== KEY_BYTES) {
    throw new TypeError(`formatKey: a public key is ${KEY_BYTES} bytes`);
  }
  return KEY_PREFIX + encodeBase64Url(publicKey);
}

/**
 * Parses an `ed25519:` key into its 32 bytes. Like the reference, it
 * accepts every base64 variant (padded or not, url or standard alphabet;
 * NOTES.md item 10), so two different strings can name the same key:
 * compare keys as `formatKey(parseKey(k))` or as bytes, never as raw input.
 * Throws a TypeError with one line on anything else.
 *
 * @example
 * ```ts
 * import { formatKey, parseKey } from "./key_text.ts";
 * console.log(parseKey(formatKey(new Uint8Array(32))).length); // 32
 * ```
 */
export function parseKey(key: string): Uint8Array {
  const shown = () => JSON.stringify(String(key).slice(0, 80));
  if (typeof key !== "string" || !key.startsWith(KEY_PREFIX)) {
    throw new TypeError(
      `not an ed25519 key (want "${KEY_PREFIX}" + base64url of 32 bytes): ${shown()}`,
    );
  }
  let bytes: Uint8Array;
  try {
    bytes = decodeBase64(key.slice(KEY_PREFIX.length));
  } catch (e) {
    throw new TypeError(
      `not an ed25519 key (${(e as Error).message}): ${shown()}`,
    );
  }
  if (bytes.length !== KEY_BYTES) {
    throw new TypeError(
      `not an ed25519 key (${bytes.length} bytes, want ${KEY_BYTES}): ${shown()}`,
    );
  }
  return bytes;
}

/**
 * Whether `text` is a key in canonical form, exactly as
 * {@linkcode formatKey} prints it (`ed25519:` + 43 base64url characters,
 * unused bits zero). Stricter than {@linkcode parseKey} on purpose: keys
 * that pass can be compared as strings, one string per key.
 *
 * @example
 * ```ts
 * import { formatKey, isKey } from "./key_text.ts";
 * console.log(isKey(formatKey(new Uint8Array(32))), isKey("ed25519:abc")); // true false
 * ```
 */
export function isKey(text: string): boolean {
  if (typeof text !== "string" || !CANONICAL_KEY.test(text)) return false;
  try {
    return formatKey(parseKey(text)) === text;
  } catch {
    return false;
  }
}
