/**
 * SHA-256 and random hex without `node:crypto`: that module pulls in Deno's
 * Node compatibility layer (~3 MiB of RSS in a peer receiving a blob). Streaming
 * hashes run our own compression function in WebAssembly
 * (`storage/sha256.wat`, compiled into `storage/sha256_wasm.ts`); short
 * one-shot strings are hashed by `@noble/hashes`.
 *
 * @module
 */

import { sha256 } from "npm:@noble/hashes@^2.0.0/sha2.js";
import { bytesToHex } from "npm:@noble/hashes@^2.0.0/utils.js";
import { decodeBase64 } from "../wire/base64.ts";
import { SHA256_WASM_BASE64 } from "./sha256_wasm.ts";

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

const BLOCK = 64;
/** Where `compress` reads and writes the state (see `sha256.wat`). */
const STATE_OFFSET = 0;
/** Where input blocks go, up to the end of the one 64 KiB page. */
const INPUT_OFFSET = 1024;
const INPUT_BYTES = 65536 - INPUT_OFFSET;

/** The one instance of our wasm module: hashes take turns on it. */
interface Compressor {
  /** The whole of the module's memory. */
  memory: Uint8Array;
  /** The state words, little-endian, at {@linkcode STATE_OFFSET}. */
  state: DataView;
  /** Hashes `blocks` blocks at `pointer` into the state. */
  compress(pointer: number, blocks: number): void;
}

let compressor: Compressor | undefined;

/**
 * Compiled and instantiated on first use, once per process. One instance
 * serves every hash: `update` and `digest` are synchronous, so each loads its
 * own state, compresses and stores the state back without interleaving.
 */
function sharedCompressor(): Compressor {
  if (compressor) return compressor;
  const bytes = new Uint8Array(decodeBase64(SHA256_WASM_BASE64));
  const module = new WebAssembly.Module(bytes);
  const exports = new WebAssembly.Instance(module, {}).exports;
  const memory = exports.memory as WebAssembly.Memory;
  compressor = {
    memory: new Uint8Array(memory.buffer),
    state: new DataView(memory.buffer, STATE_OFFSET, 32),
    compress: exports.compress as (pointer: number, blocks: number) => void,
  };
  return compressor;
}

/** A streaming SHA-256 whose blocks are compressed by our wasm module. */
class WasmSha256 implements Sha256 {
  readonly #state = Uint32Array.from(INITIAL_STATE);
  /** Bytes after the last whole block, not compressed yet. */
  readonly #tail = new Uint8Array(BLOCK);
  #tailLength = 0;
  #byteLength = 0;
  #digested = false;

  update(bytes: Uint8Array): Sha256 {
    if (this.#digested) throw new Error("sha256: update after digest");
    this.#byteLength += bytes.length;
    if (this.#tailLength + bytes.length < BLOCK) {
      this.#tail.set(bytes, this.#tailLength);
      this.#tailLength += bytes.length;
      return this;
    }
    const core = sharedCompressor();
    this.#load(core);
    // The tail and the new bytes are staged in the module's memory, as many
    // whole blocks as fit at a time; what is left over becomes the new tail.
    core.memory.set(this.#tail.subarray(0, this.#tailLength), INPUT_OFFSET);
    let staged = this.#tailLength;
    let offset = 0;
    while (offset < bytes.length) {
      const take = Math.min(INPUT_BYTES - staged, bytes.length - offset);
      core.memory.set(
        bytes.subarray(offset, offset + take),
        INPUT_OFFSET + staged,
      );
      offset += take;
      staged += take;
      const blocks = Math.floor(staged / BLOCK);
      core.compress(INPUT_OFFSET, blocks);
      const done = blocks * BLOCK;
      core.memory.copyWithin(
        INPUT_OFFSET,
        INPUT_OFFSET + done,
        INPUT_OFFSET + staged,
      );
      staged -= done;
    }
    this.#tail.set(
      core.memory.subarray(INPUT_OFFSET, INPUT_OFFSET + staged),
    );
    this.#tailLength = staged;
    this.#store(core);
    return this;
  }

  digest(_encoding: "hex"): string {
    if (this.#digested) throw new Error("sha256: digest called twice");
    this.#digested = true;
    const core = sharedCompressor();
    this.#load(core);
    // Padding (FIPS 180-4, 5.1.1): 0x80, zeros, the length in bits as a
    // 64-bit big-endian number ending the last block.
    const length = this.#tailLength;
    const blocks = length + 9 <= BLOCK ? 1 : 2;
    const end = INPUT_OFFSET + blocks * BLOCK;
    core.memory.set(this.#tail.subarray(0, length), INPUT_OFFSET);
    core.memory.fill(0, INPUT_OFFSET + length, end);
    core.memory[INPUT_OFFSET + length] = 0x80;
    const view = new DataView(core.memory.buffer);
    const bits = this.#byteLength * 8;
    view.setUint32(end - 8, Math.floor(bits / 2 ** 32));
    view.setUint32(end - 4, bits >>> 0);
    core.compress(INPUT_OFFSET, blocks);
    let hex = "";
    for (let i = 0; i < 8; i++) {
      hex += core.state.getUint32(i * 4, true).toString(16).padStart(8, "0");
    }
    return hex;
  }

  #load(core: Compressor): void {
    for (let i = 0; i < 8; i++) {
      core.state.setUint32(i * 4, this.#state[i], true);
    }
  }

  #store(core: Compressor): void {
    for (let i = 0; i < 8; i++) {
      this.#state[i] = core.state.getUint32(i * 4, true);
    }
  }
}

/**
 * A fresh incremental SHA-256 (compiles our wasm module the first time a
 * block is hashed).
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
  return Promise.resolve(new WasmSha256());
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
