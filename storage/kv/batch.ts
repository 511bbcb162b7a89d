/**
 * {@link Batch}: one atomic commit being filled, within Deno KV's limits
 * (1,000 mutations, 800 KiB of mutations and 80 KiB of keys per commit),
 * counted with cheap upper-bound estimates.
 *
 * @module
 */

import { encodeKey, type Key, type Mutation } from "./key.ts";
import type { KeyedMutation } from "./tx.ts";

// Under Deno KV's limits, with margin for the estimates.
const MAX_MUTATIONS = 990;
const MAX_COMMIT_BYTES = 760_000;
const MAX_KEY_BYTES = 72_000;

interface Cost {
  bytes: number;
  keyBytes: number;
}

function keyBytes(key: Key): number {
  let n = 4;
  // Upper bound of the UTF-8 length without encoding: 3 bytes per unit.
  for (const part of key) {
    n += typeof part === "number" ? 10 : utf8Bound(part) + 2;
  }
  return n;
}

function utf8Bound(text: string): number {
  let n = 0;
  for (let i = 0; i < text.length; i++) n += text.charCodeAt(i) < 0x80 ? 1 : 3;
  return n;
}

function valueBytes(value: unknown): number {
  if (value === undefined) return 0;
  if (value instanceof Uint8Array) return value.byteLength + 16;
  if (typeof value === "string") return value.length * 2 + 16;
  if (typeof value !== "object" || value === null) return 16;
  // Index values: a few short fields.
  let n = 32;
  for (const [k, v] of Object.entries(value)) n += k.length + valueBytes(v);
  return n;
}

/**
 * One commit being filled: atomic groups are added whole while they fit.
 *
 * @example
 * ```ts
 * import { Batch } from "./batch.ts";
 * const batch = new Batch();
 * const group = [{ key: ["a"], value: 1 }];
 * if (batch.fits(group)) batch.add(group);
 * console.log(batch.size); // 1
 * ```
 */
export class Batch {
  /** The mutations, by encoded key (a later write of a key replaces it). */
  readonly mutations: Map<string, Mutation> = new Map();
  #count = 0;
  #bytes = 0;
  #keyBytes = 0;

  static #costs = new WeakMap<Mutation[], Cost>();

  static #cost(group: Mutation[]): Cost {
    const known = Batch.#costs.get(group);
    if (known) return known;
    let bytes = 0;
    let keys = 0;
    for (const m of group) {
      const kb = keyBytes(m.key);
      keys += kb;
      bytes += kb + valueBytes(m.value);
    }
    const cost = { bytes, keyBytes: keys };
    Batch.#costs.set(group, cost);
    return cost;
  }

  /** Distinct keys written. */
  get size(): number {
    return this.mutations.size;
  }

  /** True when `group` can join this commit. */
  fits(group: Mutation[]): boolean {
    const { bytes, keyBytes } = Batch.#cost(group);
    return this.#count + group.length <= MAX_MUTATIONS &&
      this.#bytes + bytes <= MAX_COMMIT_BYTES &&
      this.#keyBytes + keyBytes <= MAX_KEY_BYTES;
  }

  /** Adds an atomic group (check {@link Batch.fits} first). */
  add(group: Mutation[]): void {
    const { bytes, keyBytes } = Batch.#cost(group);
    this.#count += group.length;
    this.#bytes += bytes;
    this.#keyBytes += keyBytes;
    for (const m of group) {
      const k = (m as KeyedMutation).encoded ?? encodeKey(m.key);
      this.mutations.delete(k); // re-insert: the latest write wins
      this.mutations.set(k, m);
    }
  }
}
