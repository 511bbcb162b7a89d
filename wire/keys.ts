/**
 * Ed25519 identities: signing and verification (`ed25519:` keys as text
 * are in `key_text.ts`, re-exported here).
 *
 * WebCrypto (`crypto.subtle`) is used when the runtime supports Ed25519,
 * with `@noble/ed25519` as the fallback; both produce the same bytes, as
 * Ed25519 signatures are deterministic.
 *
 * @module
 */

import { decodeBase64, encodeBase64Url } from "./base64.ts";
import { formatKey, KEY_BYTES, parseKey } from "./key_text.ts";

export { formatKey, isKey, KEY_PREFIX, parseKey } from "./key_text.ts";

const SIGNATURE_BYTES = 64;
// The fixed DER prefix of a PKCS#8 Ed25519 private key; the 32-byte seed
// follows it (RFC 8410).
const PKCS8_PREFIX = new Uint8Array([
  0x30,
  0x2e,
  0x02,
  0x01,
  0x00,
  0x30,
  0x05,
  0x06,
  0x03,
  0x2b,
  0x65,
  0x70,
  0x04,
  0x22,
  0x04,
  0x20,
]);
const ED25519 = { name: "Ed25519" } as const;

type Noble = typeof import("npm:@noble/ed25519@^3.2.0");
let noble: Promise<Noble> | undefined;

/**
 * `@noble/ed25519`, loaded on first use: only runtimes without WebCrypto
 * Ed25519 need it, and importing it costs every process ~1 MiB of RSS.
 */
function fallback(): Promise<Noble> {
  return noble ??= import("npm:@noble/ed25519@^3.2.0");
}

/**
 * A fresh random nonce, unpadded base64url of `bytes` bytes (default 32).
 *
 * @example
 * ```ts
 * import { randomNonce } from "./keys.ts";
 * console.log(randomNonce().length); // 43
 * ```
 */
export function randomNonce(bytes: number = 32): string {
  if (!Number.isSafeInteger(bytes) || bytes < 1 || bytes > 65536) {
    throw new RangeError(`randomNonce: invalid byte count ${bytes}`);
  }
  return encodeBase64Url(crypto.getRandomValues(new Uint8Array(bytes)));
}

let webCryptoProbe: Promise<boolean> | undefined;

/** Whether this runtime's WebCrypto does Ed25519; probed once. */
function hasWebCryptoEd25519(): Promise<boolean> {
  webCryptoProbe ??= (async () => {
    try {
      const key = await crypto.subtle.importKey(
        "pkcs8",
        pkcs8(new Uint8Array(KEY_BYTES)),
        ED25519,
        false,
        ["sign"],
      );
      await crypto.subtle.sign(ED25519, key, new Uint8Array(0));
      return true;
    } catch {
      return false;
    }
  })();
  return webCryptoProbe;
}

function pkcs8(seed: Uint8Array): Uint8Array<ArrayBuffer> {
  const der = new Uint8Array(PKCS8_PREFIX.length + seed.length);
  der.set(PKCS8_PREFIX);
  der.set(seed, PKCS8_PREFIX.length);
  return der;
}

function own(bytes: Uint8Array): Uint8Array<ArrayBuffer> {
  return new Uint8Array(bytes);
}

/**
 * An Ed25519 private key able to sign, with its public key.
 *
 * @example
 * ```ts
 * import { Signer, verify } from "./keys.ts";
 * const signer = await Signer.generate();
 * const data = new TextEncoder().encode("hello");
 * const sig = await signer.sign(data);
 * console.log(signer.key, await verify(signer.key, data, sig)); // ed25519:... true
 * ```
 */
export class Signer {
  /** The public key as `ed25519:` + base64url. */
  readonly key: string;
  /** The 32-byte public key. */
  readonly publicKey: Uint8Array;
  /** The 32-byte private seed. Keep it secret. */
  readonly seed: Uint8Array;
  #private: CryptoKey | undefined;

  private constructor(
    seed: Uint8Array,
    publicKey: Uint8Array,
    key: CryptoKey | undefined,
  ) {
    this.seed = seed;
    this.publicKey = publicKey;
    this.key = formatKey(publicKey);
    this.#private = key;
  }

  /** Builds a signer from a 32-byte seed (RFC 8032 private key). */
  static async fromSeed(seed: Uint8Array): Promise<Signer> {
    if (!(seed instanceof Uint8Array) || seed.length !== KEY_BYTES) {
      throw new TypeError(`Signer.fromSeed: a seed is ${KEY_BYTES} bytes`);
    }
    const copy = own(seed);
    if (await hasWebCryptoEd25519()) {
      // Extractable only to read the public key back out of the JWK.
      const extractable = await crypto.subtle.importKey(
        "pkcs8",
        pkcs8(copy),
        ED25519,
        true,
        [
          "sign",
        ],
      );
      const jwk = await crypto.subtle.exportKey("jwk", extractable);
      const publicKey = decodeBase64(jwk.x ?? "");
      const key = await crypto.subtle.importKey(
        "pkcs8",
        pkcs8(copy),
        ED25519,
        false,
        ["sign"],
      );
      return new Signer(copy, publicKey, key);
    }
    return new Signer(
      copy,
      await (await fallback()).getPublicKeyAsync(copy),
      undefined,
    );
  }

  /** Builds a signer from a fresh random seed. */
  static generate(): Promise<Signer> {
    return Signer.fromSeed(crypto.getRandomValues(new Uint8Array(KEY_BYTES)));
  }

  /** Signs `data`, returning the 64-byte Ed25519 signature. */
  async sign(data: Uint8Array): Promise<Uint8Array> {
    if (this.#private) {
      return new Uint8Array(
        await crypto.subtle.sign(ED25519, this.#private, own(data)),
      );
    }
    return await (await fallback()).signAsync(data, this.seed);
  }
}

// Importing a raw key costs more than the verify itself; peers verify the same
// few keys over and over (auth, grants, presence), so keep the imports.
const VERIFY_KEY_CACHE_SIZE = 256;
const verifyKeys = new Map<string, Promise<CryptoKey>>();

function importVerifyKey(
  publicKey: Uint8Array,
  id = formatKey(publicKey),
): Promise<CryptoKey> {
  let imported = verifyKeys.get(id);
  if (imported) {
    verifyKeys.delete(id); // re-insert: most recently used last
  } else {
    imported = crypto.subtle.importKey("raw", own(publicKey), ED25519, false, [
      "verify",
    ]);
    imported.catch(() => verifyKeys.delete(id));
    if (verifyKeys.size >= VERIFY_KEY_CACHE_SIZE) {
      verifyKeys.delete(verifyKeys.keys().next().value!);
    }
  }
  verifyKeys.set(id, imported);
  return imported;
}

/**
 * Verifies an Ed25519 signature. Never throws: malformed keys, signatures
 * or data give false.
 *
 * @example
 * ```ts
 * import { verify } from "./keys.ts";
 * console.log(await verify("ed25519:bad", new Uint8Array(), new Uint8Array(64))); // false
 * ```
 */
export async function verify(
  key: string | Uint8Array,
  data: Uint8Array,
  signature: Uint8Array,
): Promise<boolean> {
  try {
    const publicKey = typeof key === "string" ? parseKey(key) : key;
    if (
      !(publicKey instanceof Uint8Array) || publicKey.length !== KEY_BYTES ||
      !(signature instanceof Uint8Array) ||
      signature.length !== SIGNATURE_BYTES ||
      !(data instanceof Uint8Array)
    ) {
      return false;
    }
    if (await hasWebCryptoEd25519()) {
      // A key given as text names its cache entry as it is (no re-encoding).
      const cryptoKey = await importVerifyKey(
        publicKey,
        typeof key === "string" ? key : undefined,
      );
      return await crypto.subtle.verify(
        ED25519,
        cryptoKey,
        own(signature),
        own(data),
      );
    }
    return await (await fallback()).verifyAsync(signature, data, publicKey, {
      zip215: false,
    });
  } catch {
    return false;
  }
}
