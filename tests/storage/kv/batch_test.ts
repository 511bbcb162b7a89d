import assert from "node:assert/strict";
import { Batch } from "../../../storage/kv/batch.ts";
import type { Mutation } from "../../../storage/kv/key.ts";

Deno.test("a key written again in a batch counts once against the commit's limits", () => {
  const batch = new Batch();
  // Each received line: its own row, plus the thread's seen record and the
  // log's seq, which every line of the batch writes again.
  let lines = 0;
  for (let i = 0; i < 600; i++) {
    const group: Mutation[] = [
      { key: ["rx", "p", "t", `id${i}`], value: 1 },
      { key: ["seen", "p", "t"], value: new Uint8Array(40) },
      { key: ["seq", "log"], value: i },
    ];
    if (!batch.fits(group)) break;
    batch.add(group);
    lines++;
  }
  assert.equal(lines, 600, "600 × 3 writes are 602 keys: one commit");
  assert.equal(batch.size, 602);
  // The latest write of a key is the one committed.
  assert.equal(
    batch.mutations.get([...batch.mutations.keys()].at(-1)!)?.value,
    599,
  );
  // Distinct keys still stop at Deno KV's 1,000 mutations.
  let more = 0;
  while (batch.fits([{ key: ["x", more], value: 1 }])) {
    batch.add([{ key: ["x", more], value: 1 }]);
    more++;
  }
  assert.ok(batch.size <= 1000 && batch.size >= 980, `size ${batch.size}`);
});
