/**
 * A resume preloads the peer's thread rows into the committer's cache
 * (`ReceivedLines.seen`, `CommittedCache.preload`): the next receive reads
 * them, and the absence of a row, from memory, and answers dedup and
 * `seen` exactly as reading KV does, also for a thread the preload's cap
 * left out and after a failed commit.
 */

import assert from "node:assert/strict";
import { GroupCommitter } from "../../storage/kv/group_committer.ts";
import type { Key, Mutation } from "../../storage/kv/key.ts";
import { DenoKvBackend } from "../../storage/kv/kv_backend.ts";
import { ReceivedLines } from "../../storage/received_lines.ts";
import type { IncomingLine } from "../../storage/store.ts";
import { TrafficLog } from "../../storage/traffic_log.ts";
import { receivedLine as line } from "../helpers/counting_kv_backend.ts";

const PEER = "ed25519:FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF";

/** Deno KV whose single-key reads are counted by the key's first part. */
class KindCountingBackend extends DenoKvBackend {
  gets = new Map<string, number>();
  failNext = false;
  override get(key: Key): Promise<unknown> {
    const kind = String(key[0]);
    this.gets.set(kind, (this.gets.get(kind) ?? 0) + 1);
    return super.get(key);
  }
  override commit(mutations: Mutation[]): Promise<void> {
    if (this.failNext) {
      this.failNext = false;
      return Promise.reject(new Error("disk full"));
    }
    return super.commit(mutations);
  }
}

/** Received lines over the KV file at `path`, preloading up to `cap` rows. */
async function openLines(path: string, cap?: number) {
  const backend = new KindCountingBackend(await Deno.openKv(path));
  const c = new GroupCommitter(backend, ["thr"]);
  const log = new TrafficLog(c, { seq: 0, logBytes: 0 }, {});
  const lines = new ReceivedLines(c, log, cap);
  return { backend, lines, close: () => c.close() };
}

/** Threads t0..t4 with lines 1..3 each, in a fresh KV file. */
async function withHistory(): Promise<{ path: string; dir: string }> {
  const dir = await Deno.makeTempDir({ prefix: "awp-preload-" });
  const path = `${dir}/store.kv`;
  const s = await openLines(path);
  const old: IncomingLine[] = [];
  for (let t = 0; t < 5; t++) {
    for (let n = 1; n <= 3; n++) old.push(line(`t${t}`, t * 10 + n));
  }
  await s.lines.receive(PEER, old);
  s.close();
  return { path, dir };
}

/** Old (duplicate) and new lines in known threads, and a new thread. */
const NEXT: IncomingLine[] = [
  line("t0", 2), // duplicate
  line("t0", 5),
  line("t1", 13), // duplicate (its highest)
  line("t3", 31), // duplicate, in a thread a small cap leaves out
  line("t4", 44),
  line("t9", 91), // a thread without a row
  line("t9", 91), // and again in the same call
];

/** What a store answers for NEXT after a resume, with `cap` rows preloaded. */
async function resumeAndReceive(path: string, cap: number) {
  const s = await openLines(path, cap);
  try {
    const seenBefore = await s.lines.seen(PEER);
    s.backend.gets.clear();
    const out = await s.lines.receive(PEER, NEXT);
    const thrGets = s.backend.gets.get("thr") ?? 0;
    const seenAfter = await s.lines.seen(PEER);
    // A second call reads the rows as the first left them.
    const again = await s.lines.receive(PEER, [line("t9", 91), line("t9", 92)]);
    return {
      seenBefore,
      seenAfter,
      duplicates: out.map((o) => o.duplicate),
      again: again.map((o) => o.duplicate),
      thrGets,
    };
  } finally {
    s.close();
  }
}

Deno.test("preloaded thread rows answer dedup and seen as KV does; a thread the cap left out is read from KV", async () => {
  const reads = new Map<number, Awaited<ReturnType<typeof resumeAndReceive>>>();
  for (const cap of [0, 2, 512]) {
    const { path, dir } = await withHistory();
    try {
      reads.set(cap, await resumeAndReceive(path, cap));
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  }
  const none = reads.get(0)!;
  assert.deepEqual(none.duplicates, [
    true,
    false,
    true,
    true,
    false,
    false,
    true,
  ]);
  assert.deepEqual(none.again, [true, false]);
  for (const cap of [2, 512]) {
    const r = reads.get(cap)!;
    assert.deepEqual(r.seenBefore, none.seenBefore, `cap ${cap}`);
    assert.deepEqual(r.duplicates, none.duplicates, `cap ${cap}`);
    assert.deepEqual(r.again, none.again, `cap ${cap}`);
    assert.deepEqual(r.seenAfter, none.seenAfter, `cap ${cap}`);
  }
  // Without a preload each of the five threads' rows is read from KV.
  assert.equal(none.thrGets, 5);
  // Cap 2: t0 and t1 come from memory; t3, t4 and t9 (not known absent:
  // the peer has more rows than were preloaded) from KV.
  assert.equal(reads.get(2)!.thrGets, 3);
  // All rows preloaded: the rows, and t9's absence, from memory.
  assert.equal(reads.get(512)!.thrGets, 0);
});

Deno.test("after a failed commit a preloaded peer's rows are read from KV again, and dedup holds", async () => {
  const { path, dir } = await withHistory();
  try {
    const s = await openLines(path);
    try {
      await s.lines.seen(PEER);
      s.backend.failNext = true;
      await assert.rejects(
        s.lines.receive(PEER, [line("t8", 81)]),
        /disk full/,
      );
      s.backend.gets.clear();
      // t8 may be in KV or not after a failed commit: its row is read.
      const out = await s.lines.receive(PEER, [line("t8", 81), line("t0", 1)]);
      assert.deepEqual(out.map((o) => o.duplicate), [false, true]);
      assert.ok((s.backend.gets.get("thr") ?? 0) >= 1);
    } finally {
      s.close();
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

/** Deno KV that counts the most `rx` reads in flight at once. */
class ConcurrencyBackend extends DenoKvBackend {
  inFlight = 0;
  most = 0;
  override async get(key: Key): Promise<unknown> {
    if (key[0] !== "rx") return await super.get(key);
    this.most = Math.max(this.most, ++this.inFlight);
    try {
      return await super.get(key);
    } finally {
      this.inFlight--;
    }
  }
}

Deno.test("a receive reads the rx rows of new threads' first lines together; a line repeated in a later group of the call is a duplicate", async () => {
  const backend = new ConcurrencyBackend(await Deno.openKv(":memory:"));
  const c = new GroupCommitter(backend, ["thr"]);
  const lines = new ReceivedLines(
    c,
    new TrafficLog(c, { seq: 0, logBytes: 0 }, {}),
  );
  try {
    const first = Array.from({ length: 6 }, (_, t) => line(`n${t}`, 1));
    const out = await lines.receive(PEER, first);
    assert.deepEqual(out.map((o) => o.duplicate), Array(6).fill(false));
    assert.equal(backend.most, 6, "six reads in flight at once");
    // Over 150 lines: the repeat lands in a later atomic group.
    const long = [
      line("r", 1),
      ...Array.from({ length: 200 }, (_, i) => line("r", i + 2)),
      line("r", 1),
      line("n0", 1),
    ];
    const again = await lines.receive(PEER, long);
    assert.deepEqual(
      again.map((o) => o.duplicate),
      [false, ...Array(200).fill(false), true, true],
    );
  } finally {
    c.close();
  }
});
