/**
 * A thread's received-side marker (`seen`: last id, dedup floor, highest
 * id) lives in its thread row `["thr", pk, tk]`: a commit of received lines
 * writes one row per thread, not a `seen` and a `thr` row. A store written
 * before keeps the marker in `["seen", pk, tk]` rows; open moves them, and
 * dedup, resume and the thread records read as they did.
 */
import assert from "node:assert/strict";
import type { Key, Mutation } from "../../storage/kv/key.ts";
import { DenoKvBackend } from "../../storage/kv/kv_backend.ts";
import { KvStore } from "../../storage/kv_store.ts";
import type { IncomingLine } from "../../storage/store.ts";
import {
  CountingKvBackend,
  receivedLine,
} from "../helpers/counting_kv_backend.ts";
import { withTempDir } from "../helpers/temp_dir.ts";

const PEER = "ed25519:x";

/** Deno KV whose committed mutations are counted, by the key's first part. */
class MutationCountingBackend extends DenoKvBackend {
  byKind = new Map<string, number>();
  override commit(mutations: Mutation[]): Promise<void> {
    for (const m of mutations) {
      const kind = String(m.key[0]);
      this.byKind.set(kind, (this.byKind.get(kind) ?? 0) + 1);
    }
    return super.commit(mutations);
  }
}

/** An unthreaded received `msg` line `n`. */
function unthreaded(n: number): IncomingLine {
  const { th: _, ...line } = receivedLine("", n);
  const { th: __, ...message } = line.message;
  return { ...line, message, raw: JSON.stringify(message) };
}

/** Rows as Deno KV holds a record: JSON bytes. */
function record(value: unknown): Uint8Array {
  return new TextEncoder().encode(JSON.stringify(value));
}

/** Every row of the file at `path`, with its versionstamp. */
async function rows(path: string): Promise<Array<[Key, string]>> {
  const kv = await Deno.openKv(path);
  try {
    const out: Array<[Key, string]> = [];
    for await (const e of kv.list({ prefix: [] })) {
      out.push([e.key as Key, e.versionstamp]);
    }
    return out;
  } finally {
    kv.close();
  }
}

Deno.test("a commit of received lines writes one row per thread: the marker is in the thread row", async () => {
  const backend = new MutationCountingBackend(await Deno.openKv(":memory:"));
  const store = new KvStore(backend);
  try {
    const lines = Array.from({ length: 10 }, (_, i) => receivedLine("t", i));
    await store.receive(PEER, lines);
    assert.equal(backend.byKind.get("thr"), 1);
    assert.equal(backend.byKind.get("seen") ?? 0, 0);
    // Ten threads in one call: a row each.
    await store.receive(
      PEER,
      Array.from({ length: 10 }, (_, i) => receivedLine(`u${i}`, 20 + i)),
    );
    assert.equal(backend.byKind.get("thr"), 11);
    // One line a call: still one row per thread per commit.
    for (let i = 10; i < 15; i++) {
      await store.receive(PEER, [receivedLine("t", i)]);
    }
    assert.equal(backend.byKind.get("thr"), 16);
    assert.equal(backend.byKind.get("rx"), 25);
    assert.equal(backend.byKind.get("seen") ?? 0, 0);
    const seen = await store.seen(PEER);
    assert.equal(seen.t, receivedLine("t", 14).id);
    assert.equal(Object.keys(seen).length, 11);
    // The thread record reads as before: no marker in it.
    const t = await store.thread(PEER, "t");
    assert.equal(t?.unread, 15);
    assert.equal("seen" in t!, false);
  } finally {
    store.close();
  }
});

Deno.test("unthreaded lines keep a row of the marker alone: dedup works, it is no thread record", async () => {
  const store = await KvStore.open();
  try {
    const first = await store.receive(PEER, [unthreaded(1), unthreaded(2)]);
    assert.deepEqual(first.map((o) => o.duplicate), [false, false]);
    const again = await store.receive(PEER, [unthreaded(1), unthreaded(3)]);
    assert.deepEqual(again.map((o) => o.duplicate), [true, false]);
    assert.deepEqual(await store.threads(PEER), []);
    assert.deepEqual(await store.seen(PEER), {});
    // A msg in a thread that first saw only a state gets its record.
    await store.receive(PEER, [receivedLine("t", 5)]);
    assert.deepEqual((await store.threads(PEER)).map((r) => r.th), ["t"]);
  } finally {
    store.close();
  }
});

Deno.test("putThread and patchThread keep the marker: resume and the dedup floor survive them", async () => {
  const store = await KvStore.open();
  try {
    const lines = [receivedLine("t", 1), receivedLine("t", 2)];
    await store.receive(PEER, lines);
    // Retention folds the ids into the floor: the rx rows go.
    await store.expireOutbox(Date.now() + 60_000);
    const recordNow = (await store.thread(PEER, "t"))!;
    // A record that carries a marker of its own does not replace the row's.
    await store.putThread(
      {
        ...recordNow,
        unread: 0,
        seen: { th: "t", id: "00", floor: "00" },
      } as typeof recordNow,
    );
    await store.patchThread(PEER, "t", { subject: "s" });
    assert.deepEqual(await store.seen(PEER), { t: lines[1].id });
    const replay = await store.receive(PEER, [lines[0], receivedLine("t", 3)]);
    assert.deepEqual(replay.map((o) => o.duplicate), [true, false]);
    const after = (await store.thread(PEER, "t"))!;
    assert.equal(after.unread, 1);
    assert.equal(after.subject, "s");
    assert.equal("seen" in after, false);
  } finally {
    store.close();
  }
});

Deno.test("a store with seen rows (the layout before the fold) opens: markers move into thread rows, reads are as before", async () => {
  await withTempDir(async (dir) => {
    const path = `${dir}/awp.kv`;
    const kv = await Deno.openKv(path);
    const at = Date.now() - 60_000;
    const now = new Date(at).toISOString();
    const a = [receivedLine("a", 1), receivedLine("a", 2)];
    const b = [receivedLine("b", 3), receivedLine("b", 4)];
    const c = [receivedLine("c", 5), receivedLine("c", 6)];
    const old: Array<[Key, unknown]> = [
      // "a": a thread record and a seen row, its ids' rx rows.
      [
        ["thr", PEER, "a"],
        record({
          peer: PEER,
          th: "a",
          subject: "hello",
          created: now,
          updated: now,
          unread: 2,
        }),
      ],
      [["seen", PEER, "a"], record({ th: "a", id: a[1].id, max: a[1].id })],
      [["rx", PEER, "a", a[0].id], at],
      [["rx", PEER, "a", a[1].id], at],
      // "b": a seen row alone (ids folded into its floor by retention).
      [["seen", PEER, "b"], record({ th: "b", id: b[1].id, floor: b[1].id })],
      // "c": moved by an open that crashed before the rest (its row has
      // the marker), then an older build wrote the seen row again.
      [
        ["thr", PEER, "c"],
        record({
          peer: PEER,
          th: "c",
          created: now,
          updated: now,
          unread: 1,
          seen: { th: "c", id: c[0].id, max: c[0].id },
        }),
      ],
      [["seen", PEER, "c"], record({ th: "c", id: c[1].id, max: c[1].id })],
      [["rx", PEER, "c", c[0].id], { at, seq: 1, log: 1 }],
      [["rx", PEER, "c", c[1].id], { at, seq: 2, log: 2 }],
      // Unthreaded lines: a highest id only.
      [["seen", PEER, ""], record({ max: unthreaded(7).id })],
      [["rx", PEER, "", unthreaded(7).id], at],
    ];
    for (const [key, value] of old) await kv.set(key as Deno.KvKey, value);
    kv.close();

    const store = await KvStore.open(path);
    try {
      assert.deepEqual(await store.seen(PEER), {
        a: a[1].id,
        b: b[1].id,
        c: c[1].id,
      });
      assert.deepEqual(
        (await store.threads(PEER)).map((r) => [r.th, r.unread, r.subject]),
        [["a", 2, "hello"], ["c", 1, undefined]],
      );
      assert.equal("seen" in (await store.thread(PEER, "c"))!, false);
      const outcomes = await store.receive(PEER, [
        a[0], // its rx row
        receivedLine("a", 0), // below max, never received: new
        b[0], // at or below b's floor
        c[1], // its rx row (c's newer marker kept it above max)
        unthreaded(7),
        receivedLine("b", 9),
      ]);
      assert.deepEqual(
        outcomes.map((o) => o.duplicate),
        [true, false, true, true, true, false],
      );
      assert.equal((await store.thread(PEER, "a"))?.unread, 3);
      assert.equal((await store.thread(PEER, "b"))?.unread, 1);
    } finally {
      store.close();
    }
    // (The log's checkpoint, `["seq", …]`, is the next open's to write.)
    const moved = (await rows(path)).filter(([k]) => k[0] !== "seq");
    assert.deepEqual(moved.filter(([k]) => k[0] === "seen"), []);
    // Opening it again moves nothing: no row but the checkpoint is written.
    const again = await KvStore.open(path);
    assert.deepEqual(await again.seen(PEER), {
      a: receivedLine("a", 0).id, // the last received, as before the fold
      b: receivedLine("b", 9).id,
      c: c[1].id,
    });
    again.close();
    assert.deepEqual(
      (await rows(path)).filter(([k]) => k[0] !== "seq"),
      moved,
    );
  }, { prefix: "awp-thr-" });
});

Deno.test("a query by thread walks the thread's pages back from its row: no rx listing, no other thread's page", async () => {
  const backend = new CountingKvBackend(await Deno.openKv(":memory:"));
  // As open makes it: every received page chained.
  const store = new KvStore(backend, { chainFrom: 0 });
  try {
    // Pages alternate between threads "t" and "u"; "u" has many more lines.
    let n = 0;
    const seqsOf = new Map<string, number[]>();
    for (let round = 0; round < 6; round++) {
      for (const [th, count] of [["t", 2], ["u", 20]] as const) {
        const lines = Array.from(
          { length: count },
          () => receivedLine(th, n++),
        );
        const outcomes = await store.receive(PEER, lines);
        seqsOf.set(th, [
          ...seqsOf.get(th) ?? [],
          ...outcomes.map((o) => o.seq!),
        ]);
      }
    }
    await store.log([{
      peer: PEER,
      dir: "out",
      t: "msg",
      th: "t",
      line: "{}",
      at: 1,
    }]);
    const all = await store.readLog();
    const expected = (after: number, limit = Infinity) =>
      all.filter((e) => e.th === "t" && e.seq > after).slice(0, limit)
        .map((e) => e.seq);
    const t = seqsOf.get("t")!;
    for (
      const [after, limit] of [
        [undefined, Infinity],
        [0, Infinity],
        [t[5], Infinity],
        [t[5], 3],
        [undefined, 5], // the scan from the start answers first
        [t[1], 13], // the sent entry (last) included
        [t[11], Infinity],
        [9999, Infinity],
      ] as Array<[number | undefined, number]>
    ) {
      const gets = backend.gets;
      const rx = backend.lists.get("rx") ?? 0;
      const got = await store.readLog({ peer: PEER, th: "t", after, limit });
      assert.deepEqual(got.map((e) => e.seq), expected(after ?? 0, limit));
      assert.equal(backend.lists.get("rx") ?? 0, rx, "no rx listing");
      // The thread's row, its pages not older than `after`, the sent entry.
      const pages = Math.ceil(t.filter((s) => s > (after ?? 0)).length / 2);
      assert.ok(
        backend.gets - gets <= 1 + pages + 1,
        `${backend.gets - gets} reads for ${pages} pages`,
      );
    }
  } finally {
    store.close();
  }
});

Deno.test("the chain after a trim, a putThread and a store reopened: the same entries as a scan", async () => {
  await withTempDir(async (dir) => {
    const path = `${dir}/awp.kv`;
    let store = await KvStore.open(path, { maxLogEntries: 30 });
    let n = 0;
    for (let i = 0; i < 12; i++) {
      await store.receive(PEER, [
        receivedLine("t", n++),
        receivedLine("u", n++),
        receivedLine("t", n++),
      ]);
    }
    const record = (await store.thread(PEER, "t"))!;
    await store.putThread({ ...record, unread: 0 });
    store.close();
    // The mark rode along with a trim's checkpoint: a store that always
    // chained (0) lists no rx rows for a query by thread.
    const kv = await Deno.openKv(path);
    assert.equal((await kv.get(["seq", "chain"])).value, 0);
    kv.close();
    store = await KvStore.open(path, { maxLogEntries: 30 });
    try {
      await store.setMeta("settle", 1);
      const scan = (await store.readLog()).filter((e) => e.th === "t");
      assert.ok(scan.length > 0 && scan.length < 24, "trimmed");
      assert.deepEqual(
        (await store.readLog({ peer: PEER, th: "t" })).map((e) => e.seq),
        scan.map((e) => e.seq),
      );
    } finally {
      store.close();
    }
  }, { prefix: "awp-chain-" });
});

Deno.test("a store whose received pages were indexed by rx rows opens: a query by thread reads old and new entries", async () => {
  await withTempDir(async (dir) => {
    const path = `${dir}/awp.kv`;
    const kv = await Deno.openKv(path);
    const at = Date.now();
    const old = [
      receivedLine("t", 1),
      receivedLine("u", 2),
      receivedLine("t", 3),
    ];
    await kv.set(
      ["log", 3],
      record({
        peer: PEER,
        dir: "in",
        at,
        entries: old.map((l, i) => ({
          seq: i + 1,
          t: "msg",
          id: l.id,
          th: l.th,
          line: l.raw,
        })),
      }),
    );
    for (const [i, l] of old.entries()) {
      await kv.set(["rx", PEER, l.th!, l.id], { at, seq: i + 1, log: 3 });
    }
    await kv.set(
      ["seen", PEER, "t"],
      record({ th: "t", id: old[2].id, max: old[2].id }),
    );
    await kv.set(
      ["seen", PEER, "u"],
      record({ th: "u", id: old[1].id, max: old[1].id }),
    );
    await kv.set(["seq", "log"], 3);
    kv.close();
    const store = await KvStore.open(path);
    try {
      const fresh = [receivedLine("t", 4), receivedLine("t", 5)];
      const outcomes = await store.receive(PEER, [old[0], ...fresh]);
      assert.deepEqual(outcomes.map((o) => o.duplicate), [true, false, false]);
      assert.deepEqual(
        (await store.readLog({ peer: PEER, th: "t" })).map((e) => e.id),
        [old[0].id, old[2].id, fresh[0].id, fresh[1].id],
      );
      assert.deepEqual(
        (await store.readLog({ peer: PEER, th: "t", after: 1, limit: 2 }))
          .map((e) => e.seq),
        [3, 4],
      );
      assert.deepEqual(
        (await store.readLog({ peer: PEER, th: "u" })).map((e) => e.seq),
        [2],
      );
    } finally {
      store.close();
    }
  }, { prefix: "awp-chain-" });
});
