/**
 * A handshake's `resume` reads the peer's markers (the `seen` of its thread
 * rows) from memory after
 * the first KV list (`storage/seen_index.ts`), and the memory never says
 * what Deno KV does not hold: after new lines, retention, an ended thread
 * forgotten, or a failed commit, it equals what a restart would list.
 */

import assert from "node:assert/strict";
import { DenoKvBackend } from "../../storage/kv/kv_backend.ts";
import { SeenIndex } from "../../storage/seen_index.ts";
import { KvStore } from "../../storage/kv_store.ts";
import {
  countingKvStore,
  receivedLine,
} from "../helpers/counting_kv_backend.ts";

const PEER = "ed25519:DDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDD";
const OTHER = "ed25519:EEEEEEEEEEEEEEEEEEEEEEEEEEEEEEEEEEEEEEEEEEE";

const line = receivedLine;

async function fixture() {
  const f = await countingKvStore("awp-seen-index-");
  /** What a restarted store lists from the same file. */
  const onDisk = async (peer: string) => {
    const fresh = new KvStore(new DenoKvBackend(await Deno.openKv(f.path)));
    try {
      return await fresh.seen(peer);
    } finally {
      fresh.close();
    }
  };
  return Object.assign(f, { onDisk });
}

Deno.test("seen: listed from KV once per peer, then from memory, always as KV holds it", async () => {
  await using f = await fixture();
  assert.deepEqual(await f.store.seen(PEER), {});
  await f.store.receive(PEER, [line("a", 1), line("b", 2)]);
  await f.store.receive(OTHER, [line("a", 3)]);
  const check = async () => {
    assert.deepEqual(await f.store.seen(PEER), await f.onDisk(PEER));
    assert.deepEqual(await f.store.seen(OTHER), await f.onDisk(OTHER));
  };
  await check();
  assert.deepEqual(await f.store.seen(PEER), {
    a: line("a", 1).id,
    b: line("b", 2).id,
  });
  const lists = f.backend.lists.get("thr") ?? 0;
  for (let i = 0; i < 5; i++) await f.store.seen(PEER);
  await f.store.receive(PEER, [line("a", 4), line("c", 5)]);
  await check();
  assert.equal(
    f.backend.lists.get("thr") ?? 0,
    lists,
    "no KV list after the first",
  );
  // Retention: the ended thread's marker goes, the open one's floor rises.
  await f.store.patchThread(PEER, "b", {
    mine: { state: "done", ts: "2026-01-01T00:00:00Z" },
  });
  const beforeRetention = f.backend.lists.get("thr") ?? 0;
  await f.store.expireOutbox(Date.now() + 60_000);
  // Retention lists every thread row once (ended threads), not per peer.
  assert.equal(f.backend.lists.get("thr") ?? 0, beforeRetention + 1);
  await check();
  assert.equal((await f.store.seen(PEER)).b, undefined);
  assert.equal(
    f.backend.lists.get("thr") ?? 0,
    beforeRetention + 1,
    "still none for seen",
  );
});

Deno.test("seen: a failed commit drops the peer from memory; the next read lists KV", async () => {
  await using f = await fixture();
  await f.store.receive(PEER, [line("t", 1)]);
  assert.deepEqual(await f.store.seen(PEER), { t: line("t", 1).id });
  const lists = f.backend.lists.get("thr") ?? 0;
  f.backend.failNext = true;
  await assert.rejects(f.store.receive(PEER, [line("t", 2)]), /disk full/);
  assert.deepEqual(await f.store.seen(PEER), await f.onDisk(PEER));
  assert.deepEqual(await f.store.seen(PEER), { t: line("t", 1).id });
  assert.equal(f.backend.lists.get("thr") ?? 0, lists + 1, "listed again");
  await f.store.receive(PEER, [line("t", 2)]);
  assert.deepEqual(await f.store.seen(PEER), { t: line("t", 2).id });
});

Deno.test("SeenIndex: a list that a commit overlapped is not kept", async () => {
  const index = new SeenIndex();
  const encoder = new TextEncoder();
  let loads = 0;
  const load = () => {
    loads++;
    // A commit of a thread row resolves while this list runs.
    index.changed([{
      key: ["thr", "p", "t"],
      value: encoder.encode('{"seen":{"th":"t","id":"02"}}'),
    }], true);
    return Promise.resolve(new Map([["t", { seen: { th: "t", id: "01" } }]]));
  };
  assert.deepEqual(await index.seen("p", load), { t: "01" });
  await index.seen("p", load);
  assert.equal(loads, 2, "the overlapped list was not kept");
  // Kept once no commit overlapped it; later commits update it.
  const quiet = () =>
    Promise.resolve(new Map([["t", { seen: { th: "t", id: "02" } }]]));
  await index.seen("p", quiet);
  index.changed([{
    key: ["thr", "p", "u"],
    value: encoder.encode('{"seen":{"th":"u","id":"03"}}'),
  }], true);
  index.changed([{ key: ["thr", "p", "t"], value: undefined }], true);
  assert.deepEqual(await index.seen("p", load), { u: "03" });
  index.changed(
    [{ key: ["thr", "p", "u"], value: encoder.encode("{}") }],
    false,
  );
  assert.deepEqual(await index.seen("p", quiet), { t: "02" }, "failed: listed");
});

Deno.test("SeenIndex: bounded by threads over all peers; the least recently read goes", async () => {
  const index = new SeenIndex();
  let loads = 0;
  const threads = (n: number) => () => {
    loads++;
    return Promise.resolve(
      new Map(
        Array.from(
          { length: n },
          (_, i) => [`t${i}`, { seen: { th: `t${i}`, id: "01" } }],
        ),
      ),
    );
  };
  for (let p = 0; p < 20; p++) await index.seen(`p${p}`, threads(1_000));
  assert.equal(loads, 20);
  await index.seen("p19", threads(1_000));
  assert.equal(loads, 20, "the last read is kept");
  await index.seen("p0", threads(1_000));
  assert.equal(loads, 21, "the first was dropped to stay under the bound");
  // A peer with too many threads is never kept.
  await index.seen("big", threads(5_000));
  await index.seen("big", threads(5_000));
  assert.equal(loads, 23);
});
