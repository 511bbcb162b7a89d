/**
 * Polls until a probe yields a value, for conditions that other processes
 * bring about (a daemon's state, a file): no fixed sleeps in tests.
 *
 * @module
 */

/**
 * Calls `probe` every 200 ms until it resolves with something other than
 * `undefined`, and resolves with that; rejects naming `what` after `ms`.
 *
 * @example
 * ```ts
 * import { until } from "./until.ts";
 * let n = 0;
 * console.log(await until("n to reach 2", () => Promise.resolve(++n >= 2 ? n : undefined))); // 2
 * ```
 */
export async function until<T>(
  what: string,
  probe: () => Promise<T | undefined>,
  ms = 30_000,
): Promise<T> {
  const deadline = Date.now() + ms;
  while (true) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}
