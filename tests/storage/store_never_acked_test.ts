/**
 * Store rules added for reliable grant/introduce lines and refused blobs,
 * on both stores: a never-acked grant or introduce entry leaves the outbox
 * when a later line to the same peer is acked (any thread); dropBlob
 * removes a ref's remaining chunk entries and nothing else.
 */
import assert from "node:assert/strict";
import { KvStore } from "../../storage/kv_store.ts";
import { MemoryStore } from "../../storage/memory_store.ts";
import type { OutboxDraft, Store } from "../../storage/store.ts";

const PEER = "ed25519:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";
const OTHER = "ed25519:BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB";

const grant: OutboxDraft = {
  fields: { t: "grant", grant: { iss: OTHER, sub: PEER, caps: ["chat"] } },
};
const intro = (th: string): OutboxDraft => ({
  fields: { t: "introduce", th, peer: { key: OTHER } },
});
const msg = (th: string): OutboxDraft => ({
  fields: { t: "msg", th, parts: [{ k: "text", text: "x" }] },
});
const chunk = (th: string, ref: string, n: number): OutboxDraft => ({
  fields: { t: "chunk", th, ref, n, last: false },
  chunk: { path: `/spool/${ref}`, offset: n, length: 1 },
});

async function withStores(fn: (store: Store) => Promise<void>): Promise<void> {
  const memory = new MemoryStore();
  try {
    await fn(memory);
  } finally {
    memory.close();
  }
  const dir = await Deno.makeTempDir({ prefix: "awp-never-acked-" });
  const kv = await KvStore.open(`${dir}/awp.kv`);
  try {
    await fn(kv);
  } finally {
    kv.close();
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("a later ack drops earlier grant and introduce entries of the peer, in any thread", async () => {
  await withStores(async (store) => {
    const e = await store.enqueue(PEER, [
      grant, // 0: dropped by the ack of 3
      intro("t2"), // 1: other thread, dropped too
      msg("t2"), // 2: a msg: needs its own ack
      msg("t1"), // 3: acked
      grant, // 4: later than the ack: kept
    ]);
    await store.enqueue(OTHER, [grant]); // another peer: kept
    assert.equal(await store.acked(PEER, "t1", e[3].id), true);
    assert.deepEqual(
      (await store.outbox(PEER)).map((x) => x.id),
      [e[2].id, e[4].id],
    );
    assert.equal((await store.outbox(OTHER)).length, 1);
    // Unacked grants are replayed like content.
    assert.deepEqual(
      (await store.replay(PEER, {})).map((x) => x.t),
      ["msg", "grant"],
    );
    assert.equal(await store.acked(PEER, "t2", e[2].id), true);
    assert.deepEqual((await store.outbox(PEER)).map((x) => x.id), [e[4].id]);
  });
});

Deno.test("dropBlob removes only the remaining chunks of that ref", async () => {
  await withStores(async (store) => {
    const e = await store.enqueue(PEER, [
      chunk("t1", "big", 0),
      chunk("t1", "small", 0),
      chunk("t1", "big", 1),
      msg("t1"),
    ]);
    await store.enqueue(OTHER, [chunk("t1", "big", 0)]);
    assert.equal(await store.dropBlob(PEER, "big"), 2);
    assert.deepEqual(
      (await store.outbox(PEER)).map((x) => x.id),
      [e[1].id, e[3].id],
    );
    assert.equal((await store.outbox(OTHER)).length, 1);
    assert.equal(await store.dropBlob(PEER, "big"), 0);
    await assert.rejects(() => store.dropBlob("", "big"), /dropBlob: peer/);
  });
});
