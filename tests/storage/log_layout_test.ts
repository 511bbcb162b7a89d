/**
 * The received lines' layout: one row of their own (the `rx` row, which
 * also indexes their log page by thread), counted at the backend; and a
 * store written before pages (an entry and a `logt` row per line, `rx`
 * rows of a time alone) opens and reads as it did.
 */
import assert from "node:assert/strict";
import type { Key, Mutation } from "../../storage/kv/key.ts";
import { DenoKvBackend } from "../../storage/kv/kv_backend.ts";
import { KvStore } from "../../storage/kv_store.ts";
import { receivedLine } from "../helpers/counting_kv_backend.ts";
import { withTempDir } from "../helpers/temp_dir.ts";

/** Deno KV whose committed mutations are counted, by the key's first part. */
class MutationCountingBackend extends DenoKvBackend {
  byKind = new Map<string, number>();
  get total(): number {
    let n = 0;
    for (const v of this.byKind.values()) n += v;
    return n;
  }
  override commit(mutations: Mutation[]): Promise<void> {
    for (const m of mutations) {
      const kind = String(m.key[0]);
      this.byKind.set(kind, (this.byKind.get(kind) ?? 0) + 1);
    }
    return super.commit(mutations);
  }
}

const PEER = "ed25519:x";

Deno.test("a batch of received lines costs one row each: the rx row, no log entry or logt row of its own", async () => {
  const backend = new MutationCountingBackend(await Deno.openKv(":memory:"));
  const store = new KvStore(backend);
  try {
    const lines = Array.from({ length: 100 }, (_, i) => receivedLine("t", i));
    const outcomes = await store.receive(PEER, lines);
    assert.equal(outcomes.filter((o) => !o.duplicate).length, 100);
    assert.equal(backend.byKind.get("rx"), 100);
    assert.equal(backend.byKind.get("logt") ?? 0, 0);
    assert.equal(backend.byKind.get("log"), 1, "one page");
    assert.ok(backend.total <= 110, `${backend.total} mutations`);
    // The page reads back as the lines, by thread and in order.
    const byThread = await store.readLog({ peer: PEER, th: "t" });
    assert.deepEqual(byThread.map((e) => e.id), lines.map((l) => l.id));
    assert.deepEqual(
      byThread.map((e) => e.seq),
      outcomes.map((o) => o.seq),
    );
    const tail = await store.readLog({ after: outcomes[97].seq! });
    assert.deepEqual(tail.map((e) => e.id), [lines[98].id, lines[99].id]);
    // Each is still its own dedup row.
    const again = await store.receive(PEER, [
      lines[40],
      receivedLine("t", 100),
    ]);
    assert.deepEqual(again.map((o) => o.duplicate), [true, false]);
  } finally {
    store.close();
  }
});

Deno.test("a trim that cuts into a page keeps the rest of it", async () => {
  const backend = new DenoKvBackend(await Deno.openKv(":memory:"));
  const store = new KvStore(backend, {}, { maxLogEntries: 30 });
  try {
    const lines = Array.from({ length: 40 }, (_, i) => receivedLine("t", i));
    // Pages of 8: the trim to 30 drops the first and cuts into the second.
    for (let i = 0; i < 40; i += 8) {
      await store.receive(PEER, lines.slice(i, i + 8));
    }
    await store.setMeta("settle", 1);
    const kept = await store.readLog({ peer: PEER, th: "t" });
    assert.deepEqual(kept.map((e) => e.id), lines.slice(10).map((l) => l.id));
    assert.equal((await store.readLog()).length, 30);
    // Their dedup rows stay: the trimmed lines are still duplicates.
    const again = await store.receive(PEER, [lines[0]]);
    assert.equal(again[0].duplicate, true);
  } finally {
    store.close();
  }
});

/** Rows as the layout before pages wrote them: records are JSON bytes. */
function record(value: unknown): Uint8Array {
  return new TextEncoder().encode(JSON.stringify(value));
}

Deno.test("a store written before log pages opens: its lines read by thread, dedup and expire as before", async () => {
  await withTempDir(async (dir) => {
    const path = `${dir}/awp.kv`;
    const kv = await Deno.openKv(path);
    const at = Date.now() - 60_000;
    const old = [receivedLine("t", 1), receivedLine("t", 2)];
    const rows: Array<[Key, unknown]> = [];
    old.forEach((line, i) => {
      const seq = i + 1;
      rows.push([["rx", PEER, "t", line.id], at]);
      rows.push([
        ["log", seq],
        record({
          seq,
          peer: PEER,
          dir: "in",
          t: "msg",
          line: line.raw,
          at,
          id: line.id,
          th: "t",
        }),
      ]);
      rows.push([["logt", PEER, "t", seq], 1]);
    });
    rows.push([
      ["log", 3],
      record({
        seq: 3,
        peer: PEER,
        dir: "out",
        t: "msg",
        line: "{}",
        at,
        id: "01OUT",
        th: "t",
      }),
    ]);
    rows.push([["logt", PEER, "t", 3], 1]);
    rows.push([
      ["seen", PEER, "t"],
      record({ th: "t", id: old[1].id, max: old[1].id }),
    ]);
    rows.push([["seq", "log"], 3]);
    rows.push([["seq", "logbytes"], old[0].raw.length + old[1].raw.length + 2]);
    for (const [key, value] of rows) await kv.set(key as Deno.KvKey, value);
    kv.close();

    const store = await KvStore.open(path);
    try {
      assert.deepEqual(await store.seen(PEER), { t: old[1].id });
      // An old id is a duplicate; an earlier unseen one is new.
      const outcomes = await store.receive(PEER, [
        old[0],
        receivedLine("t", 0),
        receivedLine("t", 3),
      ]);
      assert.deepEqual(outcomes.map((o) => o.duplicate), [true, false, false]);
      assert.deepEqual(outcomes.map((o) => o.seq), [undefined, 4, 5]);
      const byThread = await store.readLog({ peer: PEER, th: "t" });
      assert.deepEqual(byThread.map((e) => e.seq), [1, 2, 3, 4, 5]);
      assert.deepEqual(
        byThread.map((e) => e.id),
        [
          old[0].id,
          old[1].id,
          "01OUT",
          receivedLine("t", 0).id,
          receivedLine("t", 3).id,
        ],
      );
      assert.deepEqual(
        (await store.readLog({ peer: PEER, th: "t", after: 2, limit: 2 }))
          .map((e) => e.seq),
        [3, 4],
      );
      // Retention past the old rows: they go, log and dedup rows alike.
      await store.expireOutbox(at + 1);
      assert.deepEqual((await store.readLog()).map((e) => e.seq), [4, 5]);
      assert.deepEqual(
        (await store.readLog({ peer: PEER, th: "t" })).map((e) => e.seq),
        [4, 5],
      );
      // Folded into the floor: still a duplicate.
      assert.equal((await store.receive(PEER, [old[1]]))[0].duplicate, true);
    } finally {
      store.close();
    }
    const left = await Deno.openKv(path);
    try {
      const logt = [];
      for await (const e of left.list({ prefix: ["logt"] })) logt.push(e.key);
      assert.deepEqual(logt, []);
    } finally {
      left.close();
    }
  }, { prefix: "awp-kv-" });
});

Deno.test("appends write no counters: open resumes the seq and the log's bytes from the entries after the checkpoint", async () => {
  await withTempDir(async (dir) => {
    const path = `${dir}/awp.kv`;
    const lines = Array.from({ length: 5 }, (_, i) => receivedLine("t", i));
    const first = await KvStore.open(path);
    await first.receive(PEER, lines);
    await first.log([
      { peer: PEER, dir: "out", t: "msg", th: "t", line: "{}", at: 1 },
    ]);
    first.close();
    const kv = await Deno.openKv(path);
    const checkpoint = await kv.get(["seq", "log"]);
    kv.close();
    // None yet: appends write none, an open with nothing new neither.
    assert.equal(checkpoint.value, null);
    const bytes = lines.reduce((n, l) => n + l.raw.length, 0) + 2;
    // A byte bound just under what the log holds: open trims the oldest.
    const again = await KvStore.open(path, { maxLogBytes: bytes - 1 });
    try {
      const [next] = await again.receive(PEER, [receivedLine("t", 9)]);
      assert.equal(next.seq, 7);
      const kept = (await again.readLog()).map((e) => e.seq);
      assert.ok(kept.length < 7 && kept[0] > 1, JSON.stringify(kept));
    } finally {
      again.close();
    }
  }, { prefix: "awp-kv-" });
});

Deno.test("queued lines are logged a page per group, with a thread index row per thread; a trim cutting into the page drops the rows of threads it no longer holds", async () => {
  const backend = new MutationCountingBackend(await Deno.openKv(":memory:"));
  const store = new KvStore(backend, {}, { maxLogEntries: 5 });
  try {
    // Thread a then b: ids a0..a3, b0..b5.
    const drafts = Array.from({ length: 10 }, (_, i) => ({
      fields: { t: "msg", th: i < 4 ? "a" : "b", parts: [] },
    }));
    const entries = await store.enqueue(PEER, drafts);
    assert.equal(backend.byKind.get("ob"), 10);
    assert.equal(backend.byKind.get("log"), 1, "one page");
    assert.equal(backend.byKind.get("logt"), 2, "one row per thread");
    const ids = (th: string) =>
      entries.filter((e) => e.th === th).map((e) => e.id);
    // The next append's trim keeps the last 5 (a trim of the enqueue's own
    // may have cut into the page already): thread a is gone from it.
    await store.log([{ peer: PEER, dir: "out", t: "bye", line: "{}", at: 1 }]);
    await store.setMeta("settle", 1);
    assert.deepEqual(await store.readLog({ peer: PEER, th: "a" }), []);
    assert.deepEqual(
      (await store.readLog({ peer: PEER, th: "b" })).map((e) => e.id),
      ids("b").slice(2),
    );
    const index: unknown[] = [];
    for await (const e of backend.list({ prefix: ["logt"] })) {
      index.push(e.key[2]);
    }
    assert.deepEqual(index, ["b"]);
  } finally {
    store.close();
  }
});
