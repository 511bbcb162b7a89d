/**
 * SHA-256 and random hex without `node:crypto`: that module pulls in Deno's
 * Node compatibility layer (~3 MiB of RSS in a peer receiving a blob), so
 * streaming hashes run our own SHA-256 in JavaScript, written for V8's
 * optimizing compiler (bench/README.md, section "shawasm", says why not wasm
 * nor a package); short one-shot strings are hashed by `@noble/hashes`.
 *
 * @module
 */

import { sha256 } from "npm:@noble/hashes@^2.0.0/sha2.js";
import { bytesToHex } from "npm:@noble/hashes@^2.0.0/utils.js";

/** An incremental SHA-256, as `node:crypto`'s `Hash` offers it. */
export interface Sha256 {
  /** Adds bytes to the hash. */
  update(bytes: Uint8Array): Sha256;
  /** The hash of everything added, as lowercase hex. */
  digest(encoding: "hex"): string;
}

/** The state of a fresh hash (FIPS 180-4, 5.3.3). */
const INITIAL_STATE: readonly number[] = [
  0x6a09e667,
  0xbb67ae85,
  0x3c6ef372,
  0xa54ff53a,
  0x510e527f,
  0x9b05688c,
  0x1f83d9ab,
  0x5be0cd19,
];

/** K0..K63 (FIPS 180-4, 4.2.2). */
const ROUND_CONSTANTS = new Int32Array([
  0x428a2f98,
  0x71374491,
  0xb5c0fbcf,
  0xe9b5dba5,
  0x3956c25b,
  0x59f111f1,
  0x923f82a4,
  0xab1c5ed5,
  0xd807aa98,
  0x12835b01,
  0x243185be,
  0x550c7dc3,
  0x72be5d74,
  0x80deb1fe,
  0x9bdc06a7,
  0xc19bf174,
  0xe49b69c1,
  0xefbe4786,
  0x0fc19dc6,
  0x240ca1cc,
  0x2de92c6f,
  0x4a7484aa,
  0x5cb0a9dc,
  0x76f988da,
  0x983e5152,
  0xa831c66d,
  0xb00327c8,
  0xbf597fc7,
  0xc6e00bf3,
  0xd5a79147,
  0x06ca6351,
  0x14292967,
  0x27b70a85,
  0x2e1b2138,
  0x4d2c6dfc,
  0x53380d13,
  0x650a7354,
  0x766a0abb,
  0x81c2c92e,
  0x92722c85,
  0xa2bfe8a1,
  0xa81a664b,
  0xc24b8b70,
  0xc76c51a3,
  0xd192e819,
  0xd6990624,
  0xf40e3585,
  0x106aa070,
  0x19a4c116,
  0x1e376c08,
  0x2748774c,
  0x34b0bcb5,
  0x391c0cb3,
  0x4ed8aa4a,
  0x5b9cca4f,
  0x682e6ff3,
  0x748f82ee,
  0x78a5636f,
  0x84c87814,
  0x8cc70208,
  0x90befffa,
  0xa4506ceb,
  0xbef9a3f7,
  0xc67178f2,
]);

const BLOCK = 64;

/**
 * Hashes `blocks` 64-byte blocks of `input` from `offset` into `state` (the
 * compression function, FIPS 180-4, 6.2.2). Written for V8's optimizing
 * compiler: only int32 arithmetic, the message schedule's 16 words in locals
 * (updated in place every 16 rounds), and the rounds written out 16 at a time
 * so that the eight working variables take turns by name instead of being
 * shifted each round (16 rounds bring them back to their first names). All 64
 * written out, with the constants inline, measured no faster.
 */
function compress(
  state: Int32Array,
  input: DataView,
  offset: number,
  blocks: number,
): void {
  let a = state[0], b = state[1], c = state[2], d = state[3];
  let e = state[4], f = state[5], g = state[6], h = state[7];
  let t = 0;
  for (; blocks > 0; blocks--, offset += 64) {
    // The block's 16 big-endian words: the message schedule's first 16.
    let w0 = input.getInt32(offset + 0);
    let w1 = input.getInt32(offset + 4);
    let w2 = input.getInt32(offset + 8);
    let w3 = input.getInt32(offset + 12);
    let w4 = input.getInt32(offset + 16);
    let w5 = input.getInt32(offset + 20);
    let w6 = input.getInt32(offset + 24);
    let w7 = input.getInt32(offset + 28);
    let w8 = input.getInt32(offset + 32);
    let w9 = input.getInt32(offset + 36);
    let w10 = input.getInt32(offset + 40);
    let w11 = input.getInt32(offset + 44);
    let w12 = input.getInt32(offset + 48);
    let w13 = input.getInt32(offset + 52);
    let w14 = input.getInt32(offset + 56);
    let w15 = input.getInt32(offset + 60);
    for (let k = 0;; k += 16) {
      // round k+0: a..h are a b c d e f g h
      t = (h +
        (((e >>> 6) | (e << 26)) ^ ((e >>> 11) | (e << 21)) ^
          ((e >>> 25) | (e << 7))) +
        (g ^ (e & (f ^ g))) + ROUND_CONSTANTS[k + 0] + w0) | 0;
      d = (d + t) | 0;
      h = (t +
        (((a >>> 2) | (a << 30)) ^ ((a >>> 13) | (a << 19)) ^
          ((a >>> 22) | (a << 10))) +
        ((a & b) | (c & (a | b)))) | 0;
      // round k+1: a..h are h a b c d e f g
      t = (g +
        (((d >>> 6) | (d << 26)) ^ ((d >>> 11) | (d << 21)) ^
          ((d >>> 25) | (d << 7))) +
        (f ^ (d & (e ^ f))) + ROUND_CONSTANTS[k + 1] + w1) | 0;
      c = (c + t) | 0;
      g = (t +
        (((h >>> 2) | (h << 30)) ^ ((h >>> 13) | (h << 19)) ^
          ((h >>> 22) | (h << 10))) +
        ((h & a) | (b & (h | a)))) | 0;
      // round k+2: a..h are g h a b c d e f
      t = (f +
        (((c >>> 6) | (c << 26)) ^ ((c >>> 11) | (c << 21)) ^
          ((c >>> 25) | (c << 7))) +
        (e ^ (c & (d ^ e))) + ROUND_CONSTANTS[k + 2] + w2) | 0;
      b = (b + t) | 0;
      f = (t +
        (((g >>> 2) | (g << 30)) ^ ((g >>> 13) | (g << 19)) ^
          ((g >>> 22) | (g << 10))) +
        ((g & h) | (a & (g | h)))) | 0;
      // round k+3: a..h are f g h a b c d e
      t = (e +
        (((b >>> 6) | (b << 26)) ^ ((b >>> 11) | (b << 21)) ^
          ((b >>> 25) | (b << 7))) +
        (d ^ (b & (c ^ d))) + ROUND_CONSTANTS[k + 3] + w3) | 0;
      a = (a + t) | 0;
      e = (t +
        (((f >>> 2) | (f << 30)) ^ ((f >>> 13) | (f << 19)) ^
          ((f >>> 22) | (f << 10))) +
        ((f & g) | (h & (f | g)))) | 0;
      // round k+4: a..h are e f g h a b c d
      t = (d +
        (((a >>> 6) | (a << 26)) ^ ((a >>> 11) | (a << 21)) ^
          ((a >>> 25) | (a << 7))) +
        (c ^ (a & (b ^ c))) + ROUND_CONSTANTS[k + 4] + w4) | 0;
      h = (h + t) | 0;
      d = (t +
        (((e >>> 2) | (e << 30)) ^ ((e >>> 13) | (e << 19)) ^
          ((e >>> 22) | (e << 10))) +
        ((e & f) | (g & (e | f)))) | 0;
      // round k+5: a..h are d e f g h a b c
      t = (c +
        (((h >>> 6) | (h << 26)) ^ ((h >>> 11) | (h << 21)) ^
          ((h >>> 25) | (h << 7))) +
        (b ^ (h & (a ^ b))) + ROUND_CONSTANTS[k + 5] + w5) | 0;
      g = (g + t) | 0;
      c = (t +
        (((d >>> 2) | (d << 30)) ^ ((d >>> 13) | (d << 19)) ^
          ((d >>> 22) | (d << 10))) +
        ((d & e) | (f & (d | e)))) | 0;
      // round k+6: a..h are c d e f g h a b
      t = (b +
        (((g >>> 6) | (g << 26)) ^ ((g >>> 11) | (g << 21)) ^
          ((g >>> 25) | (g << 7))) +
        (a ^ (g & (h ^ a))) + ROUND_CONSTANTS[k + 6] + w6) | 0;
      f = (f + t) | 0;
      b = (t +
        (((c >>> 2) | (c << 30)) ^ ((c >>> 13) | (c << 19)) ^
          ((c >>> 22) | (c << 10))) +
        ((c & d) | (e & (c | d)))) | 0;
      // round k+7: a..h are b c d e f g h a
      t = (a +
        (((f >>> 6) | (f << 26)) ^ ((f >>> 11) | (f << 21)) ^
          ((f >>> 25) | (f << 7))) +
        (h ^ (f & (g ^ h))) + ROUND_CONSTANTS[k + 7] + w7) | 0;
      e = (e + t) | 0;
      a = (t +
        (((b >>> 2) | (b << 30)) ^ ((b >>> 13) | (b << 19)) ^
          ((b >>> 22) | (b << 10))) +
        ((b & c) | (d & (b | c)))) | 0;
      // round k+8: a..h are a b c d e f g h
      t = (h +
        (((e >>> 6) | (e << 26)) ^ ((e >>> 11) | (e << 21)) ^
          ((e >>> 25) | (e << 7))) +
        (g ^ (e & (f ^ g))) + ROUND_CONSTANTS[k + 8] + w8) | 0;
      d = (d + t) | 0;
      h = (t +
        (((a >>> 2) | (a << 30)) ^ ((a >>> 13) | (a << 19)) ^
          ((a >>> 22) | (a << 10))) +
        ((a & b) | (c & (a | b)))) | 0;
      // round k+9: a..h are h a b c d e f g
      t = (g +
        (((d >>> 6) | (d << 26)) ^ ((d >>> 11) | (d << 21)) ^
          ((d >>> 25) | (d << 7))) +
        (f ^ (d & (e ^ f))) + ROUND_CONSTANTS[k + 9] + w9) | 0;
      c = (c + t) | 0;
      g = (t +
        (((h >>> 2) | (h << 30)) ^ ((h >>> 13) | (h << 19)) ^
          ((h >>> 22) | (h << 10))) +
        ((h & a) | (b & (h | a)))) | 0;
      // round k+10: a..h are g h a b c d e f
      t = (f +
        (((c >>> 6) | (c << 26)) ^ ((c >>> 11) | (c << 21)) ^
          ((c >>> 25) | (c << 7))) +
        (e ^ (c & (d ^ e))) + ROUND_CONSTANTS[k + 10] + w10) | 0;
      b = (b + t) | 0;
      f = (t +
        (((g >>> 2) | (g << 30)) ^ ((g >>> 13) | (g << 19)) ^
          ((g >>> 22) | (g << 10))) +
        ((g & h) | (a & (g | h)))) | 0;
      // round k+11: a..h are f g h a b c d e
      t = (e +
        (((b >>> 6) | (b << 26)) ^ ((b >>> 11) | (b << 21)) ^
          ((b >>> 25) | (b << 7))) +
        (d ^ (b & (c ^ d))) + ROUND_CONSTANTS[k + 11] + w11) | 0;
      a = (a + t) | 0;
      e = (t +
        (((f >>> 2) | (f << 30)) ^ ((f >>> 13) | (f << 19)) ^
          ((f >>> 22) | (f << 10))) +
        ((f & g) | (h & (f | g)))) | 0;
      // round k+12: a..h are e f g h a b c d
      t = (d +
        (((a >>> 6) | (a << 26)) ^ ((a >>> 11) | (a << 21)) ^
          ((a >>> 25) | (a << 7))) +
        (c ^ (a & (b ^ c))) + ROUND_CONSTANTS[k + 12] + w12) | 0;
      h = (h + t) | 0;
      d = (t +
        (((e >>> 2) | (e << 30)) ^ ((e >>> 13) | (e << 19)) ^
          ((e >>> 22) | (e << 10))) +
        ((e & f) | (g & (e | f)))) | 0;
      // round k+13: a..h are d e f g h a b c
      t = (c +
        (((h >>> 6) | (h << 26)) ^ ((h >>> 11) | (h << 21)) ^
          ((h >>> 25) | (h << 7))) +
        (b ^ (h & (a ^ b))) + ROUND_CONSTANTS[k + 13] + w13) | 0;
      g = (g + t) | 0;
      c = (t +
        (((d >>> 2) | (d << 30)) ^ ((d >>> 13) | (d << 19)) ^
          ((d >>> 22) | (d << 10))) +
        ((d & e) | (f & (d | e)))) | 0;
      // round k+14: a..h are c d e f g h a b
      t = (b +
        (((g >>> 6) | (g << 26)) ^ ((g >>> 11) | (g << 21)) ^
          ((g >>> 25) | (g << 7))) +
        (a ^ (g & (h ^ a))) + ROUND_CONSTANTS[k + 14] + w14) | 0;
      f = (f + t) | 0;
      b = (t +
        (((c >>> 2) | (c << 30)) ^ ((c >>> 13) | (c << 19)) ^
          ((c >>> 22) | (c << 10))) +
        ((c & d) | (e & (c | d)))) | 0;
      // round k+15: a..h are b c d e f g h a
      t = (a +
        (((f >>> 6) | (f << 26)) ^ ((f >>> 11) | (f << 21)) ^
          ((f >>> 25) | (f << 7))) +
        (h ^ (f & (g ^ h))) + ROUND_CONSTANTS[k + 15] + w15) | 0;
      e = (e + t) | 0;
      a = (t +
        (((b >>> 2) | (b << 30)) ^ ((b >>> 13) | (b << 19)) ^
          ((b >>> 22) | (b << 10))) +
        ((b & c) | (d & (b | c)))) | 0;
      if (k === 48) break;
      // The schedule's next 16 words, in place (w[i] for i = k+16 .. k+31).
      w0 = (w0 + w9 +
        (((w14 >>> 17) | (w14 << 15)) ^ ((w14 >>> 19) | (w14 << 13)) ^
          (w14 >>> 10)) +
        (((w1 >>> 7) | (w1 << 25)) ^ ((w1 >>> 18) | (w1 << 14)) ^
          (w1 >>> 3))) | 0;
      w1 = (w1 + w10 +
        (((w15 >>> 17) | (w15 << 15)) ^ ((w15 >>> 19) | (w15 << 13)) ^
          (w15 >>> 10)) +
        (((w2 >>> 7) | (w2 << 25)) ^ ((w2 >>> 18) | (w2 << 14)) ^
          (w2 >>> 3))) | 0;
      w2 = (w2 + w11 +
        (((w0 >>> 17) | (w0 << 15)) ^ ((w0 >>> 19) | (w0 << 13)) ^
          (w0 >>> 10)) +
        (((w3 >>> 7) | (w3 << 25)) ^ ((w3 >>> 18) | (w3 << 14)) ^
          (w3 >>> 3))) | 0;
      w3 = (w3 + w12 +
        (((w1 >>> 17) | (w1 << 15)) ^ ((w1 >>> 19) | (w1 << 13)) ^
          (w1 >>> 10)) +
        (((w4 >>> 7) | (w4 << 25)) ^ ((w4 >>> 18) | (w4 << 14)) ^
          (w4 >>> 3))) | 0;
      w4 = (w4 + w13 +
        (((w2 >>> 17) | (w2 << 15)) ^ ((w2 >>> 19) | (w2 << 13)) ^
          (w2 >>> 10)) +
        (((w5 >>> 7) | (w5 << 25)) ^ ((w5 >>> 18) | (w5 << 14)) ^
          (w5 >>> 3))) | 0;
      w5 = (w5 + w14 +
        (((w3 >>> 17) | (w3 << 15)) ^ ((w3 >>> 19) | (w3 << 13)) ^
          (w3 >>> 10)) +
        (((w6 >>> 7) | (w6 << 25)) ^ ((w6 >>> 18) | (w6 << 14)) ^
          (w6 >>> 3))) | 0;
      w6 = (w6 + w15 +
        (((w4 >>> 17) | (w4 << 15)) ^ ((w4 >>> 19) | (w4 << 13)) ^
          (w4 >>> 10)) +
        (((w7 >>> 7) | (w7 << 25)) ^ ((w7 >>> 18) | (w7 << 14)) ^
          (w7 >>> 3))) | 0;
      w7 = (w7 + w0 +
        (((w5 >>> 17) | (w5 << 15)) ^ ((w5 >>> 19) | (w5 << 13)) ^
          (w5 >>> 10)) +
        (((w8 >>> 7) | (w8 << 25)) ^ ((w8 >>> 18) | (w8 << 14)) ^
          (w8 >>> 3))) | 0;
      w8 = (w8 + w1 +
        (((w6 >>> 17) | (w6 << 15)) ^ ((w6 >>> 19) | (w6 << 13)) ^
          (w6 >>> 10)) +
        (((w9 >>> 7) | (w9 << 25)) ^ ((w9 >>> 18) | (w9 << 14)) ^
          (w9 >>> 3))) | 0;
      w9 = (w9 + w2 +
        (((w7 >>> 17) | (w7 << 15)) ^ ((w7 >>> 19) | (w7 << 13)) ^
          (w7 >>> 10)) +
        (((w10 >>> 7) | (w10 << 25)) ^ ((w10 >>> 18) | (w10 << 14)) ^
          (w10 >>> 3))) | 0;
      w10 = (w10 + w3 +
        (((w8 >>> 17) | (w8 << 15)) ^ ((w8 >>> 19) | (w8 << 13)) ^
          (w8 >>> 10)) +
        (((w11 >>> 7) | (w11 << 25)) ^ ((w11 >>> 18) | (w11 << 14)) ^
          (w11 >>> 3))) | 0;
      w11 = (w11 + w4 +
        (((w9 >>> 17) | (w9 << 15)) ^ ((w9 >>> 19) | (w9 << 13)) ^
          (w9 >>> 10)) +
        (((w12 >>> 7) | (w12 << 25)) ^ ((w12 >>> 18) | (w12 << 14)) ^
          (w12 >>> 3))) | 0;
      w12 = (w12 + w5 +
        (((w10 >>> 17) | (w10 << 15)) ^ ((w10 >>> 19) | (w10 << 13)) ^
          (w10 >>> 10)) +
        (((w13 >>> 7) | (w13 << 25)) ^ ((w13 >>> 18) | (w13 << 14)) ^
          (w13 >>> 3))) | 0;
      w13 = (w13 + w6 +
        (((w11 >>> 17) | (w11 << 15)) ^ ((w11 >>> 19) | (w11 << 13)) ^
          (w11 >>> 10)) +
        (((w14 >>> 7) | (w14 << 25)) ^ ((w14 >>> 18) | (w14 << 14)) ^
          (w14 >>> 3))) | 0;
      w14 = (w14 + w7 +
        (((w12 >>> 17) | (w12 << 15)) ^ ((w12 >>> 19) | (w12 << 13)) ^
          (w12 >>> 10)) +
        (((w15 >>> 7) | (w15 << 25)) ^ ((w15 >>> 18) | (w15 << 14)) ^
          (w15 >>> 3))) | 0;
      w15 = (w15 + w8 +
        (((w13 >>> 17) | (w13 << 15)) ^ ((w13 >>> 19) | (w13 << 13)) ^
          (w13 >>> 10)) +
        (((w0 >>> 7) | (w0 << 25)) ^ ((w0 >>> 18) | (w0 << 14)) ^
          (w0 >>> 3))) | 0;
    }
    a = state[0] = (state[0] + a) | 0;
    b = state[1] = (state[1] + b) | 0;
    c = state[2] = (state[2] + c) | 0;
    d = state[3] = (state[3] + d) | 0;
    e = state[4] = (state[4] + e) | 0;
    f = state[5] = (state[5] + f) | 0;
    g = state[6] = (state[6] + g) | 0;
    h = state[7] = (state[7] + h) | 0;
  }
}

/** A streaming SHA-256 over {@linkcode compress}. */
class StreamingSha256 implements Sha256 {
  readonly #state = Int32Array.from(INITIAL_STATE);
  /** Bytes after the last whole block (and room to pad two blocks). */
  readonly #tail = new Uint8Array(2 * BLOCK);
  readonly #tailView = new DataView(this.#tail.buffer);
  #tailLength = 0;
  #byteLength = 0;
  #digested = false;

  update(bytes: Uint8Array): Sha256 {
    if (this.#digested) throw new Error("sha256: update after digest");
    this.#byteLength += bytes.length;
    let offset = 0;
    if (this.#tailLength > 0) {
      offset = Math.min(BLOCK - this.#tailLength, bytes.length);
      this.#tail.set(bytes.subarray(0, offset), this.#tailLength);
      this.#tailLength += offset;
      if (this.#tailLength < BLOCK) return this;
      compress(this.#state, this.#tailView, 0, 1);
      this.#tailLength = 0;
    }
    const blocks = Math.floor((bytes.length - offset) / BLOCK);
    if (blocks > 0) {
      const input = new DataView(
        bytes.buffer,
        bytes.byteOffset + offset,
        blocks * BLOCK,
      );
      compress(this.#state, input, 0, blocks);
      offset += blocks * BLOCK;
    }
    this.#tail.set(bytes.subarray(offset));
    this.#tailLength = bytes.length - offset;
    return this;
  }

  digest(_encoding: "hex"): string {
    if (this.#digested) throw new Error("sha256: digest called twice");
    this.#digested = true;
    // Padding (FIPS 180-4, 5.1.1): 0x80, zeros, the length in bits as a
    // 64-bit big-endian number ending the last block.
    const length = this.#tailLength;
    const end = length + 9 <= BLOCK ? BLOCK : 2 * BLOCK;
    this.#tail.fill(0, length, end);
    this.#tail[length] = 0x80;
    const bits = this.#byteLength * 8;
    this.#tailView.setUint32(end - 8, Math.floor(bits / 2 ** 32));
    this.#tailView.setUint32(end - 4, bits >>> 0);
    compress(this.#state, this.#tailView, 0, end / BLOCK);
    let hex = "";
    for (const word of this.#state) {
      hex += (word >>> 0).toString(16).padStart(8, "0");
    }
    return hex;
  }
}

/**
 * A fresh incremental SHA-256.
 *
 * @example
 * ```ts
 * import { createSha256 } from "./sha256.ts";
 * const hash = await createSha256();
 * hash.update(new TextEncoder().encode("abc"));
 * console.log(hash.digest("hex").slice(0, 8)); // ba7816bf
 * ```
 */
export function createSha256(): Promise<Sha256> {
  return Promise.resolve(new StreamingSha256());
}

/**
 * The SHA-256 of a short string's UTF-8 bytes, as lowercase hex.
 *
 * @example
 * ```ts
 * import { sha256Hex } from "./sha256.ts";
 * console.log(sha256Hex("abc").slice(0, 8)); // ba7816bf
 * ```
 */
export function sha256Hex(text: string): string {
  return bytesToHex(sha256(new TextEncoder().encode(text)));
}

/**
 * `byteCount` random bytes as lowercase hex (from `crypto.getRandomValues`).
 *
 * @example
 * ```ts
 * import { randomHex } from "./sha256.ts";
 * console.log(randomHex(8).length); // 16
 * ```
 */
export function randomHex(byteCount: number): string {
  return bytesToHex(crypto.getRandomValues(new Uint8Array(byteCount)));
}
