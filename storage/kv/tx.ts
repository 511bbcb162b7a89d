/**
 * {@link Tx}: the reads and writes of one call queued on the
 * `GroupCommitter`, before they are packed into commits. Writes are
 * made in atomic groups (`cut` ends one); a record too big for one value
 * is split, its parts written in groups committed before its head.
 *
 * @module
 */

import { assembleRecord, PART_BYTES } from "./split_record.ts";
import { RecordText, utf8Length } from "./record_text.ts";
import type { CommittedCache } from "./committed_cache.ts";
import type { KvBackend } from "./kv_backend.ts";
import { encodeKey, type Key, type Mutation } from "./key.ts";

/** A mutation that remembers its encoded key and its size estimates. */
export interface KeyedMutation extends Mutation {
  /** {@link encodeKey} of `key`, computed once. */
  encoded?: string;
  /** Estimated bytes of the key (set by the batch that first counts it). */
  keyCost?: number;
  /** Estimated bytes of the mutation, key included (likewise). */
  cost?: number;
}

/** Parts of a split record written per atomic group (≤ 600 KB). */
const STAGE_PARTS = 10;

const utf8 = new TextEncoder();

/**
 * The writes and reads of one queued call. Reads see this call's own
 * writes, then those of earlier calls of the same drain (not yet durable),
 * then the committer's cache of committed values, then values read ahead,
 * then the backend.
 *
 * @example
 * ```ts ignore
 * // Built by the GroupCommitter for each submitted call:
 * await committer.submit(false, (tx) => tx.set(["a"], 1));
 * ```
 */
export class Tx {
  #backend: KvBackend;
  #overlay: Map<string, Mutation>;
  #prefetched: Map<string, unknown>;
  #cache: CommittedCache | undefined;
  /** Mutations this call made, by encoded key (latest wins). */
  readonly local: Map<string, Mutation> = new Map();
  /** Closed groups, each atomic, in commit order. */
  readonly done: Mutation[][] = [];
  #open: Mutation[] = [];

  /**
   * A transaction over `backend`, seeing the drain's `overlay` first; built
   * only while no commit is in flight, so what it reads from `backend` may
   * fill `cache`.
   */
  constructor(
    backend: KvBackend,
    overlay: Map<string, Mutation>,
    prefetched: Map<string, unknown>,
    cache?: CommittedCache,
  ) {
    this.#backend = backend;
    this.#overlay = overlay;
    this.#prefetched = prefetched;
    this.#cache = cache;
  }

  /** All groups, the open one last. */
  get groups(): Mutation[][] {
    return this.#open.length > 0 ? [...this.done, this.#open] : this.done;
  }

  /** The value at `key` as this call sees it. */
  get(key: Key): Promise<unknown> {
    const k = encodeKey(key);
    const m = this.local.get(k) ?? this.#overlay.get(k);
    if (m) return Promise.resolve(m.value);
    const cache = this.#cache;
    if (cache?.knows(key, k)) return Promise.resolve(cache.get(k));
    if (this.#prefetched.has(k)) {
      return Promise.resolve(this.#prefetched.get(k));
    }
    if (cache?.covers(key)) {
      const ticket = cache.ticket();
      return this.#backend.get(key).then((value) => {
        cache.fill(key, k, value, ticket);
        return value;
      });
    }
    return this.#backend.get(key);
  }

  /** Writes `value` at `key` in the open group. */
  set(key: Key, value: unknown): void {
    const encoded = encodeKey(key);
    // Every field the batch fills in later, now: one object shape, no
    // property store added to each mutation.
    const m: KeyedMutation = {
      key,
      value,
      encoded,
      keyCost: undefined,
      cost: undefined,
    };
    this.#open.push(m);
    this.local.set(encoded, m);
  }

  /** Deletes `key` in the open group. */
  delete(key: Key): void {
    this.set(key, undefined);
  }

  /** Ends the current atomic group. */
  cut(): void {
    if (this.#open.length > 0) {
      this.done.push(this.#open);
      this.#open = [];
    }
  }

  /** The record at `key` as this call sees it. */
  getRecord<T>(key: Key): Promise<T | undefined> {
    return this.get(key).then((head) =>
      assembleRecord(key, head, (k) => this.get(k))
    ) as Promise<T | undefined>;
  }

  /**
   * Writes a record; resolves with the parts it was split into (0: inline).
   * A big one's parts go in groups committed before the current one, whose
   * other writes then share the head's commit; `["pend", ...key]` marks
   * them until the head is written (open deletes parts of a crashed one).
   * `fresh` skips the read that cleans up parts of a bigger previous value.
   */
  async putRecord(key: Key, value: unknown, fresh = false): Promise<number> {
    const previous = fresh ? undefined : await this.get(key);
    const text = JSON.stringify(value);
    const length = utf8Length(text);
    let n = 0;
    if (length <= PART_BYTES) {
      // Kept as text until its commit encodes it (see RecordText).
      this.set(key, new RecordText(text, length));
    } else {
      const bytes = utf8.encode(text);
      n = Math.ceil(bytes.byteLength / PART_BYTES);
      const pend: Key = ["pend", ...key];
      const open = this.#open;
      this.#open = [];
      for (let k = 0; k < n; k++) {
        if (k % STAGE_PARTS === 0) {
          this.cut();
          if (k === 0) this.set(pend, n);
        }
        this.set(
          [...key, k],
          bytes.subarray(k * PART_BYTES, (k + 1) * PART_BYTES),
        );
      }
      this.cut();
      this.#open = open;
      this.set(key, n);
      this.delete(pend);
    }
    if (typeof previous === "number") {
      for (let k = n; k < previous; k++) this.delete([...key, k]);
    }
    return n;
  }

  /** Deletes a record and its parts (`parts` when known, else read). */
  async deleteRecord(key: Key, parts?: number): Promise<void> {
    const n = parts ?? await this.get(key);
    this.dropRecord(key, typeof n === "number" ? n : 0);
  }

  /** Deletes a record and its `parts` parts, without a read. */
  dropRecord(key: Key, parts: number): void {
    for (let k = 0; k < parts; k++) this.delete([...key, k]);
    this.delete(key);
  }
}
