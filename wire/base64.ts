/**
 * Base64 as AWP uses it (NOTES.md item 10): unpadded base64url for keys,
 * nonces and signatures, padded standard base64 for chunk data, and any of
 * those variants accepted on receipt.
 *
 * @module
 */

const STD = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const URL = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

// 0-63: value; -1: invalid. '+' '/' and '-' '_' both decode, tracked apart.
const DECODE = new Int8Array(128).fill(-1);
for (let i = 0; i < 64; i++) {
  DECODE[STD.charCodeAt(i)] = i;
  DECODE[URL.charCodeAt(i)] = i;
}

/**
 * Thrown by {@linkcode decodeBase64} on text that is not base64.
 *
 * @example
 * ```ts
 * import { Base64Error, decodeBase64 } from "./base64.ts";
 * try { decodeBase64("not base64!"); } catch (e) { console.log(e instanceof Base64Error); }
 * ```
 */
export class Base64Error extends Error {
  /** Builds the error with a one-line reason. */
  constructor(message: string) {
    super(message);
    this.name = "Base64Error";
  }
}

/** The built-in codec (TC39 Uint8Array base64, in Deno 2.x): ~100x faster. */
interface NativeBase64 {
  toBase64?(options: { alphabet: string; omitPadding: boolean }): string;
}
interface NativeBase64Ctor {
  fromBase64?(
    text: string,
    options: { alphabet: string; lastChunkHandling: string },
  ): Uint8Array;
}
const nativeEncode = (Uint8Array.prototype as NativeBase64).toBase64;
const nativeDecode = (Uint8Array as unknown as NativeBase64Ctor).fromBase64;
const NATIVE_ALPHABETS = ["base64", "base64url"] as const;
/** Url-safe text tried url-first: a failed try throws, and a throw is costly. */
const URL_FIRST = ["base64url", "base64"] as const;
const WHITESPACE = [" ", "\n", "\r", "\t", "\f"];

function encode(bytes: Uint8Array, alphabet: string, pad: boolean): string {
  if (nativeEncode) {
    return nativeEncode.call(bytes, {
      alphabet: alphabet === URL ? "base64url" : "base64",
      omitPadding: !pad,
    });
  }
  return encodeSlow(bytes, alphabet, pad);
}

function encodeSlow(bytes: Uint8Array, alphabet: string, pad: boolean): string {
  const parts: string[] = [];
  let out = "";
  const full = bytes.length - (bytes.length % 3);
  for (let i = 0; i < full; i += 3) {
    const n = (bytes[i] << 16) | (bytes[i + 1] << 8) | bytes[i + 2];
    out += alphabet[n >> 18] + alphabet[(n >> 12) & 63] +
      alphabet[(n >> 6) & 63] +
      alphabet[n & 63];
    // Flush now and then so huge inputs do not build one deep rope string.
    if (out.length >= 8192) {
      parts.push(out);
      out = "";
    }
  }
  const rest = bytes.length - full;
  if (rest === 1) {
    const n = bytes[full] << 16;
    out += alphabet[n >> 18] + alphabet[(n >> 12) & 63] + (pad ? "==" : "");
  } else if (rest === 2) {
    const n = (bytes[full] << 16) | (bytes[full + 1] << 8);
    out += alphabet[n >> 18] + alphabet[(n >> 12) & 63] +
      alphabet[(n >> 6) & 63] +
      (pad ? "=" : "");
  }
  parts.push(out);
  return parts.join("");
}

/**
 * Encodes bytes as unpadded base64url (keys, nonces, signatures).
 *
 * @example
 * ```ts
 * import { encodeBase64Url } from "./base64.ts";
 * console.log(encodeBase64Url(new Uint8Array([251, 255]))); // "-_8"
 * ```
 */
export function encodeBase64Url(bytes: Uint8Array): string {
  return encode(bytes, URL, false);
}

/**
 * Encodes bytes as padded standard base64 (chunk data).
 *
 * @example
 * ```ts
 * import { encodeBase64 } from "./base64.ts";
 * console.log(encodeBase64(new Uint8Array([251, 255]))); // "+/8="
 * ```
 */
export function encodeBase64(bytes: Uint8Array): string {
  return encode(bytes, STD, true);
}

/**
 * Decodes standard or url-safe base64, padded or not. Throws
 * {@linkcode Base64Error} on any other character (whitespace included), on
 * a mix of the two alphabets, on misplaced padding or an impossible length.
 *
 * @example
 * ```ts
 * import { decodeBase64 } from "./base64.ts";
 * console.log(decodeBase64("-_8"), decodeBase64("+/8=")); // same two bytes
 * ```
 */
export function decodeBase64(text: string): Uint8Array {
  if (typeof text !== "string") throw new Base64Error("base64: not a string");
  // The native decoder skips ASCII whitespace, which we refuse; indexOf is
  // far cheaper than a regular expression over a 350 KB chunk.
  if (nativeDecode && !WHITESPACE.some((c) => text.includes(c))) {
    const urlSafe = text.includes("-") || text.includes("_");
    for (const alphabet of urlSafe ? URL_FIRST : NATIVE_ALPHABETS) {
      try {
        return nativeDecode(text, { alphabet, lastChunkHandling: "loose" });
      } catch {
        // Not this alphabet (or malformed): try the other, then the slow
        // path, which says precisely what is wrong.
      }
    }
  }
  return decodeSlow(text);
}

function decodeSlow(text: string): Uint8Array {
  let end = text.length;
  if (end > 0 && text.charCodeAt(end - 1) === 61) end--;
  if (end > 0 && text.charCodeAt(end - 1) === 61) end--;
  if (end < text.length && text.length % 4 !== 0) {
    throw new Base64Error(
      "base64: padding does not complete a 4-character group",
    );
  }
  if (end % 4 === 1) throw new Base64Error(`base64: impossible length ${end}`);
  const out = new Uint8Array(Math.floor((end * 3) / 4));
  let std = false;
  let url = false;
  let acc = 0;
  let bits = 0;
  let o = 0;
  for (let i = 0; i < end; i++) {
    const c = text.charCodeAt(i);
    const v = c < 128 ? DECODE[c] : -1;
    if (v < 0) {
      throw new Base64Error(
        `base64: invalid character ${JSON.stringify(text[i])} at offset ${i}`,
      );
    }
    if (c === 43 || c === 47) std = true;
    else if (c === 45 || c === 95) url = true;
    acc = ((acc << 6) | v) & 0xffffff;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out[o++] = (acc >> bits) & 0xff;
    }
  }
  if (std && url) {
    throw new Base64Error("base64: mixes the standard and url alphabets");
  }
  return out;
}
