/**
 * The seeded randomness of the kill -9 tests: the seed comes from
 * `CRASH_SEED` or the clock and is printed, so a failing run can be replayed
 * with `CRASH_SEED=<seed> deno test -A tests/system/<test>.ts`.
 *
 * @module
 */

import { prng } from "./prng.ts";

/** A seed and the random numbers drawn from it. */
export interface CrashSeed {
  /** The seed, printed at the start. */
  seed: number;
  /** Uniform in [0, 1). */
  random: () => number;
  /** A whole number in [lo, hi). */
  pick: (lo: number, hi: number) => number;
}

/**
 * The seed for test `name` (printed), and a PRNG from it.
 *
 * @example
 * ```ts
 * import { crashSeed } from "./crash_seed.ts";
 * const { pick } = crashSeed("example");
 * console.log(pick(0, 10) < 10); // true
 * ```
 */
export function crashSeed(name: string): CrashSeed {
  const seed = Number(Deno.env.get("CRASH_SEED") ?? Date.now() % 2 ** 31);
  console.log(`${name} seed ${seed} (rerun: CRASH_SEED=${seed})`);
  const random = prng(seed);
  const pick = (lo: number, hi: number) =>
    Math.floor(lo + random() * (hi - lo));
  return { seed, random, pick };
}
