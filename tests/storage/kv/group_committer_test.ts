/**
 * The group committer builds the next batch while the last one commits
 * (`storage/kv/group_committer.ts`): the builds see its writes, their
 * commit starts only once it is durable, and if it fails, what was built
 * on its writes fails too. Real Deno KV, with commits the test holds.
 */

import assert from "node:assert/strict";
import { GroupCommitter } from "../../../storage/kv/group_committer.ts";
import type { Mutation } from "../../../storage/kv/key.ts";
import { DenoKvBackend } from "../../../storage/kv/kv_backend.ts";

/** Real Deno KV whose commits wait for the test, and may fail. */
class HeldBackend extends DenoKvBackend {
  commits: Array<{ keys: string[]; release(fail?: boolean): void }> = [];
  #arrived: Array<() => void> = [];

  override commit(mutations: Mutation[]): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      let released = false;
      this.commits.push({
        keys: mutations.map((m) => String(m.key[0])),
        release: (fail) => {
          if (released) return;
          released = true;
          if (fail) reject(new Error("disk full"));
          else super.commit(mutations).then(resolve, reject);
        },
      });
      for (const wake of this.#arrived.splice(0)) wake();
    });
  }

  /** Resolves once `n` commits have started. */
  async started(n: number): Promise<void> {
    while (this.commits.length < n) {
      await new Promise<void>((r) => this.#arrived.push(r));
    }
  }
}

async function committer() {
  const backend = new HeldBackend(await Deno.openKv(":memory:"));
  return { backend, kv: new GroupCommitter(backend) };
}

Deno.test("group commit: the next batch is built while the last commits, reads its writes, and commits after it", async () => {
  const { backend, kv } = await committer();
  const first = kv.submit(false, (tx) => tx.set(["a"], 1));
  await backend.started(1);
  let built = false;
  let seen: unknown;
  const second = kv.submit(false, async (tx) => {
    built = true;
    seen = await tx.get(["a"]); // not durable yet: from the overlay
    tx.set(["b"], 2);
  });
  // Built during the first commit, not committed before it resolved.
  for (let i = 0; i < 20 && !built; i++) {
    await new Promise((r) => setTimeout(r, 1));
  }
  assert.equal(built, true, "built while the first commit is in flight");
  assert.equal(seen, 1);
  assert.equal(backend.commits.length, 1, "its commit waits for the first");
  backend.commits[0].release();
  await first;
  await backend.started(2);
  assert.deepEqual(backend.commits[1].keys, ["b"]);
  backend.commits[1].release();
  await second;
  assert.equal(await backend.get(["b"]), 2);
  kv.close();
});

Deno.test("group commit: a batch built on a commit that fails fails with it; the next one starts afresh", async () => {
  const { backend, kv } = await committer();
  const first = kv.submit(false, (tx) => tx.set(["a"], 1));
  first.catch(() => {});
  await backend.started(1);
  const second = kv.submit(false, async (tx) => {
    tx.set(["b"], (await tx.get(["a"]) as number) + 1);
  });
  second.catch(() => {});
  await new Promise((r) => setTimeout(r, 5)); // built meanwhile
  backend.commits[0].release(true);
  await assert.rejects(first, /disk full/);
  await assert.rejects(second, /disk full/);
  assert.equal(backend.commits.length, 1, "the second never reached KV");
  const third = kv.submit(false, async (tx) => {
    tx.set(["c"], (await tx.get(["a"])) ?? "none");
  });
  await backend.started(2);
  backend.commits[1].release();
  await third;
  assert.equal(await backend.get(["c"]), "none", "the failed write is gone");
  kv.close();
});

Deno.test("group commit: calls arriving one by one during a commit share the next one", async () => {
  const { backend, kv } = await committer();
  const first = kv.submit(false, (tx) => tx.set(["a"], 1));
  await backend.started(1);
  const later: Promise<void>[] = [];
  for (const key of ["b", "c", "d"]) {
    later.push(kv.submit(false, (tx) => tx.set([key], key)));
    await new Promise((r) => setTimeout(r, 2)); // each built on arrival
  }
  backend.commits[0].release();
  await first;
  await backend.started(2);
  assert.deepEqual(backend.commits[1].keys, ["b", "c", "d"]);
  backend.commits[1].release();
  await Promise.all(later);
  assert.equal(backend.commits.length, 2);
  kv.close();
});

Deno.test("group commit: while calls keep coming, the next batch commits as soon as the one in flight is done", async () => {
  const { backend, kv } = await committer();
  const first = kv.submit(false, (tx) => tx.set(["a"], 0));
  await backend.started(1);
  let n = 0;
  let secondStarted = false;
  const chain: Promise<void>[] = [];
  // Each build queues the next call: the queue is never empty meanwhile.
  const next = () =>
    chain.push(kv.submit(false, async (tx) => {
      await new Promise((r) => setTimeout(r, 1));
      tx.set(["k", n], n);
      if (++n === 3) backend.commits[0].release();
      if (backend.commits.length >= 2) secondStarted = true;
      if (n < 60 && !secondStarted) next();
    }));
  next();
  await first;
  while (!secondStarted && n < 60) await new Promise((r) => setTimeout(r, 5));
  assert.equal(secondStarted, true, "the second commit started mid-stream");
  assert.ok(n < 60);
  let settled = false;
  const all = Promise.all(chain).then(() => settled = true);
  while (!settled) {
    for (const c of backend.commits) c.release();
    await new Promise((r) => setTimeout(r, 2));
  }
  await all;
  kv.close();
});
