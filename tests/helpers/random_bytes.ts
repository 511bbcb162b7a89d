/**
 * Random test payloads of any size.
 *
 * @module
 */

/**
 * `size` cryptographically random bytes (getRandomValues fills at most
 * 64 KiB at a time, so this fills in slices).
 *
 * @example
 * ```ts
 * import { randomBytes } from "./random_bytes.ts";
 * if (randomBytes(100_000).length !== 100_000) throw new Error("size");
 * ```
 */
export function randomBytes(size: number): Uint8Array {
  const bytes = new Uint8Array(size);
  for (let i = 0; i < size; i += 65536) {
    crypto.getRandomValues(bytes.subarray(i, Math.min(size, i + 65536)));
  }
  return bytes;
}
