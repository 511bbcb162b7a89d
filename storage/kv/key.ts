/**
 * Keys of the KV engine: their parts, ranges, the mutations written under
 * them, an order-preserving string encoding, and the shortening of long
 * text parts (Deno KV keys are at most 2 KiB).
 *
 * @module
 */

import { sha256Hex } from "../sha256.ts";

/** A key part as the engine uses them: strings and non-negative integers. */
export type KeyPart = string | number;

/** A key: a tuple of parts, ordered part by part. */
export type Key = readonly KeyPart[];

/** One write of an atomic commit; `value: undefined` deletes the key. */
export interface Mutation {
  /** The key to write. */
  key: Key;
  /** The value to store; undefined deletes the key. */
  value: unknown;
}

/** A key range: everything under `prefix`, or `start` (incl.) to `end` (excl.). */
export type KeyRange = { prefix: Key } | { start: Key; end: Key };

/**
 * `NUMBER_PADS[d]`: the tag and zeros that pad a d-digit integer to 16
 * digits (safe integers have at most 16).
 */
const NUMBER_PADS: readonly string[] = Array.from(
  { length: 17 },
  (_, d) => "n" + "0".repeat(16 - d),
);

/** Text key parts longer than this are replaced by their hash. */
const MAX_KEY_TEXT = 128;

/**
 * Encodes a key as a string whose order matches the key order, and whose
 * prefixes are the encodings of the key's prefixes.
 *
 * @example
 * ```ts
 * import { encodeKey } from "./key.ts";
 * console.log(encodeKey(["a", 2]) < encodeKey(["a", 10])); // true
 * console.log(encodeKey(["a", 2, 0]).startsWith(encodeKey(["a", 2]))); // true
 * ```
 */
export function encodeKey(key: Key): string {
  let out = "";
  for (const part of key) {
    if (typeof part === "number") {
      if (!Number.isSafeInteger(part) || part < 0) {
        throw new RangeError(
          `key part must be a non-negative integer: ${part}`,
        );
      }
      // "n" and 16 digits, zero-padded, from one constant: no padStart copy.
      const digits = String(part);
      out += NUMBER_PADS[digits.length] + digits;
    } else {
      // Most parts hold no NUL: skip replaceAll's copy for them.
      out += "s" +
        (part.includes("\0") ? part.replaceAll("\0", "\0\x01") : part) +
        "\0\0";
    }
  }
  return out;
}

/**
 * A text as a key part: short texts as they are, longer ones (over 128
 * characters) as `#<sha256 hex>`.
 *
 * @example
 * ```ts
 * import { keyText } from "./key.ts";
 * console.log(keyText("ed25519:abc")); // "ed25519:abc"
 * console.log(keyText("x".repeat(200)).startsWith("#")); // true
 * ```
 */
export function keyText(text: string): string {
  if (text.length <= MAX_KEY_TEXT) return text;
  return "#" + sha256Hex(text);
}

/**
 * A thread id as a key part: `""` for lines without a thread.
 *
 * @example
 * ```ts
 * import { threadKey } from "./key.ts";
 * console.log(threadKey(undefined)); // ""
 * console.log(threadKey("t1")); // "t1"
 * ```
 */
export function threadKey(th: string | undefined): string {
  return th === undefined ? "" : keyText(th);
}
