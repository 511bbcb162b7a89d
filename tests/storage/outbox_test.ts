import assert from "node:assert/strict";
import { KvStore } from "../../storage/kv_store.ts";
import { EARLY_WRITE_MS } from "../../storage/outbox.ts";
import type { OutboxDraft } from "../../storage/store.ts";
import { idTime } from "../../wire/id.ts";

const PEER = "ed25519:" + "B".repeat(43);

function msg(th: string, text: string): OutboxDraft {
  return { fields: { t: "msg", th, parts: [{ k: "text", text }] } };
}

Deno.test("outbox: queue hands out ids at once; early once an id is durable", async () => {
  const store = await KvStore.open();
  try {
    const first = store.outboxRecords.queue(PEER, [msg("t", "a")]);
    assert.equal(first.entries.length, 1);
    // Nothing durable yet in a fresh store: the first waits for its commit.
    assert.equal(first.early, false);
    const second = store.outboxRecords.queue(PEER, [msg("t", "b")]);
    // Behind one that waits: never overtakes it.
    assert.equal(second.early, false);
    await Promise.all([first.durable, second.durable]);
    const third = store.outboxRecords.queue(PEER, [msg("t", "c")]);
    assert.equal(third.early, true);
    assert.ok(third.entries[0].id > second.entries[0].id);
    await third.durable;
    // enqueue's caller writes after the commit: later ones wait for it too.
    const waited = store.enqueue(PEER, [msg("t", "d")]);
    assert.equal(store.outboxRecords.queue(PEER, [msg("t", "e")]).early, false);
    await waited;
    assert.equal((await store.outbox(PEER)).length, 5);
  } finally {
    store.close();
  }
});

Deno.test("outbox: an ack of an entry written early is taken once its commit is durable", async () => {
  const store = await KvStore.open();
  try {
    await store.enqueue(PEER, [msg("t", "first")]);
    const queued = store.outboxRecords.queue(PEER, [msg("t", "early")]);
    assert.equal(queued.early, true);
    let durable = false;
    void queued.durable.then(() => durable = true);
    // The remote acks before our commit resolved (it was written early).
    const taken = await store.acked(PEER, "t", queued.entries[0].id);
    assert.equal(durable, true, "taken only after the entry's commit");
    assert.equal(taken, true);
    assert.equal(await store.inOutbox(PEER, queued.entries[0].id), false);
  } finally {
    store.close();
  }
});

Deno.test("outbox: acked entries' deletes ride along later; close commits them", async () => {
  const dir = await Deno.makeTempDir();
  const path = `${dir}/awp.kv`;
  try {
    let store = await KvStore.open(path);
    const [a, b] = await store.enqueue(PEER, [msg("t", "a"), msg("u", "b")]);
    assert.equal(await store.acked(PEER, "t", a.id), true);
    // Out of the outbox at once, though its delete is not committed yet.
    assert.deepEqual((await store.outbox(PEER)).map((e) => e.id), [b.id]);
    assert.deepEqual((await store.replay(PEER, {})).map((e) => e.id), [b.id]);
    store.close();
    await new Promise((r) => setTimeout(r, 50)); // the KV file is released
    store = await KvStore.open(path);
    assert.deepEqual((await store.outbox(PEER)).map((e) => e.id), [b.id]);
    // Ids after a restart start past anything written before a crash, and
    // the first is not written before its commit (a second crash would
    // repeat its id).
    const first = store.outboxRecords.queue(PEER, [msg("t", "c")]);
    assert.equal(first.early, false);
    const [c] = await first.durable;
    assert.ok(idTime(c.id)! >= idTime(b.id)! + EARLY_WRITE_MS);
    store.close();
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
