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
import { DenoKvBackend } from "../../storage/kv/kv_backend.ts";
import type { Mutation } from "../../storage/kv/key.ts";
import { KvStore } from "../../storage/kv_store.ts";
import { MemoryStore } from "../../storage/memory_store.ts";
import type { Store } from "../../storage/store.ts";
import { Signer } from "../../wire/keys.ts";
import {
  type ConnectionPair,
  connectionPair,
} from "../helpers/connection_pair.ts";
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

/**
 * Sender (store `a`) and receiver (store `b`) over real TCP; the resumes
 * the sender reads go to `resumes`, the receiver's authentication calls
 * `authed`.
 */
function pair(
  a: Store,
  b: Store,
  signers: [Signer, Signer],
  resumes: Record<string, string>[],
  authed: () => void = () => {},
): Promise<ConnectionPair> {
  return connectionPair(a, b, signers, {
    sender: {
      onLine: (_peer, dir, _raw, message) => {
        if (dir === "in" && message?.t === "resume") {
          resumes.push(message.seen as Record<string, string>);
        }
      },
    },
    receiver: { onAuthenticated: () => authed() },
  });
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
