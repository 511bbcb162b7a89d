/**
 * Exactly-once delivery to the application across restarts: `message` and
 * `state` events carry their traffic-log `seq`, in increasing order, and
 * `events({ after })` replays what the log holds past a cursor, then goes
 * on live with no gap and no duplicate. Real Deno KV homes and unix sockets
 * in temp dirs.
 */
import assert from "node:assert/strict";
import { Peer, type PeerOptions } from "../../peer/peer.ts";
import type { PeerEvent } from "../../peer/peer_events.ts";
import { openStore } from "../../storage/open_store.ts";
import { randomBytes } from "../helpers/random_bytes.ts";
import { sha256Hex } from "../helpers/sha256_hex.ts";
import { withTempDir } from "../helpers/temp_dir.ts";

const FAST: Partial<PeerOptions> = {
  timeouts: { pingInterval: 0, bye: 1000 },
  dialer: { timing: { baseMs: 50, capMs: 200 }, random: () => 0.5 },
};

type Delivered = Extract<PeerEvent, { type: "message" | "state" }>;

/** Reads `it` in the background; `until` waits for a count of deliveries. */
class Reader {
  readonly got: Delivered[] = [];
  readonly done: Promise<void>;
  #it: AsyncIterableIterator<PeerEvent>;

  constructor(it: AsyncIterableIterator<PeerEvent>) {
    this.#it = it;
    this.done = (async () => {
      for await (const e of it) {
        if (e.type === "message" || e.type === "state") this.got.push(e);
      }
    })();
  }

  async until(n: number, what: string, ms = 10_000): Promise<void> {
    const start = Date.now();
    while (this.got.length < n) {
      if (Date.now() - start > ms) {
        throw new Error(
          `timed out waiting for ${what}: ${this.got.length} of ${n} delivered`,
        );
      }
      await new Promise((r) => setTimeout(r, 10));
    }
  }

  async stop(): Promise<void> {
    await this.#it.return?.();
    await this.done;
  }
}

function ids(list: Delivered[]): string[] {
  return list.map((e) => e.id);
}

function assertIncreasing(seqs: number[]): void {
  for (let i = 1; i < seqs.length; i++) {
    assert.ok(seqs[i - 1] < seqs[i], `seq ${seqs[i]} after ${seqs[i - 1]}`);
  }
}

Deno.test("events({ after }) after a restart replays exactly the later msgs and states, then live ones", async () => {
  await withTempDir(async (dir) => {
    const file = `${dir}/f.bin`;
    const bytes = randomBytes(300 * 1024);
    await Deno.writeFile(file, bytes);
    const a = await Peer.open({ home: `${dir}/a`, name: "alice", ...FAST });
    let b = await Peer.open({ home: `${dir}/b`, name: "bob", ...FAST });
    let reader = new Reader(b.events());
    try {
      const addr = await b.listen(`unix:${dir}/b.sock`);
      await a.connect(addr);
      const sent: string[] = [];
      for (const text of ["one", "two"]) {
        sent.push((await a.send(b.key, text, { thread: "th1" })).id);
      }
      sent.push(
        (await a.send(b.key, "three", { thread: "th2", files: [file] })).id,
      );
      sent.push((await a.setState(b.key, "th1", "working")).id);
      for (const id of sent) await a.waitAck(id, { timeoutMs: 10_000 });
      await reader.until(4, "the first four");
      // Each thread keeps its order; th1's state may overtake th2's blob
      // (small lines are not held behind another thread's chunks).
      assert.deepEqual(ids(reader.got).slice(0, 2), sent.slice(0, 2));
      assert.deepEqual(ids(reader.got).sort(), [...sent].sort());
      assertIncreasing(reader.got.map((e) => e.seq));
      const cursor = reader.got[1].seq; // the application handled "two"
      await reader.stop();
      await b.close();

      b = await Peer.open({ home: `${dir}/b`, name: "bob", ...FAST });
      reader = new Reader(b.events({ after: cursor }));
      await reader.until(2, "the replay");
      const three = reader.got.find((e) => e.id === sent[2])!;
      const state = reader.got.find((e) => e.id === sent[3])!;
      assert.equal(three.type, "message");
      assert.equal(three.id, sent[2]);
      assert.equal(three.text, "three");
      assert.equal(three.blobs.length, 1);
      assert.equal(three.blobs[0].status, "complete");
      assert.equal(three.blobs[0].sha256, sha256Hex(bytes));
      assert.equal(
        sha256Hex(await Deno.readFile(three.blobs[0].path!)),
        sha256Hex(bytes),
      );
      assert.equal(state.type, "state");
      assert.equal(state.id, sent[3]);
      assert.equal(state.state, "working");
      assert.ok(three.seq > cursor);

      // Live ones follow, once each, after the replayed ones.
      await b.listen(`unix:${dir}/b.sock`);
      const four = await a.send(b.key, "four", { thread: "th1" });
      await a.waitAck(four.id, { timeoutMs: 10_000 });
      await reader.until(3, "the live msg");
      await new Promise((r) => setTimeout(r, 100));
      assert.deepEqual(ids(reader.got).slice(2), [four.id]);
      assert.deepEqual(
        ids(reader.got).slice(0, 2).sort(),
        [sent[2], sent[3]].sort(),
      );
      assertIncreasing(reader.got.map((e) => e.seq));
    } finally {
      await reader.stop().catch(() => {});
      await a.close();
      await b.close();
    }
  }, { prefix: "awp-delivery-" });
});

Deno.test("a msg committed but never emitted (killed in between) is delivered by events({ after })", async () => {
  await withTempDir(async (dir) => {
    // What a kill -9 after the commit leaves: the line in the store, no event.
    const peerKey = `ed25519:${"A".repeat(43)}`;
    const line = {
      t: "msg",
      id: "0000000000001",
      ts: "2026-01-01T00:00:00.000Z",
      th: "th_x",
      parts: [{ k: "text", text: "orphan" }],
    };
    const store = await openStore({ home: dir });
    const [outcome] = await store.receive(peerKey, [{
      id: line.id,
      t: "msg",
      th: line.th,
      message: line,
      raw: JSON.stringify(line),
    }]);
    store.close();
    assert.equal(typeof outcome.seq, "number");

    const b = await Peer.open({ home: dir, name: "bob", ...FAST });
    const fresh = new Reader(b.events({ after: outcome.seq! - 1 }));
    const none = new Reader(b.events({ after: outcome.seq! }));
    try {
      await fresh.until(1, "the orphan");
      assert.equal(fresh.got[0].type, "message");
      assert.equal(fresh.got[0].peer, peerKey);
      assert.equal(fresh.got[0].seq, outcome.seq);
      assert.equal((fresh.got[0] as { text: string }).text, "orphan");
      await new Promise((r) => setTimeout(r, 100));
      assert.equal(fresh.got.length, 1);
      assert.equal(none.got.length, 0);
    } finally {
      await fresh.stop();
      await none.stop();
      await b.close();
    }
  }, { prefix: "awp-delivery-" });
});

Deno.test("events({ after }) opened mid-stream: replay and live merge with no gap and no duplicate", async () => {
  await withTempDir(async (dir) => {
    const a = await Peer.open({ home: `${dir}/a`, name: "alice", ...FAST });
    const b = await Peer.open({ home: `${dir}/b`, name: "bob", ...FAST });
    const all = new Reader(b.events());
    let late: Reader | undefined;
    try {
      await a.connect(await b.listen(`unix:${dir}/b.sock`));
      const N = 60;
      const sends: Promise<{ id: string }>[] = [];
      for (let i = 0; i < N; i++) {
        sends.push(a.send(b.key, `m${i}`, { thread: `th${i % 3}` }));
        if (i === 20) {
          await all.until(5, "a few");
          late = new Reader(b.events({ after: all.got[2].seq }));
        }
      }
      for (const s of sends) {
        await a.waitAck((await s).id, { timeoutMs: 10_000 });
      }
      await all.until(N, "every msg");
      await late!.until(N - 3, "the late stream");
      await new Promise((r) => setTimeout(r, 100));
      assertIncreasing(all.got.map((e) => e.seq));
      assert.deepEqual(ids(late!.got), ids(all.got).slice(3));
      assert.deepEqual(
        late!.got.map((e) => e.seq),
        all.got.slice(3).map((e) => e.seq),
      );
    } finally {
      await all.stop();
      await late?.stop();
      await a.close();
      await b.close();
    }
  }, { prefix: "awp-delivery-" });
});

Deno.test("events({ after }) refuses a cursor that is not a seq", async () => {
  const p = await Peer.open({ memory: true, name: "p" });
  try {
    for (const bad of [-1, 1.5, Number.NaN, "3" as unknown as number]) {
      assert.throws(
        () => p.events({ after: bad }),
        (e: Error) =>
          e instanceof TypeError && /^events: after must be/.test(e.message) &&
          !e.message.includes("\n"),
      );
    }
  } finally {
    await p.close();
  }
});
