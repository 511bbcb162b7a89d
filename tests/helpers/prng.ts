/**
 * A seeded PRNG for tests, so a failing case reproduces from its seed.
 *
 * @module
 */

/**
 * mulberry32: small, seedable, good enough to pick cases and moments.
 * Returns a function yielding floats in [0, 1).
 *
 * @example
 * ```ts
 * import { prng } from "./prng.ts";
 * const rand = prng(42);
 * const a = rand();
 * if (a < 0 || a >= 1 || prng(42)() !== a) throw new Error("not seeded");
 * ```
 */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
