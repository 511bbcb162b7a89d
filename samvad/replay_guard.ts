/**
 * SAMVAD replay protection (spec 7-L2): an envelope whose timestamp is
 * older than the window (5 minutes), or whose nonce was already seen in
 * it, is refused before its signature is checked.
 *
 * @module
 */

/** What {@link ReplayGuard.check} decided. */
export type ReplayVerdict = "fresh" | "expired" | "replay";

/** The replay window of SAMVAD v1.2. */
export const REPLAY_WINDOW_MS = 5 * 60_000;

/**
 * Remembers nonces for the window and refuses old or repeated envelopes.
 *
 * @example
 * ```ts
 * import { ReplayGuard } from "./replay_guard.ts";
 * const g = new ReplayGuard();
 * const now = new Date().toISOString();
 * console.log(g.check("n1", now), g.check("n1", now)); // fresh replay
 * ```
 */
export class ReplayGuard {
  readonly #windowMs: number;
  /** nonce -> when it may be forgotten (ms). */
  #seen = new Map<string, number>();

  constructor(windowMs: number = REPLAY_WINDOW_MS) {
    this.#windowMs = windowMs;
  }

  /**
   * Checks (and on "fresh", records) a nonce and ISO 8601 timestamp. A
   * timestamp further in the future than the window is "expired" too.
   */
  check(
    nonce: string,
    timestamp: string,
    now: number = Date.now(),
  ): ReplayVerdict {
    const at = Date.parse(timestamp);
    if (Number.isNaN(at) || Math.abs(now - at) > this.#windowMs) {
      return "expired";
    }
    this.#forget(now);
    if (this.#seen.has(nonce)) return "replay";
    this.#seen.set(nonce, now + this.#windowMs);
    return "fresh";
  }

  /** Nonces are inserted in time order: drop the expired ones at the front. */
  #forget(now: number): void {
    for (const [nonce, until] of this.#seen) {
      if (until > now) break;
      this.#seen.delete(nonce);
    }
  }
}
