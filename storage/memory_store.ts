/**
 * The ephemeral {@link Store}: the same rules as the durable one (it is the
 * same code, {@link KvStore}), over an ordered in-memory map. Nothing
 * survives the process; it needs no `--unstable-kv`.
 *
 * @module
 */

import {
  encodeKey,
  type Key,
  type KeyRange,
  type KvBackend,
  KvStore,
  type Mutation,
} from "./kv_store.ts";

/** An ordered in-memory map with the {@link KvBackend} operations. */
class MemoryBackend implements KvBackend {
  /** Encoded keys, sorted. */
  #order: string[] = [];
  #entries: Map<string, { key: Key; value: unknown }> = new Map();

  get(key: Key): Promise<unknown> {
    return Promise.resolve(this.#entries.get(encodeKey(key))?.value);
  }

  /** Index of the first encoded key ≥ `target`. */
  #lowerBound(target: string): number {
    let lo = 0;
    let hi = this.#order.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.#order[mid] < target) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  async *list(range: KeyRange): AsyncIterable<{ key: Key; value: unknown }> {
    let from: number;
    let inRange: (k: string) => boolean;
    if ("prefix" in range) {
      const prefix = encodeKey(range.prefix);
      from = this.#lowerBound(prefix);
      // The prefix itself is not listed, as in Deno KV.
      if (this.#order[from] === prefix) from++;
      inRange = (k) => k.startsWith(prefix);
    } else {
      const end = encodeKey(range.end);
      from = this.#lowerBound(encodeKey(range.start));
      inRange = (k) => k < end;
    }
    // A snapshot, so writes during the iteration do not disturb it.
    const keys: string[] = [];
    for (let i = from; i < this.#order.length && inRange(this.#order[i]); i++) {
      keys.push(this.#order[i]);
    }
    const entries = keys.map((k) => this.#entries.get(k)!);
    for (const entry of entries) yield entry;
  }

  commit(mutations: Mutation[]): Promise<void> {
    for (const { key, value } of mutations) {
      const k = encodeKey(key);
      const had = this.#entries.has(k);
      if (value === undefined) {
        if (had) {
          this.#entries.delete(k);
          this.#order.splice(this.#lowerBound(k), 1);
        }
      } else {
        if (!had) this.#order.splice(this.#lowerBound(k), 0, k);
        this.#entries.set(k, { key: [...key], value });
      }
    }
    return Promise.resolve();
  }

  close(): void {
    this.#entries.clear();
    this.#order = [];
  }
}

/**
 * A {@link Store} kept in memory: for tests and ephemeral peers.
 *
 * @example
 * ```ts
 * import { MemoryStore } from "./memory_store.ts";
 * const store = new MemoryStore();
 * const [first] = await store.receive("ed25519:peer", [
 *   { id: "01A", t: "msg", th: "t1", message: { t: "msg" }, raw: "{}" },
 * ]);
 * console.log(first.duplicate); // false
 * store.close();
 * ```
 */
export class MemoryStore extends KvStore {
  constructor() {
    super(new MemoryBackend());
  }
}
