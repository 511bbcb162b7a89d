/**
 * Retention lists the exact received ids (`rx`) only when some may be
 * older than its cut-off (`RX_FLOOR`, storage/received_lines.ts): the pass
 * soon after open does not read back every id a burst just received.
 */

import assert from "node:assert/strict";
import {
  countingKvStore,
  receivedLine,
} from "../helpers/counting_kv_backend.ts";

const PEER = "ed25519:RRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRR";

Deno.test("retention skips the rx listing before the floor, and folds old ids past it", async () => {
  await using f = await countingKvStore("awp-rx-floor-");
  await f.store.identity(() => new Uint8Array(32).fill(7)); // a new store
  const atOpen = f.backend.lists.get("rx") ?? 0; // it checked for none
  await f.store.receive(
    PEER,
    Array.from({ length: 20 }, (_, i) => receivedLine("t", i + 1)),
  );
  // A day's retention, right after: nothing received can be that old.
  await f.store.expireOutbox(Date.now() - 86_400_000);
  assert.equal(f.backend.lists.get("rx") ?? 0, atOpen, "rx not listed");
  // A cut-off past every receive: listed once, each id folded.
  await f.store.expireOutbox(Date.now() + 1000);
  assert.equal(f.backend.lists.get("rx"), atOpen + 1);
  const left = [];
  for await (const e of f.backend.list({ prefix: ["rx"] })) left.push(e);
  assert.equal(left.length, 0, "folded into the thread's floor");
  assert.deepEqual(await f.store.seen(PEER), { t: receivedLine("t", 20).id });
  // And a duplicate of a folded id is still known.
  const [again] = await f.store.receive(PEER, [receivedLine("t", 3)]);
  assert.equal(again.duplicate, true);
  // The floor moved to that listing: a later day-old cut skips it again.
  const lists = f.backend.lists.get("rx");
  await f.store.expireOutbox(Date.now() - 86_400_000);
  assert.equal(f.backend.lists.get("rx"), lists);
});
