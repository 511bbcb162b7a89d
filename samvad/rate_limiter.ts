/**
 * Per-sender request limits from the agent card's `rateLimit` (spec 7-L5):
 * `requestsPerSender` per minute for each verified `agent://` sender and
 * `requestsPerMinute` across all of them, over a sliding minute.
 *
 * @module
 */

/** The card's `rateLimit` (tokensPerSenderPerDay is declared, not metered: AWP peers report no tokens). */
export interface RateLimit {
  /** Requests per minute from all senders together. */
  requestsPerMinute?: number;
  /** Requests per minute from one sender. */
  requestsPerSender?: number;
  /** Tokens per sender per day (declared only). */
  tokensPerSenderPerDay?: number;
}

const MINUTE_MS = 60_000;
const MAX_TRACKED_SENDERS = 10_000;

/**
 * Sliding-minute request counter per sender.
 *
 * @example
 * ```ts
 * import { SenderRateLimiter } from "./rate_limiter.ts";
 * const r = new SenderRateLimiter({ requestsPerSender: 1 });
 * console.log(r.take("agent://a"), r.take("agent://a") > 0); // 0 true
 * ```
 */
export class SenderRateLimiter {
  readonly #limit: RateLimit;
  #bySender = new Map<string, number[]>();
  #all: number[] = [];

  constructor(limit: RateLimit) {
    this.#limit = limit;
  }

  /**
   * Counts one request from `sender`; resolves 0 when allowed, else the
   * seconds to wait (for Retry-After). A refused request is not counted.
   */
  take(sender: string, now: number = Date.now()): number {
    const since = now - MINUTE_MS;
    const mine = (this.#bySender.get(sender) ?? []).filter((t) => t > since);
    this.#all = this.#all.filter((t) => t > since);
    const wait = (times: number[], max: number | undefined) =>
      max !== undefined && times.length >= max
        ? Math.max(1, Math.ceil((times[times.length - max] - since) / 1000))
        : 0;
    const retry = Math.max(
      wait(mine, this.#limit.requestsPerSender),
      wait(this.#all, this.#limit.requestsPerMinute),
    );
    if (retry > 0) {
      this.#bySender.set(sender, mine);
      return retry;
    }
    mine.push(now);
    this.#all.push(now);
    this.#bySender.set(sender, mine);
    if (this.#bySender.size > MAX_TRACKED_SENDERS) this.#forgetIdle(since);
    return 0;
  }

  /** Drops senders with nothing in the last minute (memory stays bounded). */
  #forgetIdle(since: number): void {
    for (const [sender, times] of this.#bySender) {
      if (times.length === 0 || times[times.length - 1] <= since) {
        this.#bySender.delete(sender);
      }
    }
  }
}
