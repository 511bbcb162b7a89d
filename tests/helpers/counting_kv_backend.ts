/**
 * Test helpers for the store's memory of KV: a real Deno KV backend whose
 * reads are counted and whose next commit can be made to fail, and received
 * lines to commit through it.
 *
 * @module
 */

import type { Key, KeyRange, Mutation } from "../../storage/kv/key.ts";
import { DenoKvBackend } from "../../storage/kv/kv_backend.ts";
import type { IncomingLine } from "../../storage/store.ts";
import { KvStore } from "../../storage/kv_store.ts";

/** Real Deno KV whose reads are counted and whose next commit can fail. */
export class CountingKvBackend extends DenoKvBackend {
  /** Single-key reads so far. */
  gets = 0;
  /** Range lists so far, by the first part of their prefix. */
  lists = new Map<string, number>();
  /** The next commit rejects with "disk full" (once). */
  failNext = false;

  override get(key: Key): Promise<unknown> {
    this.gets++;
    return super.get(key);
  }

  override list(range: KeyRange): AsyncIterable<{ key: Key; value: unknown }> {
    if ("prefix" in range) {
      const kind = String(range.prefix[0]);
      this.lists.set(kind, (this.lists.get(kind) ?? 0) + 1);
    }
    return super.list(range);
  }

  override commit(mutations: Mutation[]): Promise<void> {
    if (this.failNext) {
      this.failNext = false;
      return Promise.reject(new Error("disk full"));
    }
    return super.commit(mutations);
  }
}

/** A received `msg` line `n` in thread `th` (ids increase with `n`). */
export function receivedLine(th: string, n: number): IncomingLine {
  const id = `01J${String(n).padStart(10, "0")}`;
  const message = { t: "msg", id, ts: "2026-01-01T00:00:00Z", th, parts: [] };
  return { id, t: "msg", th, message, raw: JSON.stringify(message) };
}

/**
 * A {@link KvStore} on a fresh Deno KV file through a
 * {@link CountingKvBackend}; disposing closes it and removes the file.
 */
export async function countingKvStore(prefix: string): Promise<{
  path: string;
  backend: CountingKvBackend;
  store: KvStore;
  [Symbol.asyncDispose](): Promise<void>;
}> {
  const dir = await Deno.makeTempDir({ prefix });
  const path = `${dir}/store.kv`;
  const backend = new CountingKvBackend(await Deno.openKv(path));
  const store = new KvStore(backend);
  return {
    path,
    backend,
    store,
    async [Symbol.asyncDispose]() {
      store.close();
      await new Promise((r) => setTimeout(r, 10));
      await Deno.remove(dir, { recursive: true });
    },
  };
}
