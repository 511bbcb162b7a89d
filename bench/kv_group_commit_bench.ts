/**
 * Micro-benchmark of the KV group commit on a temp KV file: 100 outbox
 * entries committed as one `enqueue` call (one commit), as 100 concurrent
 * calls (merged by the store's committer), and as 100 awaited calls (100
 * commits); plus raw Deno KV for scale.
 *
 * @example
 * ```sh
 * deno bench -A --unstable-kv bench/kv_group_commit_bench.ts
 * ```
 *
 * @module
 */

import { KvStore } from "../storage/kv_store.ts";
import type { OutboxDraft } from "../storage/store.ts";

const dir = await Deno.makeTempDir({ prefix: "awp-bench-kv-" });
const store = await KvStore.open(`${dir}/awp.kv`);
const raw = await Deno.openKv(`${dir}/raw.kv`);
// Remove the files when the bench process ends, whatever happens.
globalThis.addEventListener("unload", () => {
  store.close();
  raw.close();
  Deno.removeSync(dir, { recursive: true });
});

const PEER = "ed25519:6EPXkq2TFR8tWi49c2x809PIBLePjuGFm-CQqb859bw";
const N = 100;

function draft(i: number): OutboxDraft {
  return {
    fields: {
      t: "msg",
      th: `t${i % 10}`,
      parts: [{ k: "text", text: "x".repeat(100) }],
    },
  };
}
const drafts = Array.from({ length: N }, (_, i) => draft(i));

async function drain(): Promise<void> {
  // Ack everything so the outbox does not grow across iterations.
  for (const e of await store.outbox(PEER)) await store.acked(PEER, e.th, e.id);
}

Deno.bench({
  name: "KvStore.enqueue: 100 drafts in one call (one commit)",
  group: "kv",
  baseline: true,
  async fn(b) {
    b.start();
    await store.enqueue(PEER, drafts);
    b.end();
    await drain();
  },
});

Deno.bench({
  name: "KvStore.enqueue: 100 concurrent calls (group commit)",
  group: "kv",
  async fn(b) {
    b.start();
    await Promise.all(drafts.map((d) => store.enqueue(PEER, [d])));
    b.end();
    await drain();
  },
});

Deno.bench({
  name: "KvStore.enqueue: 100 awaited calls (100 commits)",
  group: "kv",
  async fn(b) {
    b.start();
    for (const d of drafts) await store.enqueue(PEER, [d]);
    b.end();
    await drain();
  },
});

let k = 0;
Deno.bench({
  name: "Deno KV: 100 sets in one atomic",
  group: "raw",
  baseline: true,
  async fn() {
    const op = raw.atomic();
    for (let i = 0; i < N; i++) op.set(["x", k++], "x".repeat(150));
    await op.commit();
  },
});

Deno.bench({
  name: "Deno KV: 100 awaited sets",
  group: "raw",
  async fn() {
    for (let i = 0; i < N; i++) await raw.set(["x", k++], "x".repeat(150));
  },
});
