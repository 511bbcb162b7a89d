/**
 * The committer keeps threads' rows (`thr`: record and `seen` marker) in memory
 * (`storage/kv/committed_cache.ts`): a received line reads them without a
 * KV round trip, and the memory never says what Deno KV does not hold,
 * whoever wrote last (markRead, retention, a failed commit).
 */

import assert from "node:assert/strict";
import { CommittedCache } from "../../../storage/kv/committed_cache.ts";
import { encodeKey, type Key } from "../../../storage/kv/key.ts";
import { DenoKvBackend } from "../../../storage/kv/kv_backend.ts";
import { readRecord } from "../../../storage/kv/split_record.ts";
import {
  countingKvStore,
  receivedLine,
} from "../../helpers/counting_kv_backend.ts";

const PEER = "ed25519:CCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCC";

const line = receivedLine;

async function fixture() {
  const f = await countingKvStore("awp-seen-cache-");
  // A second handle on the same file: what a restart would read.
  const disk = new DenoKvBackend(await Deno.openKv(f.path));
  const onDisk = (kind: string, th: string) =>
    readRecord<Record<string, unknown>>(disk, [kind, PEER, th]);
  /** The thread row's marker on disk. */
  const seenOnDisk = async (th: string) =>
    (await onDisk("thr", th))?.seen as Record<string, unknown> | undefined;
  const dispose = f[Symbol.asyncDispose];
  return Object.assign(f, {
    onDisk,
    seenOnDisk,
    async [Symbol.asyncDispose]() {
      disk.close();
      await dispose();
    },
  });
}

Deno.test("CommittedCache: keeps its kinds, forgets a failed commit's keys, stays bounded", () => {
  const cache = new CommittedCache(["seen"]);
  const k = (n: number): Key => ["seen", "p", `t${n}`];
  assert.equal(cache.covers(["thr", "p", "t"]), false);
  cache.committed([{ key: ["thr", "p", "t"], value: 1 }, {
    key: k(0),
    value: undefined,
  }]);
  assert.equal(cache.has(encodeKey(["thr", "p", "t"])), false);
  assert.equal(cache.has(encodeKey(k(0))), true, "a delete is known too");
  assert.equal(cache.get(encodeKey(k(0))), undefined);
  cache.failed([{ key: k(0), value: 5 }]);
  assert.equal(cache.has(encodeKey(k(0))), false);
  for (let n = 0; n < 10_000; n++) {
    cache.fill(k(n), encodeKey(k(n)), n, cache.ticket());
  }
  assert.equal(cache.has(encodeKey(k(0))), false, "the oldest went first");
  assert.equal(cache.has(encodeKey(k(9_999))), true);
});

Deno.test("a thread's next received line reads no KV; markRead before it counts", async () => {
  await using f = await fixture();
  await f.store.receive(PEER, [line("t", 1)]);
  const gets = f.backend.gets;
  await f.store.receive(PEER, [line("t", 2)]);
  assert.equal(f.backend.gets, gets, "the thread row came from memory");
  await f.store.patchThread(PEER, "t", { read: true });
  await f.store.receive(PEER, [line("t", 3)]);
  assert.equal((await f.store.thread(PEER, "t"))?.unread, 1);
  assert.equal((await f.onDisk("thr", "t"))?.unread, 1);
  assert.deepEqual(await f.store.seen(PEER), { t: line("t", 3).id });
});

Deno.test("retention's dedup floor and forgotten seen are what the next line sees", async () => {
  await using f = await fixture();
  await f.store.receive(PEER, [line("open", 1), line("open", 2)]);
  await f.store.receive(PEER, [line("ended", 5)]);
  await f.store.patchThread(PEER, "ended", {
    mine: { state: "done", ts: "2026-01-01T00:00:00Z" },
  });
  await f.store.expireOutbox(Date.now() + 60_000);
  assert.equal(await f.seenOnDisk("ended"), undefined);
  assert.equal((await f.seenOnDisk("open"))?.floor, line("open", 2).id);
  // Below the floor: a replay, though its rx row is gone.
  const [replay] = await f.store.receive(PEER, [line("open", 1)]);
  assert.equal(replay.duplicate, true);
  // The ended thread starts over: its old max is forgotten.
  const [fresh] = await f.store.receive(PEER, [line("ended", 3)]);
  assert.equal(fresh.duplicate, false);
  assert.equal((await f.seenOnDisk("ended"))?.max, line("ended", 3).id);
  assert.deepEqual(await f.store.seen(PEER), {
    open: line("open", 2).id,
    ended: line("ended", 3).id,
  });
});

Deno.test("a failed commit leaves memory as KV is: the line is new when it comes again", async () => {
  await using f = await fixture();
  await f.store.receive(PEER, [line("t", 1)]);
  f.backend.failNext = true;
  await assert.rejects(f.store.receive(PEER, [line("t", 2)]), /disk full/);
  assert.equal((await f.seenOnDisk("t"))?.max, line("t", 1).id);
  const [again] = await f.store.receive(PEER, [line("t", 2)]);
  assert.equal(again.duplicate, false);
  assert.equal((await f.store.thread(PEER, "t"))?.unread, 2);
  assert.equal((await f.seenOnDisk("t"))?.max, line("t", 2).id);
  // A putThread (another writer of thr) is what the next line builds on.
  const record = (await f.store.thread(PEER, "t"))!;
  await f.store.putThread({ ...record, unread: 10 });
  await f.store.receive(PEER, [line("t", 3)]);
  assert.equal((await f.onDisk("thr", "t"))?.unread, 11);
});

Deno.test("CommittedCache: a read that a commit overlapped is not kept", () => {
  const cache = new CommittedCache(["seen"]);
  const key: Key = ["seen", "p", "t"];
  const k = encodeKey(key);
  // Started before a commit that resolves before the read does.
  const early = cache.ticket();
  cache.begin();
  const during = cache.ticket(); // read while the commit is in flight
  cache.committed([{ key: ["other"], value: 1 }]);
  cache.fill(key, k, "old", early);
  cache.fill(key, k, "old", during);
  assert.equal(cache.has(k), false);
  // Started and resolved with no commit in between: kept.
  const quiet = cache.ticket();
  cache.fill(key, k, "now", quiet);
  assert.equal(cache.get(k), "now");
});
