/**
 * The behavioural test table every {@link Store} must pass, run against
 * `MemoryStore` (tests/storage/memory_store_test.ts) and `KvStore`
 * (tests/storage/kv_store_test.ts).
 *
 * @module
 */

import assert from "node:assert/strict";
import type { KvStoreOptions } from "../../storage/kv_store.ts";
import {
  entryLine,
  type IncomingLine,
  type OutboxDraft,
  type Store,
} from "../../storage/store.ts";

/** How a test gets a store; `reopen` (durable stores) closes and reopens it. */
export interface StoreHarness {
  store: Store;
  reopen?: () => Promise<Store>;
  cleanup: () => Promise<void>;
}

const PEER = "ed25519:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";
const OTHER = "ed25519:BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB";

function msg(
  th: string,
  text: string,
  extra: Record<string, unknown> = {},
): OutboxDraft {
  return { fields: { t: "msg", th, parts: [{ k: "text", text }], ...extra } };
}

function chunk(th: string | undefined, ref: string, n: number): OutboxDraft {
  return {
    fields: {
      t: "chunk",
      ...(th === undefined ? {} : { th }),
      ref,
      n,
      last: false,
    },
    chunk: { path: `/spool/${ref}`, offset: n * 10, length: 10 },
  };
}

function incoming(
  id: string,
  t: string,
  th?: string,
  extra: Record<string, unknown> = {},
): IncomingLine {
  const message = {
    t,
    id,
    ts: "2026-01-01T00:00:00.000Z",
    ...(th === undefined ? {} : { th }),
    ...extra,
  };
  return {
    id,
    t,
    ...(th === undefined ? {} : { th }),
    message,
    raw: JSON.stringify(message),
  };
}

function assertIncreasing(ids: string[]): void {
  for (let i = 1; i < ids.length; i++) {
    assert.ok(
      ids[i - 1] < ids[i],
      `ids out of order at ${i}: ${ids[i - 1]} !< ${ids[i]}`,
    );
  }
}

async function rejectsOneLine(
  p: Promise<unknown>,
  pattern: RegExp,
): Promise<void> {
  await assert.rejects(p, (e: Error) => {
    assert.match(e.message, pattern);
    assert.ok(!e.message.includes("\n"), `multi-line error: ${e.message}`);
    return true;
  });
}

type Case = [
  name: string,
  run: (h: StoreHarness) => Promise<void>,
  durable?: boolean,
  options?: KvStoreOptions,
];

function logLine(i: number, th?: string): {
  peer: string;
  dir: "out";
  t: string;
  th?: string;
  line: string;
  at: number;
} {
  return {
    peer: i % 2 === 0 ? PEER : OTHER,
    dir: "out",
    t: "msg",
    ...(th === undefined ? {} : { th }),
    line: JSON.stringify({ t: "msg", i }),
    at: 1000 + i,
  };
}

/** Waits for work the store queued behind earlier calls (a log trim). */
async function settle(store: Store): Promise<void> {
  await store.setMeta("settle", 1);
}

const cases: Case[] = [
  [
    "enqueue allocates increasing ids in call order, outbox keeps them",
    async ({ store }) => {
      const before = store.nextId();
      const a = await store.enqueue(PEER, [
        msg("t1", "a"),
        msg("t1", "b"),
        msg("t2", "c"),
      ]);
      const after = store.nextId();
      assert.equal(a.length, 3);
      assertIncreasing([before, ...a.map((e) => e.id), after]);
      for (const e of a) {
        assert.equal(e.peer, PEER);
        assert.match(e.ts, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
        assert.equal(e.t, "msg");
        assert.equal("id" in e.fields, false);
      }
      const out = await store.outbox(PEER);
      assert.deepEqual(out, a);
      assert.deepEqual(await store.outbox(OTHER), []);
      assert.deepEqual(await store.enqueue(PEER, []), []);
    },
  ],
  [
    "concurrent enqueue calls are group-committed in call order",
    async ({ store }) => {
      const calls = Array.from(
        { length: 300 },
        (_, i) => store.enqueue(PEER, [msg(`t${i % 7}`, `m${i}`)]),
      );
      const results = await Promise.all(calls);
      const ids = results.map(([e]) => e.id);
      assertIncreasing(ids);
      const out = await store.outbox(PEER);
      assert.deepEqual(out.map((e) => e.id), ids);
      assert.deepEqual(
        out.map((e) => (e.fields.parts as { text: string }[])[0].text),
        ids.map((_, i) => `m${i}`),
      );
    },
  ],
  ["chunk drafts keep a ChunkSource, never data", async ({ store }) => {
    const [e] = await store.enqueue(PEER, [{
      ...chunk("t1", "b1", 0),
      fields: { ...chunk("t1", "b1", 0).fields, data: "QUJD" },
    }]);
    assert.equal("data" in e.fields, false);
    const [stored] = await store.outbox(PEER);
    assert.equal("data" in stored.fields, false);
    assert.deepEqual(stored.chunk, {
      path: "/spool/b1",
      offset: 0,
      length: 10,
    });
    await rejectsOneLine(
      store.enqueue(PEER, [{
        fields: { t: "chunk", ref: "x", n: 0, data: "QQ==" },
      }]),
      /ChunkSource/,
    );
  }],
  ["bad input is refused with one-line errors", async ({ store }) => {
    await rejectsOneLine(store.enqueue("", [msg("t", "x")]), /peer/);
    await rejectsOneLine(
      store.enqueue(PEER, [{ fields: {} as OutboxDraft["fields"] }]),
      /string t/,
    );
    await rejectsOneLine(
      store.receive(PEER, [{ id: "", t: "msg", message: {}, raw: "" }]),
      /id/,
    );
    await rejectsOneLine(
      store.log([{ peer: PEER, dir: "up" as "in", t: "msg", line: "", at: 1 }]),
      /dir/,
    );
    await rejectsOneLine(store.expireOutbox(NaN), /olderThan/);
    await rejectsOneLine(store.identity(() => new Uint8Array(3)), /32 bytes/);
  }],
  [
    "receive reports duplicates, in one call and across calls",
    async ({ store }) => {
      const first = await store.receive(PEER, [
        incoming("A1", "msg", "t1"),
        incoming("A1", "msg", "t1"),
      ]);
      // A new line reports the log seq it was committed under.
      assert.deepEqual(first, [{ id: "A1", duplicate: false, seq: 1 }, {
        id: "A1",
        duplicate: true,
      }]);
      const again = await store.receive(PEER, [
        incoming("A1", "msg", "t1"),
        incoming("A2", "state", "t1", { state: "working" }),
      ]);
      assert.deepEqual(again, [{ id: "A1", duplicate: true }, {
        id: "A2",
        duplicate: false,
        seq: 2,
      }]);
      // Dedup is per peer.
      assert.deepEqual(
        await store.receive(OTHER, [incoming("A1", "msg", "t1")]),
        [{ id: "A1", duplicate: false, seq: 3 }],
      );
    },
  ],
  [
    "concurrent receive calls resolve with the right outcomes",
    async ({ store }) => {
      const calls = Array.from({ length: 200 }, (_, i) =>
        store.receive(PEER, [
          incoming(`R${String(i % 100).padStart(3, "0")}`, "msg", "t1"),
        ]));
      const outcomes = (await Promise.all(calls)).map(([o]) => o.duplicate);
      assert.deepEqual(
        outcomes,
        Array.from({ length: 200 }, (_, i) => i >= 100),
      );
      assert.deepEqual(await store.seen(PEER), { t1: "R099" });
    },
  ],
  ["seen counts content lines per thread, never acks", async ({ store }) => {
    await store.receive(PEER, [
      incoming("B1", "msg", "t1"),
      incoming("B2", "chunk", "t1", {
        ref: "r",
        n: 0,
        last: true,
        data: "QQ==",
      }),
      incoming("B3", "state", "t2", { state: "done" }),
      incoming("B4", "ack", "t1", { re: "x" }),
      incoming("B5", "chunk", undefined, {
        ref: "r2",
        n: 0,
        last: true,
        data: "QQ==",
      }),
    ]);
    assert.deepEqual(await store.seen(PEER), { t1: "B2", t2: "B3" });
    assert.deepEqual(await store.seen(OTHER), {});
  }],
  ["receive keeps thread records", async ({ store }) => {
    await store.receive(PEER, [
      incoming("C1", "msg", "t1", { subject: "Run the suite", parts: [] }),
      incoming("C2", "msg", "t1", { subject: "ignored", parts: [] }),
      incoming("C3", "state", "t1", {
        state: "working",
        note: "cloning",
        ts: "2026-02-02T00:00:00.000Z",
      }),
    ]);
    const t = await store.thread(PEER, "t1");
    assert.ok(t);
    assert.equal(t.subject, "Run the suite");
    assert.equal(t.unread, 2);
    assert.deepEqual(t.theirs, {
      state: "working",
      note: "cloning",
      ts: "2026-02-02T00:00:00.000Z",
    });
    await store.putThread({
      ...t,
      unread: 0,
      mine: { state: "open", ts: t.updated },
    });
    assert.equal((await store.thread(PEER, "t1"))?.unread, 0);
    await store.putThread({
      peer: OTHER,
      th: "t9",
      created: t.created,
      updated: t.updated,
      unread: 0,
    });
    assert.deepEqual((await store.threads(PEER)).map((r) => r.th), ["t1"]);
    assert.equal((await store.threads()).length, 2);
    assert.equal(await store.thread(PEER, "nope"), undefined);
  }],
  [
    "replay: after seen in listed threads, all of unlisted ones, in order; covered entries dropped",
    async ({ store }) => {
      const e = await store.enqueue(PEER, [
        msg("t1", "1"), // 0
        chunk("t2", "b", 0), // 1
        msg("t1", "2"), // 2
        chunk(undefined, "u", 0), // 3
        msg("t2", "3"), // 4
        msg("t1", "4"), // 5
        msg("t3", "5"), // 6
      ]);
      const replay = await store.replay(PEER, {
        t1: e[2].id,
        t2: e[1].id,
        gone: "ZZZ",
      });
      assert.deepEqual(
        replay.map((x) => x.id),
        [e[3], e[4], e[5], e[6]].map((x) => x.id),
      );
      assert.deepEqual(replay[0], e[3]); // original id, ts, fields
      assert.deepEqual(
        (await store.outbox(PEER)).map((x) => x.id),
        replay.map((x) => x.id),
      );
      // An empty seen replays everything left.
      assert.deepEqual(
        (await store.replay(PEER, {})).map((x) => x.id),
        replay.map((x) => x.id),
      );
    },
  ],
  [
    "replayPages: 2,500 entries in pages of at most 1,000, in id order; covered ones dropped and told, never yielded",
    async ({ store }) => {
      const all: string[] = [];
      for (let i = 0; i < 5; i++) {
        const batch = await store.enqueue(
          PEER,
          Array.from({ length: 500 }, (_, k) => msg(`t${k % 3}`, `${i}-${k}`)),
        );
        all.push(...batch.map((e) => e.id));
      }
      const seenT0 = all[1200 - (1200 % 3)]; // a t0 entry
      const covered: string[] = [];
      const pages: string[][] = [];
      for await (
        const page of store.replayPages(
          PEER,
          { t0: seenT0 },
          (e) => covered.push(e.id),
        )
      ) {
        assert.ok(page.length > 0 && page.length <= 1000, `${page.length}`);
        pages.push(page.map((e) => e.id));
      }
      assert.ok(pages.length >= 3, `${pages.length} pages`);
      const replayed = pages.flat();
      const expectCovered = all.filter((id, i) =>
        i % 500 % 3 === 0 && id <= seenT0
      );
      assert.deepEqual(covered, expectCovered);
      assert.deepEqual(replayed, all.filter((id) => !covered.includes(id)));
      assert.deepEqual((await store.outbox(PEER)).map((e) => e.id), replayed);
      assert.equal(await store.outboxCount(PEER), replayed.length);
      assert.equal(await store.outboxCount(OTHER), 0);
    },
  ],
  [
    "replayPages: a consumer that stops after one page stops the listing; the rest comes in order",
    async ({ store }) => {
      const first = await store.enqueue(
        PEER,
        Array.from({ length: 1500 }, (_, k) => msg("t1", `${k}`)),
      );
      const pages = store.replayPages(PEER, {})[Symbol.asyncIterator]();
      const one = await pages.next();
      assert.equal(one.done, false);
      // Pages grow (a small first one goes out at once), up to 1,000.
      const head = (one.value as { id: string }[]).map((e) => e.id);
      assert.ok(head.length > 0 && head.length < 1000, `${head.length}`);
      assert.deepEqual(head, first.slice(0, head.length).map((e) => e.id));
      const later = await store.enqueue(PEER, [msg("t1", "later")]);
      const rest: string[] = [];
      for (let r = await pages.next(); !r.done; r = await pages.next()) {
        rest.push(...r.value.map((e) => e.id));
      }
      // Queued while the listing ran: listed or not (a backend may list a
      // snapshot); the connection sends it live after the replay either way.
      const left = 1500 - head.length;
      assert.deepEqual(
        rest.slice(0, left),
        first.slice(head.length).map((e) => e.id),
      );
      assert.ok(rest.length === left || rest[left] === later[0].id);
      const stopped = store.replayPages(PEER, {})[Symbol.asyncIterator]();
      await stopped.next();
      await stopped.return?.(undefined);
      assert.equal((await store.outbox(PEER)).length, 1501);
    },
  ],
  [
    "acked drops the entry and the earlier chunks/introductions of its thread",
    async ({ store }) => {
      const e = await store.enqueue(PEER, [
        msg("t1", "early"), // 0: msg, kept (needs its own ack)
        chunk("t1", "b", 0), // 1: dropped
        { fields: { t: "introduce", th: "t1", peer: { key: OTHER } } }, // 2: dropped
        chunk("t2", "c", 0), // 3: other thread, kept
        chunk(undefined, "d", 0), // 4: unthreaded, kept
        msg("t1", "names blob b"), // 5: acked
        chunk("t1", "b", 1), // 6: later, kept
      ]);
      assert.equal(await store.acked(PEER, "t1", e[5].id), true);
      assert.deepEqual(
        (await store.outbox(PEER)).map((x) => x.id),
        [e[0], e[3], e[4], e[6]].map((x) => x.id),
      );
      assert.equal(await store.acked(PEER, "t1", e[5].id), false);
      assert.equal(
        await store.acked(PEER, "t1", "01NOTANID00000000000000000"),
        false,
      );
      // An ack whose th does not match still finds the entry.
      assert.equal(await store.acked(PEER, "wrong", e[0].id), true);
      assert.equal(await store.acked(OTHER, "t2", e[3].id), false);
      assert.deepEqual(
        (await store.outbox(PEER)).map((x) => x.id),
        [e[3], e[4], e[6]].map((x) => x.id),
      );
    },
  ],
  [
    "expireOutbox removes only entries queued before the cut",
    async ({ store }) => {
      const old = await store.enqueue(PEER, [
        msg("t1", "a"),
        chunk("t1", "b", 0),
      ]);
      await new Promise((r) => setTimeout(r, 5));
      const cut = Date.now();
      await new Promise((r) => setTimeout(r, 5));
      const fresh = await store.enqueue(OTHER, [msg("t1", "c")]);
      assert.equal(await store.expireOutbox(0), 0);
      assert.equal(await store.expireOutbox(cut), old.length);
      assert.deepEqual(await store.outbox(PEER), []);
      assert.deepEqual(await store.outbox(OTHER), fresh);
      assert.equal(await store.acked(PEER, "t1", old[0].id), false);
    },
  ],
  [
    "dedup is compacted on expiry into a per-thread floor",
    async ({ store }) => {
      await store.receive(PEER, [
        incoming("D2", "msg", "t1"),
        incoming("D4", "msg", "t1"),
        incoming("X1", "msg", undefined),
      ]);
      await store.expireOutbox(Date.now() + 1);
      const r = await store.receive(PEER, [
        incoming("D4", "msg", "t1"),
        incoming("D3", "msg", "t1"),
        incoming("D5", "msg", "t1"),
        incoming("X1", "msg", undefined),
      ]);
      assert.deepEqual(r.map((o) => o.duplicate), [true, true, false, true]);
      assert.deepEqual(await store.seen(PEER), { t1: "D5" });
    },
  ],
  [
    "the log keeps at most maxLogEntries, trimming the oldest with indexes",
    async ({ store }) => {
      // One call per line, then batches, then received lines: 100 appends.
      for (let i = 0; i < 30; i++) await store.log([logLine(i, "t1")]);
      for (let i = 30; i < 90; i += 10) {
        await store.log(
          Array.from({ length: 10 }, (_, j) => logLine(i + j, "t2")),
        );
      }
      await store.receive(
        PEER,
        Array.from(
          { length: 10 },
          (_, j) => incoming(`R${90 + j}`, "msg", "t3"),
        ),
      );
      await settle(store);
      const all = await store.readLog();
      // 100 appends, a multiple of the trim interval: exactly the bound.
      assert.equal(all.length, 20);
      const first = all[0].seq;
      assert.deepEqual(
        all.map((e) => e.seq),
        Array.from({ length: 20 }, (_, i) => first + i),
      );
      assert.deepEqual(all.slice(0, 10).map((e) => JSON.parse(e.line).i), [
        80,
        81,
        82,
        83,
        84,
        85,
        86,
        87,
        88,
        89,
      ]);
      assert.deepEqual(
        (await store.readLog({ peer: PEER })).map((e) => e.seq),
        all.filter((e) => e.peer === PEER).map((e) => e.seq),
      );
      assert.deepEqual(await store.readLog({ peer: OTHER, th: "t1" }), []);
      assert.equal((await store.readLog({ peer: PEER, th: "t3" })).length, 10);
      assert.equal((await store.readLog({ after: first - 1 })).length, 20);
    },
    false,
    { maxLogEntries: 20 },
  ],
  [
    "the default bound keeps a log of a few hundred entries whole",
    async ({ store }) => {
      // The harness opened with the default bound: a big log stays whole.
      await store.log(Array.from({ length: 300 }, (_, i) => logLine(i)));
      await settle(store);
      assert.equal((await store.readLog()).length, 300);
    },
  ],
  [
    "expireOutbox trims log entries older than the cut, oldest first",
    async ({ store }) => {
      await store.log(Array.from({ length: 10 }, (_, i) => logLine(i)));
      assert.equal(await store.expireOutbox(1005), 0);
      assert.deepEqual(
        (await store.readLog()).map((e) => e.at),
        [1005, 1006, 1007, 1008, 1009],
      );
      assert.equal((await store.readLog({ peer: PEER })).length, 2);
      // From the oldest on: an old entry after a newer one stays.
      await store.log([{ ...logLine(0), at: 1 }]);
      await store.expireOutbox(1007);
      assert.deepEqual(
        (await store.readLog()).map((e) => e.at),
        [1007, 1008, 1009, 1],
      );
    },
  ],
  [
    "expireOutbox forgets seen of threads ended and idle since the cut",
    async ({ store }) => {
      await store.receive(PEER, [
        incoming("E1", "msg", "done"),
        incoming("E2", "msg", "failed"),
        incoming("E3", "state", "failed", { state: "failed" }),
        incoming("E4", "msg", "open"),
        incoming("E5", "msg", "closed"),
      ]);
      const ts = new Date().toISOString();
      await store.patchThread(PEER, "done", { mine: { state: "done", ts } });
      await store.patchThread(PEER, "open", { mine: { state: "working", ts } });
      const closed = await store.thread(PEER, "closed");
      await store.putThread({
        ...closed!,
        mine: { state: "closed", ts },
        updated: new Date(Date.now() + 60_000).toISOString(),
      });
      const all = { done: "E1", failed: "E3", open: "E4", closed: "E5" };
      // Nothing ended before a cut in the past.
      await store.expireOutbox(Date.now() - 60_000);
      assert.deepEqual(await store.seen(PEER), all);
      await store.expireOutbox(Date.now() + 1000);
      // "closed" changed after the cut: kept.
      assert.deepEqual(await store.seen(PEER), { open: "E4", closed: "E5" });
      const again = await store.receive(PEER, [
        incoming("E1", "msg", "done"),
        incoming("E4", "msg", "open"),
        incoming("E5", "msg", "closed"),
      ]);
      // Documented: after retention a replayed line of a forgotten thread
      // counts as new; the others stay duplicates through their floor.
      assert.deepEqual(again.map((o) => o.duplicate), [false, true, true]);
      assert.equal(
        (await store.thread(PEER, "failed"))?.theirs?.state,
        "failed",
      );
    },
  ],
  [
    "lines up to 1 MiB are stored split and come back intact",
    async ({ store }) => {
      const big = "é".repeat(400_000) + "x".repeat(200_000); // ~1 MB of UTF-8
      const drafts = [
        msg("t1", big),
        msg("t1", "small"),
        msg("t2", big.slice(0, 300_000)),
      ];
      const [a, b, c] = await Promise.all(
        drafts.map((d) => store.enqueue(PEER, [d]).then(([e]) => e)),
      );
      assertIncreasing([a.id, b.id, c.id]);
      const out = await store.outbox(PEER);
      assert.deepEqual(out, [a, b, c]);
      assert.equal((out[0].fields.parts as { text: string }[])[0].text, big);
      const line = JSON.stringify({ ...a.fields, id: a.id, ts: a.ts });
      await store.receive(PEER, [{
        id: "BIG",
        t: "msg",
        th: "t1",
        message: JSON.parse(line),
        raw: line,
      }]);
      const rows = await store.readLog({ peer: PEER, th: "t1" });
      // The enqueue logged its out rows with it, once each; then the receive.
      assert.deepEqual(rows.map((r) => [r.dir, r.id]), [
        ["out", a.id],
        ["out", b.id],
        ["in", "BIG"],
      ]);
      assert.deepEqual(JSON.parse(rows[0].line), entryLine(a));
      assert.equal(rows[2].line, line);
      assert.equal(await store.acked(PEER, "t1", a.id), true);
      assert.deepEqual(await store.outbox(PEER), [b, c]);
      assert.deepEqual(await store.replay(PEER, {}), [b, c]);
      await store.setMeta("doc", { text: big });
      assert.equal((await store.getMeta<{ text: string }>("doc"))?.text, big);
      await store.setMeta("doc", { text: "short" });
      assert.deepEqual(await store.getMeta("doc"), { text: "short" });
    },
  ],
  [
    "the log is paged by seq and filtered by peer and thread",
    async ({ store }) => {
      const at = Date.now();
      await store.log([
        { peer: PEER, dir: "out", t: "hello", line: "{h}", at },
        {
          peer: PEER,
          dir: "out",
          t: "msg",
          id: "M1",
          th: "t1",
          line: "{m1}",
          at,
        },
      ]);
      await store.receive(PEER, [
        incoming("I1", "msg", "t1"),
        incoming("I2", "chunk", "t2", {
          ref: "r",
          n: 0,
          last: true,
          data: "QUJD",
        }),
      ]);
      await store.log([{ peer: OTHER, dir: "in", t: "ping", line: "{p}", at }]);
      const all = await store.readLog();
      assert.equal(all.length, 5);
      assertIncreasing(all.map((e) => String(e.seq).padStart(10, "0")));
      assert.deepEqual(all.map((e) => e.t), [
        "hello",
        "msg",
        "msg",
        "chunk",
        "ping",
      ]);
      assert.equal(all[2].dir, "in");
      assert.equal(all[2].line, incoming("I1", "msg", "t1").raw);
      assert.equal(JSON.parse(all[3].line).data, undefined); // chunk data elided
      assert.equal(JSON.parse(all[3].line).ref, "r");
      assert.deepEqual(
        (await store.readLog({ peer: PEER })).map((e) => e.seq),
        all.slice(0, 4).map((e) => e.seq),
      );
      assert.deepEqual(
        (await store.readLog({ peer: PEER, th: "t1" })).map((e) => e.id),
        ["M1", "I1"],
      );
      assert.deepEqual((await store.readLog({ th: "t2" })).map((e) => e.id), [
        "I2",
      ]);
      const page1 = await store.readLog({ limit: 2 });
      const page2 = await store.readLog({ after: page1[1].seq, limit: 2 });
      const page3 = await store.readLog({ after: page2[1].seq, limit: 2 });
      assert.deepEqual([...page1, ...page2, ...page3], all);
      assert.deepEqual(
        await store.readLog({ peer: PEER, after: all[1].seq, limit: 1 }),
        [all[2]],
      );
      // Duplicates are not logged again.
      await store.receive(PEER, [incoming("I1", "msg", "t1")]);
      assert.equal((await store.readLog()).length, 5);
    },
  ],
  [
    "peers, grants, revocations, blobs, meta and identity are keyed records",
    async ({ store }) => {
      const seed = crypto.getRandomValues(new Uint8Array(32));
      assert.deepEqual(await store.identity(() => seed), seed);
      assert.deepEqual(await store.identity(() => new Uint8Array(32)), seed);
      await store.putPeer({
        key: PEER,
        name: "a",
        addresses: ["tcp:1"],
        firstSeen: 1,
        lastSeen: 2,
      });
      await store.putPeer({
        key: PEER,
        name: "a2",
        addresses: ["tcp:2", "tcp:1"],
        dialed: true,
        firstSeen: 1,
        lastSeen: 3,
      });
      await store.putPeer({
        key: OTHER,
        addresses: [],
        firstSeen: 1,
        lastSeen: 1,
      });
      assert.equal((await store.peer(PEER))?.name, "a2");
      assert.equal((await store.peers()).length, 2);
      assert.equal(await store.peer("ed25519:unknown"), undefined);
      const grant = {
        iss: PEER,
        sub: OTHER,
        caps: ["exec"],
        exp: "2030-01-01T00:00:00Z",
        nonce: "n",
        sig: "s",
      };
      await store.putGrant({ kind: "issued", hash: "h1", grant, storedAt: 1 });
      await store.putGrant({
        kind: "presented",
        hash: "h2",
        grant,
        from: OTHER,
        storedAt: 2,
      });
      assert.deepEqual((await store.grants("issued")).map((g) => g.hash), [
        "h1",
      ]);
      assert.equal((await store.grants()).length, 2);
      assert.equal(await store.isRevoked("h1"), false);
      await store.revoke("h1");
      assert.equal(await store.isRevoked("h1"), true);
      const blob = {
        peer: PEER,
        ref: "b1",
        dir: "in" as const,
        size: 10,
        bytes: 0,
        next: 0,
        status: "active" as const,
        path: "/tmp/x",
        updated: 1,
      };
      await store.putBlob(blob);
      await store.putBlob({ ...blob, dir: "out" });
      await store.putBlob({ ...blob, peer: OTHER });
      assert.deepEqual(await store.blob(PEER, "b1", "in"), blob);
      assert.equal(await store.blob(PEER, "b2", "in"), undefined);
      assert.equal((await store.blobs(PEER)).length, 2);
      assert.equal((await store.blobs()).length, 3);
      assert.equal(await store.getMeta("presence.seq"), undefined);
      await store.setMeta("presence.seq", 41);
      assert.equal(await store.getMeta<number>("presence.seq"), 41);
      await store.setMeta("presence.seq", undefined);
      assert.equal(await store.getMeta("presence.seq"), undefined);
    },
  ],
  [
    "the request journal keeps one record per peer, msg and part; a big request's data survives",
    async ({ store }) => {
      const record = {
        peer: PEER,
        re: "m1",
        th: "t1",
        part: 0,
        kind: "serve" as const,
        cap: "fs:write",
        mime: "application/vnd.awp.fs-write+json",
        // Over one KV value: stored in parts.
        data: { path: "a.txt", content: "x".repeat(200_000) },
        state: "received" as const,
        at: 1,
      };
      await store.putRequest(record);
      await store.putRequest({ ...record, part: 1 });
      await store.putRequest({ ...record, peer: OTHER });
      assert.deepEqual(await store.request(PEER, "m1", 0), record);
      assert.equal(await store.request(PEER, "m2", 0), undefined);
      await store.putRequest({ ...record, state: "answered", data: null });
      assert.equal((await store.request(PEER, "m1", 0))?.state, "answered");
      assert.equal((await store.requests()).length, 3);
      await store.dropRequest(PEER, "m1", 1);
      assert.equal(await store.request(PEER, "m1", 1), undefined);
      assert.deepEqual(
        (await store.requests()).map((r) => `${r.peer === PEER} ${r.part}`)
          .sort(),
        ["false 0", "true 0"],
      );
    },
  ],
  ["very long peer keys and thread ids work", async ({ store }) => {
    const peer = "ed25519:" + "p".repeat(3000);
    const th = "t".repeat(5000);
    const [e] = await store.enqueue(peer, [msg(th, "x"), chunk(th, "r", 0)]);
    assert.deepEqual(
      (await store.receive(peer, [incoming("L1", "msg", th)]))[0].duplicate,
      false,
    );
    assert.deepEqual(await store.seen(peer), { [th]: "L1" });
    assert.equal((await store.thread(peer, th))?.th, th);
    assert.equal((await store.replay(peer, { [th]: "0" })).length, 2);
    assert.equal(
      await store.acked(peer, th, (await store.outbox(peer))[1].id),
      true,
    );
    assert.deepEqual((await store.outbox(peer)).map((x) => x.id), [e.id]);
  }],
  [
    "very long received ids are deduplicated, also after compaction",
    async ({ store }) => {
      const id = "I".repeat(3000);
      const line = incoming(id, "msg", "t1");
      assert.deepEqual(await store.receive(PEER, [line]), [{
        id,
        duplicate: false,
        seq: 1,
      }]);
      assert.deepEqual(await store.receive(PEER, [line]), [{
        id,
        duplicate: true,
      }]);
      await store.expireOutbox(Date.now() + 1);
      assert.deepEqual(await store.receive(PEER, [line]), [{
        id,
        duplicate: true,
      }]);
      assert.deepEqual(await store.seen(PEER), { t1: id });
    },
  ],
  [
    "ids, outbox, dedup, seen, log and identity survive a restart",
    async (h) => {
      let store = h.store;
      const seed = await store.identity(() =>
        crypto.getRandomValues(new Uint8Array(32))
      );
      const before = await store.enqueue(PEER, [
        msg("t1", "a"),
        msg("t1", "b"),
      ]);
      await store.receive(PEER, [incoming("Z1", "msg", "t1")]);
      await store.log([{
        peer: PEER,
        dir: "out",
        t: "ping",
        line: "{}",
        at: 1,
      }]);
      const lastSeq = (await store.readLog()).at(-1)!.seq;
      store = await h.reopen!();
      assert.deepEqual(await store.identity(() => new Uint8Array(32)), seed);
      assert.deepEqual(await store.outbox(PEER), before);
      const after = await store.enqueue(PEER, [msg("t1", "c")]);
      assertIncreasing([...before, ...after].map((e) => e.id));
      assert.ok(store.nextId() > after[0].id);
      assert.deepEqual(
        await store.receive(PEER, [incoming("Z1", "msg", "t1")]),
        [{ id: "Z1", duplicate: true }],
      );
      assert.deepEqual(await store.seen(PEER), { t1: "Z1" });
      await store.log([{
        peer: PEER,
        dir: "out",
        t: "ping",
        line: "{}",
        at: 2,
      }]);
      assert.ok((await store.readLog()).at(-1)!.seq > lastSeq);
    },
    true,
  ],
];

/**
 * Registers the table as `Deno.test`s named `${label}: ...`; the restart
 * cases only when `durable` (the harness then has `reopen`).
 */
export function storeContract(
  label: string,
  open: (options?: KvStoreOptions) => Promise<StoreHarness>,
  options: { durable: boolean },
): void {
  for (const [name, run, durable, storeOptions] of cases) {
    if (durable === true && !options.durable) continue;
    Deno.test({
      name: `${label}: ${name}`,
      fn: async () => {
        const h = await open(storeOptions);
        try {
          await run(h);
        } finally {
          await h.cleanup();
        }
      },
    });
  }
}
