/**
 * The newest lines of a traffic log that can only be read forward.
 *
 * @module
 */

import type { LogEntry, LogQuery } from "../storage/store.ts";

/** Something with a forward-only traffic log, like a Peer. */
export interface ForwardLog {
  log(query: LogQuery): Promise<LogEntry[]>;
}

/**
 * The newest `count` entries of `source`'s log, oldest first. The newest
 * seq is found by probing (`limit: 1` reads, doubling then bisecting), then
 * a window before it is read, widened while gaps leave it short.
 *
 * @example
 * ```ts
 * import { tailLog } from "./tail_log.ts";
 * const entries = Array.from({ length: 5000 }, (_, i) => ({
 *   seq: i, peer: "p", dir: "in" as const, t: "ping", line: "{}", at: 0,
 * }));
 * const source = {
 *   log: ({ after = -1, limit = Infinity }) =>
 *     Promise.resolve(entries.filter((e) => e.seq > after).slice(0, limit)),
 * };
 * console.log((await tailLog(source, 3)).map((e) => e.seq)); // [ 4997, 4998, 4999 ]
 * ```
 */
export async function tailLog(
  source: ForwardLog,
  count: number,
): Promise<LogEntry[]> {
  const exists = async (after: number) =>
    (await source.log({ after, limit: 1 })).length > 0;
  if (count <= 0 || !(await exists(-1))) return [];
  let lo = -1; // an entry exists after lo
  let hi = 1024;
  while (await exists(hi)) {
    lo = hi;
    hi *= 2;
  }
  // Something after lo, nothing after hi: hi ends up the newest seq.
  while (hi - lo > 1) {
    const mid = Math.floor((lo + hi) / 2);
    if (await exists(mid)) lo = mid;
    else hi = mid;
  }
  for (let window = count * 2;; window *= 2) {
    const after = Math.max(-1, hi - window);
    const entries = await source.log({ after });
    if (entries.length >= count || after === -1) return entries.slice(-count);
  }
}
