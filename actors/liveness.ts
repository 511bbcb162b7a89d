/**
 * The connection chart's liveness, as the host answers it: a received line
 * takes no chart step (at 10,000 idle connections a step per ping was most
 * of an idle listener's work); the host keeps the time of the last one and
 * of the start of the chart's current wait. When a wait's timer fires, the
 * chart's {@link heardWhileWaiting} guard asks whether a line arrived
 * meanwhile, and {@link pingDue} re-arms the wait for what is left of
 * `pingInterval` since that line.
 *
 * @module
 */

import type { ConnectionContext } from "./connection_machine.ts";

/** What the chart's liveness states ask the connection, in milliseconds. */
export interface LivenessHost {
  /** A liveness state begins a wait (for quiet, or for a pong). */
  startWait(): void;
  /** Since a line was last received (pongs included). */
  quietFor(): number;
  /** Since the current wait began. */
  waitedFor(): number;
}

/**
 * The guard: a line arrived after the wait began (never without a host,
 * as in the chart's own tests).
 *
 * @example
 * ```ts
 * import { heardWhileWaiting } from "./liveness.ts";
 * import { DEFAULT_TIMEOUTS } from "./connection_machine.ts";
 * const context = { timeouts: DEFAULT_TIMEOUTS, missed: 0, reason: "" };
 * console.log(heardWhileWaiting({ context })); // false
 * ```
 */
export function heardWhileWaiting(
  { context: { host } }: { context: ConnectionContext },
): boolean {
  return host !== undefined && host.quietFor() < host.waitedFor();
}

/**
 * The delay: what is left of `pingInterval` since the last received line
 * (all of it without a host).
 *
 * @example
 * ```ts
 * import { pingDue } from "./liveness.ts";
 * import { DEFAULT_TIMEOUTS } from "./connection_machine.ts";
 * const context = { timeouts: DEFAULT_TIMEOUTS, missed: 0, reason: "" };
 * console.log(pingDue({ context })); // 30000
 * ```
 */
export function pingDue(
  { context: { host, timeouts } }: { context: ConnectionContext },
): number {
  return Math.max(0, timeouts.pingInterval - (host?.quietFor() ?? 0));
}
