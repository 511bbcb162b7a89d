/**
 * Live sends never overtake the resume replay, also before the replay has
 * started (issue 16, crash_burst_test): the replay waits in the output
 * chain behind our own `resume` (which reads `store.seen`) while the
 * connection is already open, so entries sent then must queue behind it.
 * A line that overtook it moved the remote's `seen` past older lines of its
 * thread not written yet: delivered out of order, and after a reconnect
 * dropped from the outbox as "covered", acked but never delivered.
 *
 * Real sockets, two real Connections; the window is held open by a store
 * whose `seen` waits for the test (under load a busy KV store does the
 * same).
 */

import assert from "node:assert/strict";
import type { Connection, ReceivedLine } from "../../actors/connection.ts";
import { MemoryStore } from "../../storage/memory_store.ts";
import type { OutboxEntry, Store } from "../../storage/store.ts";
import { Signer } from "../../wire/keys.ts";
import {
  type ConnectionPair,
  connectionPair,
} from "../helpers/connection_pair.ts";
import { until } from "../helpers/until.ts";

/** A MemoryStore whose `seen` (read for our resume) waits for `open()`. */
class SlowSeenStore extends MemoryStore {
  #gate: Promise<void> = Promise.resolve();
  #open: () => void = () => {};
  /** From now on `seen` waits until {@link open}. */
  hold(): void {
    this.#gate = new Promise((resolve) => this.#open = resolve);
  }
  open(): void {
    this.#open();
  }
  override async seen(peer: string): Promise<Record<string, string>> {
    await this.#gate;
    return super.seen(peer);
  }
}

/** Sender (store `a`) and receiver (store `b`) over real TCP. */
function run(
  a: Store,
  b: Store,
  signers: [Signer, Signer],
  delivered: ReceivedLine[],
  acked: string[],
): Promise<ConnectionPair> {
  const both = {
    onDeliver: (_c: Connection, lines: ReceivedLine[]) =>
      delivered.push(...lines),
    onAck: (_peer: string, ack: { re: string }) => acked.push(ack.re),
  };
  return connectionPair(a, b, signers, { sender: both, receiver: both });
}

const msg = (th: string, text: string) => ({
  fields: { t: "msg", th, parts: [{ k: "text", text }] },
});

Deno.test("a live send while the replay waits behind our resume does not overtake it: nothing acked is lost, order kept", async () => {
  const signers: [Signer, Signer] = [
    await Signer.generate(),
    await Signer.generate(),
  ];
  const remote = signers[1].key;
  const a = new SlowSeenStore();
  const b = new MemoryStore();
  const delivered: ReceivedLine[] = [];
  const acked: string[] = [];
  try {
    // Queued while the remote was away: replayed on the next resume.
    const queued = await a.enqueue(remote, [msg("A", "1"), msg("B", "2")]);

    a.hold();
    const first = await run(a, b, signers, delivered, acked);
    // Open (their resume arrived), our resume still reading `seen`: the
    // replay is chained behind it, not started.
    await first.sender.established;
    const live: OutboxEntry[] = [];
    for (const [th, text] of [["A", "3"], ["B", "4"]]) {
      const entries = await a.enqueue(remote, [msg(th, text)]);
      first.sender.sendEntries(entries);
      live.push(...entries);
    }
    // Whatever went out already reaches the receiver; then the connection
    // drops before the replay ran (a kill, a ping timeout).
    await new Promise((r) => setTimeout(r, 300));
    await first.close();
    a.open();

    // The next connection resumes from the receiver's seen.
    const second = await run(a, b, signers, delivered, acked);
    try {
      const all = [...queued, ...live].map((e) => e.id);
      await until(
        "every entry acked",
        () =>
          Promise.resolve(all.every((id) => acked.includes(id)) || undefined),
        5_000,
      );
      const got = delivered.map((l) => l.message.id);
      // Acked means the receiver has it: every acked entry was delivered.
      assert.deepEqual(
        all.filter((id) => !got.includes(id)),
        [],
        "acked but never delivered",
      );
      for (const th of ["A", "B"]) {
        assert.deepEqual(
          delivered.filter((l) => l.message.th === th).map((l) => l.message.id),
          [...queued, ...live].filter((e) => e.th === th).map((e) => e.id),
          `thread ${th}: delivered once each, in send order`,
        );
      }
    } finally {
      await second.close();
    }
  } finally {
    a.close();
    b.close();
  }
});
