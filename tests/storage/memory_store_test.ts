import assert from "node:assert/strict";
import { MemoryStore } from "../../storage/memory_store.ts";
import { storeContract } from "./store_contract.ts";

storeContract("MemoryStore", (options) => {
  const store = new MemoryStore(options);
  return Promise.resolve({
    store,
    cleanup: () => Promise.resolve(store.close()),
  });
}, { durable: false });

Deno.test("MemoryStore: a bad maxLogEntries is refused in one line", () => {
  for (const bad of [0, -1, 1.5, NaN, "10"]) {
    assert.throws(
      () => new MemoryStore({ maxLogEntries: bad as number }),
      (e: Error) =>
        e instanceof RangeError && /^maxLogEntries must be/.test(e.message) &&
        !e.message.includes("\n"),
    );
  }
  new MemoryStore({ maxLogEntries: Infinity }).close();
});

Deno.test("MemoryStore: list order and snapshots hold across many blocks", async () => {
  const store = new MemoryStore({ maxLogEntries: Infinity });
  try {
    // Received ids out of order, in several threads: inserts all over the
    // key space, splitting blocks; then reads while writes go on.
    const ids = Array.from({ length: 3000 }, (_, i) => i)
      .sort((a, b) => ((a * 7919) % 3001) - ((b * 7919) % 3001))
      .map((i) => `I${String(i).padStart(5, "0")}`);
    for (let i = 0; i < ids.length; i += 100) {
      await store.receive(
        "ed25519:p",
        ids.slice(i, i + 100).map((id) => ({
          id,
          t: "msg",
          th: `t${id.charCodeAt(5) % 3}`,
          message: { t: "msg" },
          raw: "{}",
        })),
      );
    }
    const log = await store.readLog();
    assert.equal(log.length, 3000);
    assert.deepEqual(log.map((e) => e.id), ids);
    const seen = await store.seen("ed25519:p");
    assert.deepEqual(Object.keys(seen).sort(), ["t0", "t1", "t2"]);
    // Entries enqueued and acked while a listing is in progress.
    const entries = await store.enqueue(
      "ed25519:p",
      Array.from({ length: 1500 }, (_, i) => ({
        fields: { t: "msg", th: "t", parts: [], i },
      })),
    );
    const reading = store.outbox("ed25519:p");
    const acks = entries.filter((_, i) => i % 2 === 0).map((e) =>
      store.acked("ed25519:p", "t", e.id)
    );
    const [during] = await Promise.all([reading, ...acks]);
    // The listing reads one snapshot of the rows; an entry acked meanwhile
    // is left out at once (the outbox index drops it before its delete
    // commits), so it holds exactly the odd ones, in order.
    assert.deepEqual(
      during.map((e) => e.id),
      entries.filter((_, i) => i % 2 === 1).map((e) => e.id),
    );
    const after = await store.outbox("ed25519:p");
    assert.deepEqual(
      after.map((e) => e.id),
      entries.filter((_, i) => i % 2 === 1).map((e) => e.id),
    );
    // Everything acked: the outbox is empty again.
    await Promise.all(after.map((e) => store.acked("ed25519:p", "t", e.id)));
    assert.deepEqual(await store.outbox("ed25519:p"), []);
  } finally {
    store.close();
  }
});
