/**
 * Two real peers for a test, "alice" and "bob", each with its own home under
 * a temporary root: bob listens, alice dials what bob reports, and both have
 * an {@link EventLog}. Timeouts and dial backoff are short so a test does not
 * wait on defaults meant for real networks.
 *
 * @module
 */

import { Peer, type PeerOptions } from "../../peer/peer.ts";
import { EventLog } from "./event_log.ts";

/** Short timeouts and dial backoff for tests; no pings unless asked. */
export const FAST_PEER: Partial<PeerOptions> = {
  timeouts: { pingInterval: 0, bye: 1000 },
  dialer: { timing: { baseMs: 50, capMs: 200, graceMs: 100 } },
};

/** How to open a {@link PeerPair}. */
export interface PeerPairOptions {
  /** Where bob listens. Default "tcp:127.0.0.1:0". */
  listenAt?: string;
  /** How long the event logs' `until` waits by default. Default 10 s. */
  waitMs?: number;
  /** Options for alice, over {@link FAST_PEER}. */
  alice?: Partial<PeerOptions>;
  /** Options for bob, over {@link FAST_PEER}. */
  bob?: Partial<PeerOptions>;
}

/** Two connected peers and their event logs. */
export interface PeerPair {
  /** The dialing peer, named "alice", home `${root}/a`. */
  a: Peer;
  /** The listening peer, named "bob", home `${root}/b`. */
  b: Peer;
  /** alice's events. */
  ea: EventLog;
  /** bob's events. */
  eb: EventLog;
  /** The address bob listens on, as bob reports it. */
  addr: string;
}

/**
 * Opens alice and bob under `root` and connects alice to bob.
 *
 * @example
 * ```ts ignore
 * const { a, b, ea, eb } = await openPeerPair(await Deno.makeTempDir());
 * await a.send("bob", "hi");
 * await eb.until(() => eb.of("message").length === 1, "the msg");
 * await a.close();
 * await b.close();
 * ```
 */
export async function openPeerPair(
  root: string,
  options: PeerPairOptions = {},
): Promise<PeerPair> {
  const a = await Peer.open({
    home: `${root}/a`,
    name: "alice",
    ...FAST_PEER,
    ...options.alice,
  });
  const b = await Peer.open({
    home: `${root}/b`,
    name: "bob",
    ...FAST_PEER,
    ...options.bob,
  });
  const ea = new EventLog(a, options.waitMs);
  const eb = new EventLog(b, options.waitMs);
  const addr = await b.listen(options.listenAt ?? "tcp:127.0.0.1:0");
  await a.connect(addr);
  return { a, b, ea, eb, addr };
}
