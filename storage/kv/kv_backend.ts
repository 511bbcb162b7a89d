/**
 * The ordered key-value store under the engine: the {@link KvBackend}
 * operations it needs, and {@link DenoKvBackend}, the one on Deno KV.
 * (`MemoryStore` brings an in-memory one.)
 *
 * @module
 */

import type { Key, KeyRange, Mutation } from "./key.ts";

/**
 * The few operations the KV engine needs from an ordered key-value store.
 *
 * @example
 * ```ts
 * import type { KvBackend } from "./kv_backend.ts";
 * const nothing: Pick<KvBackend, "get"> = { get: () => Promise.resolve(undefined) };
 * console.log(await nothing.get(["a"])); // undefined
 * ```
 */
export interface KvBackend {
  /** The value at `key`, or undefined. */
  get(key: Key): Promise<unknown>;
  /**
   * Entries in key order; a shorter key sorts before the keys it prefixes.
   * Read lazily: a consumer that stops early has not read the rest.
   */
  list(range: KeyRange): AsyncIterable<{ key: Key; value: unknown }>;
  /**
   * Applies all mutations atomically, or throws. A `Uint8Array` value may
   * be a view of a buffer the caller reuses once this settled: a backend
   * that keeps values keeps a copy.
   */
  commit(mutations: Mutation[]): Promise<void>;
  /** Releases the store; nothing may be called after. */
  close(): void;
}

/** Entries Deno KV reads per round trip of a list. */
const LIST_BATCH = 500;

/**
 * {@link KvBackend} on a `Deno.Kv`.
 *
 * @example
 * ```ts
 * import { DenoKvBackend } from "./kv_backend.ts";
 * const backend = new DenoKvBackend(await Deno.openKv(":memory:"));
 * await backend.commit([{ key: ["a"], value: 1 }]);
 * console.log(await backend.get(["a"])); // 1
 * backend.close();
 * ```
 */
export class DenoKvBackend implements KvBackend {
  #kv: Deno.Kv;

  /** Wraps an open `Deno.Kv`; {@link DenoKvBackend.close} closes it. */
  constructor(kv: Deno.Kv) {
    this.#kv = kv;
  }

  /** The value at `key`, or undefined. */
  async get(key: Key): Promise<unknown> {
    const entry = await this.#kv.get(key as Deno.KvKey);
    return entry.versionstamp === null ? undefined : entry.value;
  }

  /** Entries in key order, read {@link LIST_BATCH} at a time. */
  async *list(range: KeyRange): AsyncIterable<{ key: Key; value: unknown }> {
    for await (
      const entry of this.#kv.list(range as Deno.KvListSelector, {
        batchSize: LIST_BATCH,
      })
    ) {
      yield { key: entry.key as Key, value: entry.value };
    }
  }

  /** One `kv.atomic()` with every mutation; throws when it fails. */
  async commit(mutations: Mutation[]): Promise<void> {
    const op = this.#kv.atomic();
    for (const m of mutations) {
      if (m.value === undefined) op.delete(m.key as Deno.KvKey);
      else op.set(m.key as Deno.KvKey, m.value);
    }
    const result = await op.commit();
    if (!result.ok) throw new Error("Deno KV commit failed");
  }

  /** Closes the `Deno.Kv`. */
  close(): void {
    this.#kv.close();
  }
}
