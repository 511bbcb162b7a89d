/**
 * The received lines of one `receive` call are written in atomic groups of
 * several lines, each with its threads' seen markers and records as of its
 * last line: a big call fits Deno KV's limits, and after a reopen (what a
 * crash leaves) the counters, seen and dedup agree with the lines.
 */

import assert from "node:assert/strict";
import { KvStore } from "../../storage/kv_store.ts";
import type { IncomingLine } from "../../storage/store.ts";

const PEER = "ed25519:BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB";

function line(th: string, n: number, text = "hi"): IncomingLine {
  const id = `01J${String(n).padStart(10, "0")}`;
  const message = {
    t: "msg",
    id,
    ts: "2026-01-01T00:00:00Z",
    th,
    parts: [{ k: "text", text }],
  };
  return { id, t: "msg", th, message, raw: JSON.stringify(message) };
}

Deno.test("one receive of 1,000 small lines and of 12 big ones commits in groups within Deno KV's limits", async () => {
  const dir = await Deno.makeTempDir({ prefix: "awp-received-" });
  const path = `${dir}/store.kv`;
  try {
    let store = await KvStore.open(path);
    const small = Array.from({ length: 1000 }, (_, i) => line(`t${i % 3}`, i));
    const big = Array.from(
      { length: 12 },
      (_, i) => line("big", 2000 + i, '"é'.repeat(60_000)),
    );
    const out = await store.receive(PEER, [...small, ...big]);
    assert.equal(out.filter((o) => o.duplicate).length, 0);
    const seqs = out.map((o) => o.seq!);
    assert.deepEqual(seqs, [...seqs].sort((a, b) => a - b));
    store.close();

    store = await KvStore.open(path);
    try {
      assert.deepEqual(await store.seen(PEER), {
        t0: small[999].id,
        t1: small[997].id,
        t2: small[998].id,
        big: big[11].id,
      });
      assert.equal((await store.thread(PEER, "t0"))?.unread, 334);
      assert.equal((await store.thread(PEER, "big"))?.unread, 12);
      // Every line is known: all duplicates now, and the log goes on.
      const again = await store.receive(PEER, [...small, ...big]);
      assert.ok(again.every((o) => o.duplicate));
      const [next] = await store.receive(PEER, [line("t0", 5000)]);
      assert.equal(next.seq, seqs.at(-1)! + 1);
    } finally {
      store.close();
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
