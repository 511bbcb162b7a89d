/**
 * {@link CommittedCache}: the committed KV values of a few record kinds
 * (those whose key starts with one of a set of first parts), kept in memory
 * by the `GroupCommitter` so that a build reads them without a KV round
 * trip (a received line's thread `seen` and `thr` records).
 *
 * It holds only what KV holds: a value enters when read from KV by the
 * committer while no commit is in flight, or when a commit that wrote it
 * resolved; a commit that fails drops the keys it wrote (KV may hold
 * either value), so the next read goes to KV. A crash loses only memory.
 *
 * @module
 */

import { encodeKey, type Key, type Mutation } from "./key.ts";
import { RecordText } from "./record_text.ts";

/** A mutation whose encoded key may already be known (see `Tx`). */
type MaybeEncoded = Mutation & { encoded?: string };

/** Values kept at most (two per thread: `seen` and `thr`). */
const MAX_ENTRIES = 8192;
/** Estimated bytes kept at most. */
const MAX_BYTES = 4 * 1024 * 1024;

function cost(encoded: string, value: unknown): number {
  return encoded.length * 2 + 48 +
    (value instanceof Uint8Array
      ? value.byteLength
      : value instanceof RecordText
      ? value.bytes
      : 16);
}

/**
 * A bounded LRU of committed values by encoded key, for keys whose first
 * part is one of `kinds`. `undefined` is a kept value (no such key in KV).
 *
 * @example
 * ```ts
 * import { CommittedCache } from "./committed_cache.ts";
 * import { encodeKey } from "./key.ts";
 * const cache = new CommittedCache(["seen"]);
 * cache.committed([{ key: ["seen", "p", "t"], value: 1 }]);
 * console.log(cache.has(encodeKey(["seen", "p", "t"]))); // true
 * cache.failed([{ key: ["seen", "p", "t"], value: 2 }]);
 * console.log(cache.has(encodeKey(["seen", "p", "t"]))); // false
 * ```
 */
export class CommittedCache {
  #kinds: ReadonlySet<string>;
  #values = new Map<string, unknown>();
  #bytes = 0;
  /**
   * Encoded prefixes whose every key one part longer is kept
   * ({@link preload}): such a key not in {@link #values} is absent in KV.
   */
  #complete = new Set<string>();
  /** Kept keys under a complete prefix, with the prefix (see #forget). */
  #members = new Map<string, string>();
  /** Commits started and not settled (the committer may build meanwhile). */
  #inFlight = 0;
  /** Commits started so far: a read is current only if none began since. */
  #epoch = 0;

  /** A cache of the keys whose first part is in `kinds`. */
  constructor(kinds: Iterable<string>) {
    this.#kinds = new Set(kinds);
  }

  /** True when `key` is of a kind this cache keeps. */
  covers(key: Key): boolean {
    return typeof key[0] === "string" && this.#kinds.has(key[0]);
  }

  /** True when the committed value of `encoded` is kept. */
  has(encoded: string): boolean {
    return this.#values.has(encoded);
  }

  /**
   * True when the committed value of `key` (encoded: `encoded`) is known:
   * kept, or absent under a prefix {@link preload}ed whole.
   */
  knows(key: Key, encoded: string): boolean {
    return this.#values.has(encoded) ||
      (this.#complete.size > 0 && this.#complete.has(parentOf(key)));
  }

  /** The committed value of `encoded` (check {@link knows} first). */
  get(encoded: string): unknown {
    if (!this.#values.has(encoded)) return undefined; // known absent
    const value = this.#values.get(encoded);
    // Most recently used last.
    this.#values.delete(encoded);
    this.#values.set(encoded, value);
    return value;
  }

  /**
   * Taken when a read of KV starts, given to {@link fill} with its value:
   * -1 while a commit is in flight (its writes may or may not be in the
   * read).
   */
  ticket(): number {
    return this.#inFlight > 0 ? -1 : this.#epoch;
  }

  /** A commit starts (call {@link committed} or {@link failed} once it settled). */
  begin(): void {
    this.#inFlight++;
    this.#epoch++;
  }

  /**
   * Keeps `value` read from KV at `key`, read with `ticket`: only if no
   * commit was in flight when the read started and none began since, so
   * it cannot be older than a commit already taken.
   */
  fill(key: Key, encoded: string, value: unknown, ticket: number): void {
    if (ticket !== this.#epoch || this.#inFlight > 0) return;
    if (this.covers(key)) this.#set(key, encoded, value);
  }

  /**
   * Keeps the committed values `rows` (key and stored head value) of keys
   * one part longer than `prefix`; when `whole`, they are every such key
   * KV holds, so another key one part longer is known absent. The caller
   * vouches they are current: read with no commit of these keys since
   * (e.g. `SeenIndex`, which follows every commit). Nothing is kept when
   * they would not all fit: the keys are read on demand then.
   */
  preload(
    prefix: Key,
    rows: Iterable<readonly [Key, unknown]>,
    whole: boolean,
  ): void {
    if (!this.covers(prefix)) return;
    const parent = encodeKey(prefix);
    const kept: Array<[Key, string, unknown]> = [];
    for (const [key, value] of rows) {
      const encoded = encodeKey(key);
      if (key.length !== prefix.length + 1 || !encoded.startsWith(parent)) {
        throw new RangeError("preload: a key not one part under its prefix");
      }
      kept.push([key, encoded, value]);
    }
    if (kept.length > MAX_ENTRIES / 2) return;
    for (const [key, encoded, value] of kept) this.#set(key, encoded, value);
    if (!whole || !kept.every(([, encoded]) => this.#values.has(encoded))) {
      return;
    }
    this.#complete.add(parent);
    for (const [, encoded] of kept) this.#members.set(encoded, parent);
  }

  /** Takes the values of a commit that resolved. */
  committed(mutations: Iterable<Mutation>): void {
    if (this.#inFlight > 0) this.#inFlight--;
    for (const m of mutations) {
      if (!this.covers(m.key)) continue;
      this.#set(
        m.key,
        (m as MaybeEncoded).encoded ?? encodeKey(m.key),
        m.value,
      );
    }
  }

  /** Forgets the keys of a commit that failed: KV may hold either value. */
  failed(mutations: Iterable<Mutation>): void {
    if (this.#inFlight > 0) this.#inFlight--;
    for (const m of mutations) {
      if (!this.covers(m.key)) continue;
      // A key not kept under a whole prefix may now be in KV too.
      if (this.#complete.size > 0) this.#complete.delete(parentOf(m.key));
      this.#forget((m as MaybeEncoded).encoded ?? encodeKey(m.key));
    }
  }

  #set(key: Key, encoded: string, value: unknown): void {
    this.#remove(encoded);
    this.#values.set(encoded, value);
    this.#bytes += cost(encoded, value);
    if (this.#complete.size > 0) {
      const parent = parentOf(key);
      if (this.#complete.has(parent)) this.#members.set(encoded, parent);
    }
    while (this.#values.size > MAX_ENTRIES || this.#bytes > MAX_BYTES) {
      this.#forget(this.#values.keys().next().value!);
    }
  }

  /**
   * Drops a kept value (evicted, or a failed commit's): its prefix is no
   * longer known whole.
   */
  #forget(encoded: string): void {
    const parent = this.#members.get(encoded);
    if (parent !== undefined) {
      this.#members.delete(encoded);
      this.#complete.delete(parent);
    }
    this.#remove(encoded);
  }

  #remove(encoded: string): void {
    if (!this.#values.has(encoded)) return;
    this.#bytes -= cost(encoded, this.#values.get(encoded));
    this.#values.delete(encoded);
  }
}

/** The encoded key one part shorter than `key`. */
function parentOf(key: Key): string {
  return encodeKey(key.slice(0, -1));
}
