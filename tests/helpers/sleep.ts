/**
 * A promise that resolves after a delay: for the random pauses of the crash
 * tests, not for waiting on a condition (use `until` or `waitFor`).
 *
 * @module
 */

/**
 * Resolves after `ms` milliseconds.
 *
 * @example
 * ```ts
 * import { sleep } from "./sleep.ts";
 * await sleep(1);
 * ```
 */
export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
