/**
 * The steps the kill -9 resume tests share, over {@link PeerProcess}es: a
 * dialer and a listener exchange a msg each way; while the listener is down
 * the dialer queues two more on two threads and fails a redial; after the
 * listener restarts on the same home, resume delivers exactly those two, and
 * the msg committed before the kill is not delivered again.
 *
 * @module
 */

import assert from "node:assert/strict";
import type { PeerProcess } from "./peer_process.ts";

/** The two processes and their keys. */
export interface ResumePair {
  /** The peer that dials and keeps a queue while the listener is down. */
  dialer: PeerProcess;
  /** The listener's key. */
  listenerKey: string;
  /** The dialer's key. */
  dialerKey: string;
}

/**
 * The dialer reaches the listener at `address` and sends "one" on thread
 * t1; the listener gets it and replies; the dialer gets the reply.
 */
export async function exchangeBothWays(
  { dialer, listenerKey, dialerKey }: ResumePair,
  listener: PeerProcess,
  address: string,
): Promise<void> {
  await dialer.command({ reach: { peer: listenerKey, address } });
  await dialer.command({ send: { peer: listenerKey, th: "t1", text: "one" } });
  await listener.waitFor(
    (l) => l.event === "delivered" && l.text === "one" && l.peer === dialerKey,
    "listener got one",
  );
  await listener.command({
    send: { peer: dialerKey, th: "t1", text: "reply" },
  });
  await dialer.waitFor(
    (l) => l.event === "delivered" && l.text === "reply",
    "dialer got reply",
  );
}

/**
 * With the listener down, the dialer queues "two" (t1) and "three" (t2) and
 * fails at least one redial after line `mark`.
 */
export async function queueWhileDown(
  { dialer, listenerKey }: ResumePair,
  mark: number,
): Promise<void> {
  await dialer.command({ send: { peer: listenerKey, th: "t1", text: "two" } });
  await dialer.command({
    send: { peer: listenerKey, th: "t2", text: "three" },
  });
  await dialer.waitFor(
    (l) => l.event === "dial_failed" && l.peer === listenerKey,
    "a failed redial while it is down",
    20_000,
    mark,
  );
}

/**
 * The restarted listener gets "two" on t1 and "three" on t2 by resume, not
 * "one" again (it was committed before the kill), and the dialer reconnects
 * after line `mark`.
 */
export async function assertQueueDeliveredOnce(
  { dialer, listenerKey }: ResumePair,
  restarted: PeerProcess,
  mark: number,
): Promise<void> {
  const two = await restarted.waitFor(
    (l) => l.event === "delivered" && l.text === "two",
    "queued two delivered on resume",
  );
  const three = await restarted.waitFor(
    (l) => l.event === "delivered" && l.text === "three",
    "queued three delivered on resume",
  );
  assert.equal(two.th, "t1");
  assert.equal(three.th, "t2");
  assert.equal(
    restarted.lines.filter((l) => l.event === "delivered" && l.text === "one")
      .length,
    0,
    "one was committed before the kill: not delivered again",
  );
  await dialer.waitFor(
    (l) => l.event === "connected" && l.peer === listenerKey,
    "dialer reconnected",
    20_000,
    mark,
  );
}
