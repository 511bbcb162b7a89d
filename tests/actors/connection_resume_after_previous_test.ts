/**
 * A new connection's `resume` reports what the previous connection to the
 * same peer received, also when that connection died while its last batch
 * was still committing (blob_crash_test "kill -9 of the sender": the
 * receiver syncs up to 4 MiB of chunks before committing their seen
 * markers; a resume read meanwhile sent the remote back to an older point,
 * "resent from chunk 0, below the stored 14").
 *
 * Real sockets, two real Connections, real Deno KV; the window is held open
 * by a receiver store whose commits wait for the test.
 */

import assert from "node:assert/strict";
import { Connection } from "../../actors/connection.ts";
import type { Transport } from "../../net/transport.ts";
import { DenoKvBackend } from "../../storage/kv/kv_backend.ts";
import type { Mutation } from "../../storage/kv/key.ts";
import { KvStore } from "../../storage/kv_store.ts";
import { MemoryStore } from "../../storage/memory_store.ts";
import type { Store } from "../../storage/store.ts";
import { Signer } from "../../wire/keys.ts";
import { transportPair } from "../helpers/transport_pair.ts";
import { until } from "../helpers/until.ts";

/** Deno KV whose commits wait, while held, until the test opens them. */
class HeldCommits extends DenoKvBackend {
  #gate: Promise<void> = Promise.resolve();
  #open: () => void = () => {};
  /** Commits waiting at the gate now. */
  waiting = 0;
  hold(): void {
    this.#gate = new Promise((resolve) => this.#open = resolve);
  }
  open(): void {
    this.#open();
  }
  override async commit(mutations: Mutation[]): Promise<void> {
    this.waiting++;
    await this.#gate;
    this.waiting--;
    return super.commit(mutations);
  }
}

interface Pair {
  sender: Connection;
  receiver: Connection;
  close(): Promise<void>;
}

/**
 * Sender (dialing, store `a`) and receiver (store `b`) over real TCP; the
 * resumes the sender reads go to `resumes`, the receiver's authentication
 * calls `authed`.
 */
async function pair(
  a: Store,
  b: Store,
  signers: [Signer, Signer],
  resumes: Record<string, string>[],
  authed: () => void = () => {},
): Promise<Pair> {
  const { listener, client, server } = await transportPair("tcp:127.0.0.1:0");
  listener.close();
  const make = (transport: Transport, dialed: boolean) =>
    new Connection({
      transport,
      dialed,
      signer: signers[dialed ? 0 : 1],
      store: dialed ? a : b,
      onLine: (_peer, dir, _raw, message) => {
        if (dialed && dir === "in" && message?.t === "resume") {
          resumes.push(message.seen as Record<string, string>);
        }
      },
      onAuthenticated: dialed ? undefined : () => authed(),
    });
  const sender = make(client, true);
  const receiver = make(server, false);
  sender.start();
  receiver.start();
  return {
    sender,
    receiver,
    async close() {
      sender.close("test over");
      receiver.close("test over");
      await Promise.all([sender.closed, receiver.closed, listener.done]);
    },
  };
}

const msg = (th: string, text: string) => ({
  fields: { t: "msg", th, parts: [{ k: "text", text }] },
});

Deno.test("a new connection's resume waits for the previous connection to the same peer to commit what it read", async () => {
  const signers: [Signer, Signer] = [
    await Signer.generate(),
    await Signer.generate(),
  ];
  const backend = new HeldCommits(await Deno.openKv(":memory:"));
  const a = new MemoryStore();
  const b = new KvStore(backend);
  const resumes: Record<string, string>[] = [];
  try {
    const first = await pair(a, b, signers, resumes);
    await first.sender.established;
    await first.receiver.established;
    // The receiver reads three msgs; their commit waits (a slow sync).
    backend.hold();
    const sent = await a.enqueue(signers[1].key, [
      msg("A", "1"),
      msg("A", "2"),
      msg("A", "3"),
    ]);
    first.sender.sendEntries(sent);
    await until(
      "the receiver's commit started",
      () => Promise.resolve(backend.waiting > 0 || undefined),
      5_000,
    );
    // The connection dies while that commit is in flight.
    await first.close();

    // The next connection: its resume must include the three msgs. The
    // commit is let through once the receiver authenticated the new
    // connection and either sent its resume (too early: the bug) or has
    // not after a while (it waits for the old connection's commit).
    let authed!: () => void;
    const authenticated = new Promise<void>((r) => authed = r);
    const second = await pair(a, b, signers, resumes, authed);
    try {
      await authenticated;
      await until(
        "the new resume, or a while without it",
        () => Promise.resolve(resumes.length > 1 || undefined),
        500,
      ).catch(() => {});
      backend.open();
      await second.sender.established;
      assert.equal(resumes.length, 2);
      assert.deepEqual(
        resumes[1],
        { A: sent[2].id },
        "the resume after the reconnect covers what the old connection read",
      );
    } finally {
      backend.open();
      await second.close();
    }
  } finally {
    backend.open();
    a.close();
    b.close();
  }
});
