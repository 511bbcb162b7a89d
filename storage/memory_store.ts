/**
 * The ephemeral {@link Store}: the same rules as the durable one (it is the
 * same code, {@link KvStore}), over an ordered in-memory map. Nothing
 * survives the process; it needs no `--unstable-kv`.
 *
 * @module
 */

import { encodeKey, type Key, type KeyRange, type Mutation } from "./kv/key.ts";
import type { KvBackend } from "./kv/kv_backend.ts";

import { KvStore, type KvStoreOptions } from "./kv_store.ts";

interface Entry {
  key: Key;
  value: unknown;
}

/** A run of consecutive keys, sorted, with their entries alongside. */
interface Block {
  keys: string[];
  entries: Entry[];
  /** The generation it was made in; older blocks may be in a snapshot. */
  gen: number;
}

// Inserts and deletes splice one block, never the whole key set; full
// blocks split in two. Appends (log seqs, outbox ids) start a new block.
const BLOCK = 512;

/**
 * An ordered in-memory map with the {@link KvBackend} operations: a sorted
 * list of sorted blocks. `list` iterates a snapshot without copying it:
 * it bumps the generation, and a later write copies the block (and the
 * block list) it changes instead of changing them in place.
 */
class MemoryBackend implements KvBackend {
  #entries: Map<string, Entry> = new Map();
  #blocks: Block[] = [];
  #blocksGen = 0;
  #gen = 0;

  get(key: Key): Promise<unknown> {
    return Promise.resolve(this.#entries.get(encodeKey(key))?.value);
  }

  /** Index of the first block whose last key is ≥ `k` (length if none). */
  #blockOf(blocks: Block[], k: string): number {
    let lo = 0;
    let hi = blocks.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const keys = blocks[mid].keys;
      if (keys[keys.length - 1] < k) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  list(range: KeyRange): AsyncIterable<Entry> {
    let from: string;
    let inRange: (k: string) => boolean;
    let skip: string | undefined;
    if ("prefix" in range) {
      const prefix = encodeKey(range.prefix);
      from = prefix;
      // The prefix itself is not listed, as in Deno KV.
      skip = prefix;
      inRange = (k) => k.startsWith(prefix);
    } else {
      const end = encodeKey(range.end);
      from = encodeKey(range.start);
      inRange = (k) => k < end;
    }
    // The snapshot: these blocks are never changed in place from now on.
    const blocks = this.#blocks;
    this.#gen++;
    let b = this.#blockOf(blocks, from);
    let i = b < blocks.length ? lowerBound(blocks[b].keys, from) : 0;
    return (async function* () {
      for (; b < blocks.length; b++, i = 0) {
        const { keys, entries } = blocks[b];
        for (; i < keys.length; i++) {
          if (!inRange(keys[i])) return;
          if (keys[i] !== skip) yield entries[i];
        }
      }
    })();
  }

  /** The block list, copied first if a snapshot may hold it. */
  #ownBlocks(): Block[] {
    if (this.#blocksGen !== this.#gen) {
      this.#blocks = this.#blocks.slice();
      this.#blocksGen = this.#gen;
    }
    return this.#blocks;
  }

  /** Block `b`, copied first if a snapshot may hold it. */
  #ownBlock(b: number): Block {
    const block = this.#blocks[b];
    if (block.gen === this.#gen) return block;
    const copy = {
      keys: block.keys.slice(),
      entries: block.entries.slice(),
      gen: this.#gen,
    };
    this.#ownBlocks()[b] = copy;
    return copy;
  }

  #insert(k: string, entry: Entry): void {
    const blocks = this.#blocks;
    const last = blocks.length - 1;
    if (last < 0 || blocks[last].keys[blocks[last].keys.length - 1] < k) {
      // Append: fill the last block, then start a new one.
      if (last < 0 || blocks[last].keys.length >= BLOCK) {
        this.#ownBlocks().push({ keys: [k], entries: [entry], gen: this.#gen });
      } else {
        const block = this.#ownBlock(last);
        block.keys.push(k);
        block.entries.push(entry);
      }
      return;
    }
    const b = this.#blockOf(blocks, k);
    const block = this.#ownBlock(b);
    const i = lowerBound(block.keys, k);
    block.keys.splice(i, 0, k);
    block.entries.splice(i, 0, entry);
    if (block.keys.length > 2 * BLOCK) {
      const half = block.keys.length >>> 1;
      const tail: Block = {
        keys: block.keys.splice(half),
        entries: block.entries.splice(half),
        gen: this.#gen,
      };
      this.#ownBlocks().splice(b + 1, 0, tail);
    }
  }

  /** Finds the block and position of a key known to be present. */
  #locate(k: string): [number, number] {
    const b = this.#blockOf(this.#blocks, k);
    return [b, lowerBound(this.#blocks[b].keys, k)];
  }

  #delete(k: string): void {
    const [b, i] = this.#locate(k);
    const block = this.#ownBlock(b);
    block.keys.splice(i, 1);
    block.entries.splice(i, 1);
    if (block.keys.length === 0) this.#ownBlocks().splice(b, 1);
  }

  #replace(k: string, entry: Entry): void {
    const [b, i] = this.#locate(k);
    this.#ownBlock(b).entries[i] = entry;
  }

  commit(mutations: Mutation[]): Promise<void> {
    for (const { key, value } of mutations) {
      const k = encodeKey(key);
      const had = this.#entries.has(k);
      if (value === undefined) {
        if (had) {
          this.#entries.delete(k);
          this.#delete(k);
        }
      } else {
        // A copy, as Deno KV keeps: the committer reuses its buffers.
        const entry = {
          key: [...key],
          value: value instanceof Uint8Array ? value.slice() : value,
        };
        this.#entries.set(k, entry);
        if (had) this.#replace(k, entry);
        else this.#insert(k, entry);
      }
    }
    return Promise.resolve();
  }

  close(): void {
    this.#entries.clear();
    this.#blocks = [];
  }
}

/** Index of the first key ≥ `target` in sorted `keys`. */
function lowerBound(keys: string[], target: string): number {
  let lo = 0;
  let hi = keys.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (keys[mid] < target) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * A {@link Store} kept in memory: for tests and ephemeral peers. Options as
 * for {@link KvStore} (`maxLogEntries`).
 *
 * @example
 * ```ts
 * import { MemoryStore } from "./memory_store.ts";
 * const store = new MemoryStore({ maxLogEntries: 1000 });
 * const [first] = await store.receive("ed25519:peer", [
 *   { id: "01A", t: "msg", th: "t1", message: { t: "msg" }, raw: "{}" },
 * ]);
 * console.log(first.duplicate); // false
 * store.close();
 * ```
 */
export class MemoryStore extends KvStore {
  /** An empty store; `options.maxLogEntries` bounds the traffic log. */
  constructor(options: KvStoreOptions = {}) {
    super(new MemoryBackend(), {}, options);
  }
}
