/**
 * An in-memory peer and its event log, for tests that open several peers
 * and link them by hand: no home on disk, short timeouts and backoff.
 *
 * @module
 */

import { Peer, type PeerOptions } from "../../peer/peer.ts";
import { EventLog } from "./event_log.ts";
import { FAST_PEER } from "./peer_pair.ts";

/** A peer and every event it emitted. */
export interface PeerNode {
  /** The peer. */
  peer: Peer;
  /** Its events, from its opening on. */
  events: EventLog;
}

/**
 * Opens an in-memory peer named `name` with {@link FAST_PEER} and then
 * `options`; its event log waits `waitMs` by default (10 s if not given).
 *
 * @example
 * ```ts ignore
 * const a = await openNode("a");
 * const b = await openNode("b", { name: "bee" });
 * await closeNodes(a, b);
 * ```
 */
export async function openNode(
  name: string,
  options: Partial<PeerOptions> = {},
  waitMs?: number,
): Promise<PeerNode> {
  const peer = await Peer.open({
    memory: true,
    name,
    ...FAST_PEER,
    ...options,
  });
  return { peer, events: new EventLog(peer, waitMs) };
}

/** Closes every node's peer, then waits for their event logs to end. */
export async function closeNodes(...nodes: PeerNode[]): Promise<void> {
  await Promise.all(nodes.map((n) => n.peer.close()));
  await Promise.all(nodes.map((n) => n.events.done));
}
