/**
 * {@link Batch}: one atomic commit being filled, within Deno KV's limits
 * (1,000 mutations, 800 KiB of mutations and 80 KiB of keys per commit),
 * counted with cheap upper-bound estimates.
 *
 * @module
 */

import { encodeKey, type Key, type Mutation } from "./key.ts";
import type { KeyedMutation } from "./tx.ts";
import { RecordText } from "./record_text.ts";

// Under Deno KV's limits, with margin for the estimates.
const MAX_MUTATIONS = 990;
const MAX_COMMIT_BYTES = 760_000;
const MAX_KEY_BYTES = 72_000;

function keyBytes(key: Key): number {
  let n = 4;
  // Upper bound of the UTF-8 length without encoding: 3 bytes per unit.
  for (const part of key) {
    n += typeof part === "number" ? 10 : utf8Bound(part) + 2;
  }
  return n;
}

const NON_ASCII = /[\u0080-\uffff]/;

function utf8Bound(text: string): number {
  if (!NON_ASCII.test(text)) return text.length; // keys are mostly ASCII: no loop
  let n = 0;
  for (let i = 0; i < text.length; i++) n += text.charCodeAt(i) < 0x80 ? 1 : 3;
  return n;
}

function valueBytes(value: unknown): number {
  if (value === undefined) return 0;
  if (value instanceof Uint8Array) return value.byteLength + 16;
  if (value instanceof RecordText) return value.bytes + 16;
  if (typeof value === "string") return value.length * 2 + 16;
  if (typeof value !== "object" || value === null) return 16;
  // Index values: a few short fields.
  let n = 32;
  for (const [k, v] of Object.entries(value)) n += k.length + valueBytes(v);
  return n;
}

/** A mutation's estimated sizes, computed once per mutation. */
function costed(m: Mutation): Required<KeyedMutation> {
  const km = m as KeyedMutation;
  if (km.cost === undefined) {
    km.encoded ??= encodeKey(m.key);
    km.keyCost = keyBytes(m.key);
    km.cost = km.keyCost + valueBytes(m.value);
  }
  return km as Required<KeyedMutation>;
}

/**
 * One commit being filled: atomic groups are added whole while they fit.
 * A key written again (a thread's `seen` record, the log's seq, written by
 * every line of a received batch) replaces its earlier write and counts
 * once, so the limits bound what is really committed.
 *
 * @example
 * ```ts
 * import { Batch } from "./batch.ts";
 * const batch = new Batch();
 * const group = [{ key: ["a"], value: 1 }];
 * if (batch.fits(group)) batch.add(group);
 * if (batch.fits(group)) batch.add(group); // the same key: still one
 * console.log(batch.size); // 1
 * ```
 */
export class Batch {
  /** The mutations, by encoded key (a later write of a key replaces it). */
  readonly mutations: Map<string, Mutation> = new Map();
  #bytes = 0;
  #keyBytes = 0;

  /**
   * True when `group` could join an empty commit, counting every write
   * (a key written twice twice: an upper bound).
   */
  static fitsAlone(group: Mutation[]): boolean {
    let bytes = 0;
    let keys = 0;
    for (const m of group) {
      const c = costed(m);
      bytes += c.cost;
      keys += c.keyCost;
    }
    return group.length <= MAX_MUTATIONS && bytes <= MAX_COMMIT_BYTES &&
      keys <= MAX_KEY_BYTES;
  }

  /** Distinct keys written. */
  get size(): number {
    return this.mutations.size;
  }

  /** True when `group` can join this commit. */
  fits(group: Mutation[]): boolean {
    let count = 0;
    let bytes = 0;
    let keys = 0;
    for (const m of group) {
      const c = costed(m);
      const old = (this.mutations.get(c.encoded) as KeyedMutation)?.cost;
      if (old === undefined) {
        count++;
        keys += c.keyCost;
        bytes += c.cost;
      } else bytes += c.cost - old;
    }
    return this.mutations.size + count <= MAX_MUTATIONS &&
      this.#bytes + bytes <= MAX_COMMIT_BYTES &&
      this.#keyBytes + keys <= MAX_KEY_BYTES;
  }

  /** Adds an atomic group (check {@link Batch.fits} first). */
  add(group: Mutation[]): void {
    for (const m of group) {
      const c = costed(m);
      const old = (this.mutations.get(c.encoded) as KeyedMutation)?.cost;
      if (old === undefined) this.#keyBytes += c.keyCost;
      else this.mutations.delete(c.encoded); // re-insert: the latest write wins
      this.#bytes += c.cost - (old ?? 0);
      this.mutations.set(c.encoded, m);
    }
  }
}
