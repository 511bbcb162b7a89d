/**
 * SHA-256 and random hex without a static `node:crypto` import: that module
 * pulls in Deno's Node compatibility layer (~9 MiB of RSS), so an idle peer
 * that never hashes a blob should not load it. Streaming hashes load it on
 * first use (its native hash is far faster than JavaScript for big blobs);
 * short one-shot strings are hashed by `@noble/hashes`.
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

let nodeCrypto: Promise<typeof import("node:crypto")> | undefined;

/**
 * A fresh incremental SHA-256 (loads `node:crypto` the first time).
 *
 * @example
 * ```ts
 * import { createSha256 } from "./sha256.ts";
 * const hash = await createSha256();
 * hash.update(new TextEncoder().encode("abc"));
 * console.log(hash.digest("hex").slice(0, 8)); // ba7816bf
 * ```
 */
export async function createSha256(): Promise<Sha256> {
  nodeCrypto ??= import("node:crypto");
  return (await nodeCrypto).createHash("sha256");
}

/**
 * Starts loading what {@link createSha256} needs (`node:crypto`), without
 * waiting: its first load holds the JS thread for a while, so a caller
 * about to hash starts it before other work of its own that needs no JS
 * (a store read, file system calls), which then runs meanwhile.
 *
 * @example
 * ```ts
 * import { createSha256, warmSha256 } from "./sha256.ts";
 * warmSha256();
 * const hash = await createSha256(); // the same load
 * console.log(typeof hash.update); // function
 * ```
 */
export function warmSha256(): void {
  nodeCrypto ??= import("node:crypto");
  nodeCrypto.catch(() => {}); // a failed load is reported by createSha256
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
