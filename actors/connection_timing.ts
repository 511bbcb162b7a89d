/**
 * When a connection's deadlines fire: the timeouts its chart runs with (who
 * pings on a quiet connection) and the clock they run on.
 *
 * The dialer pings after `pingInterval` idle; the accepting side waits
 * {@link ACCEPTED_PING_FACTOR} times as long, so the dialer's ping (and its
 * pong) resets its wait and one ping crosses per interval, not one from
 * each side at the same moment. An accepting side whose dialer never pings
 * still pings. The deadlines of every connection sit on one timer wheel
 * ({@link connectionClock}), not a timer each.
 *
 * @module
 */

import {
  type ConnectionTimeouts,
  DEFAULT_TIMEOUTS,
} from "./connection_machine.ts";

export { connectionClock } from "../net/timer_wheel.ts";

/** How much longer than `pingInterval` the accepting side waits. */
export const ACCEPTED_PING_FACTOR = 1.2;

/**
 * The timeouts a connection's chart runs with: as given when we dialed, with
 * the longer idle wait when we accepted.
 *
 * @example
 * ```ts
 * import { pingTimeouts } from "./connection_timing.ts";
 * const timeouts = { pingInterval: 30_000 };
 * console.log(pingTimeouts({ timeouts, dialed: false })?.pingInterval); // 36000
 * console.log(pingTimeouts({ timeouts, dialed: true })?.pingInterval); // 30000
 * ```
 */
export function pingTimeouts(
  options: { timeouts?: Partial<ConnectionTimeouts>; dialed: boolean },
): Partial<ConnectionTimeouts> | undefined {
  const { timeouts, dialed } = options;
  if (dialed) return timeouts;
  const ping = timeouts?.pingInterval ?? DEFAULT_TIMEOUTS.pingInterval;
  return { ...timeouts, pingInterval: Math.round(ping * ACCEPTED_PING_FACTOR) };
}
