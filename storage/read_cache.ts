/**
 * A read-through cache for records a store reads often and writes rarely
 * (peer records, grants, revocations: every handshake reads them).
 *
 * @module
 */

import { clonePlain } from "../wire/plain_json.ts";

/**
 * Values loaded once and then served from memory, kept in step by the
 * writes that go through {@linkcode ReadCache.write}: the owning store must be
 * the only writer of those keys. Every read returns a fresh copy, so a
 * caller may change what it gets. A load that overlaps a write is not kept
 * (it may have read the old value). At most `maxEntries` values are kept
 * (the oldest loaded goes first), so many distinct keys cannot grow it
 * without bound.
 *
 * @example
 * ```ts
 * import { ReadCache } from "./read_cache.ts";
 * const cache = new ReadCache<string, number>();
 * let loads = 0;
 * const load = () => Promise.resolve(++loads);
 * await cache.read("a", load);
 * console.log(await cache.read("a", load), loads); // 1 1
 * await cache.write("a", () => Promise.resolve());
 * console.log(await cache.read("a", load)); // 2
 * ```
 */
export class ReadCache<K, V> {
  #values = new Map<K, V>();
  #generation = 0;
  #maxEntries: number;

  /** A cache of at most `maxEntries` values (default 10,000). */
  constructor(maxEntries = 10_000) {
    this.#maxEntries = maxEntries;
  }

  /** The value of `key`: from memory, or from `load` (then remembered). */
  async read(key: K, load: () => Promise<V>): Promise<V> {
    if (this.#values.has(key)) return clonePlain(this.#values.get(key)!);
    const generation = this.#generation;
    const value = await load();
    if (generation === this.#generation) {
      if (this.#values.size >= this.#maxEntries) {
        this.#values.delete(this.#values.keys().next().value!);
      }
      this.#values.set(key, clonePlain(value));
    }
    return value;
  }

  /** Runs `write`, which changes `key`; the next read loads it again. */
  async write<T>(key: K, write: () => Promise<T>): Promise<T> {
    this.#forget(key);
    try {
      return await write();
    } finally {
      this.#forget(key);
    }
  }

  #forget(key: K): void {
    this.#values.delete(key);
    this.#generation++;
  }
}
