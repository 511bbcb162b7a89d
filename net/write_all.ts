/**
 * Writes a whole buffer to a socket or file, whose `write` may take only
 * part of it.
 *
 * @module
 */

/** Something with a partial `write` (a `Deno.Conn`, `Deno.stdout`). */
export interface ByteSink {
  /** Writes some of `bytes`; resolves with how many were taken. */
  write(bytes: Uint8Array): Promise<number>;
}

/**
 * Writes all of `bytes` to `sink`, calling `write` until every byte is taken.
 *
 * @example
 * ```ts
 * import { writeAll } from "./write_all.ts";
 * const taken: number[] = [];
 * const sink = {
 *   write: (b: Uint8Array) => Promise.resolve(taken.push(Math.min(2, b.length)) && Math.min(2, b.length)),
 * };
 * await writeAll(sink, new Uint8Array(5));
 * console.log(taken); // [2, 2, 1]
 * ```
 */
export async function writeAll(
  sink: ByteSink,
  bytes: Uint8Array,
): Promise<void> {
  let at = 0;
  while (at < bytes.length) at += await sink.write(bytes.subarray(at));
}
