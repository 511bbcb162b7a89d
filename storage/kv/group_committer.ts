/**
 * {@link GroupCommitter}: the one serial writer of a KV store, with group
 * commit.
 *
 * Calls that arrive while a commit is in flight are merged into the next
 * atomic commit (split across several, in order, when over Deno KV's
 * limits: see {@link Batch}), built as they arrive, so that commit starts
 * the moment the one in flight resolves; each caller's promise resolves
 * once its part is durable. No fixed wait: one call alone commits at once. A call's
 * build runs in submission order and sees every earlier call's writes
 * (durable or not); an `exclusive` call runs alone, after everything before
 * it is durable (for scans that must see a settled store). Records of the
 * kinds named at construction are kept in a {@link CommittedCache}, so a
 * build reads them from memory.
 *
 * @module
 */

import { Batch } from "./batch.ts";
import { CommittedCache } from "./committed_cache.ts";
import type { KvBackend } from "./kv_backend.ts";
import { encodeKey, type Key, type Mutation } from "./key.ts";
import { collectRecords, readRecord } from "./split_record.ts";
import { RecordEncoder, RecordText } from "./record_text.ts";
import { Tx } from "./tx.ts";

interface Op {
  exclusive: boolean;
  /** Keys the build will read, fetched concurrently before the batch. */
  prefetch?: Key[];
  build(tx: Tx): Promise<unknown> | unknown;
  resolve(value: unknown): void;
  reject(error: unknown): void;
}

/** Keys read ahead concurrently at a time. */
const PREFETCH_AT_ONCE = 256;

/**
 * The serial, batching writer over a {@link KvBackend}.
 *
 * @example
 * ```ts
 * import { GroupCommitter } from "./group_committer.ts";
 * import { DenoKvBackend } from "./kv_backend.ts";
 * const kv = new GroupCommitter(new DenoKvBackend(await Deno.openKv(":memory:")));
 * await Promise.all([kv.put(["a"], 1), kv.put(["b"], 2)]); // one commit
 * console.log(await kv.read(["b"])); // 2
 * kv.close();
 * ```
 */
export class GroupCommitter {
  /** The backend: reads of committed state go straight to it. */
  readonly backend: KvBackend;
  #queue: Op[] = [];
  #draining = false;
  #closing = false;
  #closed = false;
  /** Writes of the current drain not yet known durable, for reads in it. */
  #overlay: Map<string, Mutation> = new Map();
  /** Values read ahead for the current drain (older than the overlay). */
  #prefetched: Map<string, unknown> = new Map();
  /** Committed values of the cached kinds (see {@link CommittedCache}). */
  #cache: CommittedCache | undefined;
  /** Told of each commit's mutations once it resolved or failed. */
  #observers: Array<(mutations: Mutation[], ok: boolean) => void> = [];
  /** Wakes the drain waiting on a commit in flight: a call arrived. */
  #wake: (() => void) | undefined;
  /** Encodes each commit's record texts (see `RecordText`). */
  #records = new RecordEncoder();

  /**
   * The writer of `backend` (which it closes on {@link close}); keeps in
   * memory the committed records whose key starts with one of `cached`
   * (it must be their only writer).
   */
  constructor(backend: KvBackend, cached: readonly string[] = []) {
    this.backend = backend;
    if (cached.length > 0) this.#cache = new CommittedCache(cached);
  }

  /**
   * Tells `observer` of every commit from now on: its mutations, once it
   * resolved (`ok`) or failed (e.g. `storage/seen_index.ts` follows them).
   */
  observe(observer: (mutations: Mutation[], ok: boolean) => void): void {
    this.#observers.push(observer);
  }

  /**
   * Queues `build`, which reads and writes through its {@link Tx}; resolves
   * with its result once its writes are durable. `prefetch` names keys the
   * build will read, so a batch reads them concurrently.
   */
  submit<T>(
    exclusive: boolean,
    build: (tx: Tx) => Promise<T> | T,
    prefetch?: Key[],
  ): Promise<T> {
    if (this.#closing) return Promise.reject(new Error("store is closed"));
    return new Promise<T>((resolve, reject) => {
      this.#queue.push({
        exclusive,
        prefetch,
        // Called inside the drain's try: a synchronous throw rejects too.
        build,
        resolve: resolve as (value: unknown) => void,
        reject,
      });
      if (!this.#draining) {
        this.#draining = true;
        queueMicrotask(() => this.#drain());
      } else this.#wake?.();
    });
  }

  /**
   * Tells the cache of committed records the stored values of keys one part
   * under `prefix` (whole: all of them), read with no commit of them since
   * (see {@link CommittedCache.preload}): a build then reads them, or their
   * absence, from memory. Nothing when `prefix` is not of a cached kind.
   */
  preload(
    prefix: Key,
    rows: Iterable<readonly [Key, unknown]>,
    whole: boolean,
  ): void {
    this.#cache?.preload(prefix, rows, whole);
  }

  /** Writes a record (see {@link Tx.putRecord}); resolves once durable. */
  put(key: Key, value: unknown): Promise<void> {
    return this.submit(false, async (tx) => {
      await tx.putRecord(key, value);
    });
  }

  /** The committed record at `key`, or undefined. */
  read<T>(key: Key): Promise<T | undefined> {
    return readRecord<T>(this.backend, key);
  }

  /** Every committed record at key length `depth` under `prefix`. */
  collect<T>(prefix: Key, depth: number): Promise<T[]> {
    return collectRecords<T>(this.backend, prefix, depth);
  }

  /** Closes the backend once queued writes are done; later calls reject. */
  close(): void {
    if (this.#closing) return;
    this.#closing = true;
    if (!this.#draining) this.#close();
  }

  #close(): void {
    this.#closed = true;
    this.backend.close();
  }

  /**
   * Builds and commits what is queued. While a commit is in flight, the
   * calls arriving meanwhile are built at once into the next batch (they
   * read its writes from the overlay); that batch commits as soon as the
   * one in flight resolved (or sooner, when full: after it). If it failed,
   * what was built on its writes fails with it.
   */
  async #drain(): Promise<void> {
    /** The commit in flight: resolves true once durable, false if it failed. */
    let inFlight: Promise<boolean> | undefined;
    /** It has settled (the next batch may start now). */
    let inFlightDone = false;
    let failure: unknown = undefined;
    let batch = new Batch();
    let waiting: Array<{ op: Op; result: unknown }> = [];
    /** Commits the batch built so far, after the one in flight. */
    const flush = async (): Promise<boolean> => {
      const done = waiting;
      const current = batch;
      waiting = [];
      batch = new Batch();
      const before = inFlight;
      inFlight = undefined;
      inFlightDone = false;
      if (before !== undefined && !await before) {
        // Built on writes that did not commit.
        this.#overlay.clear();
        for (const w of done) w.op.reject(failure);
        return false;
      }
      if (current.size > 0) {
        const mutations = [...current.mutations.values()];
        this.#cache?.begin();
        try {
          await this.#commit(mutations);
        } catch (error) {
          failure = error;
          this.#cache?.failed(mutations);
          for (const observe of this.#observers) observe(mutations, false);
          this.#overlay.clear();
          for (const w of done) w.op.reject(error);
          return false;
        }
        this.#cache?.committed(mutations);
        for (const observe of this.#observers) observe(mutations, true);
        // Durable: later builds read these from KV (or the cache).
        for (const m of mutations) {
          const k = (m as { encoded?: string }).encoded ?? encodeKey(m.key);
          if (this.#overlay.get(k) === m) {
            this.#overlay.delete(k);
            this.#prefetched.delete(k);
          }
        }
      }
      for (const w of done) w.op.resolve(w.result);
      return true;
    };
    /** Starts the commit of what was built (after the one in flight). */
    const start = () => {
      const commit = flush();
      inFlight = commit;
      void commit.then(() => {
        if (inFlight === commit) inFlightDone = true;
      });
    };
    for (;;) {
      if (this.#queue.length === 0) {
        if (inFlight === undefined) break;
        // Until it settles, or a call arrives to be built meanwhile.
        const arrived = new Promise<false>((r) => this.#wake = () => r(false));
        const settled = await Promise.race([
          inFlight.then(() => true),
          arrived,
        ]);
        this.#wake = undefined;
        if (!settled) continue;
        if (waiting.length > 0 || batch.size > 0) start();
        else {
          inFlight = undefined;
          inFlightDone = false;
        }
        continue;
      }
      const ops = this.#queue.splice(0);
      // Done already: these go together at the end, as if none were.
      const doneBefore = inFlightDone;
      this.#prefetched.clear(); // the builds before are done with it
      await this.#prefetch(ops);
      for (const op of ops) {
        if (op.exclusive) {
          // Alone, after everything before it is durable.
          if (!await flush()) {
            op.reject(failure);
            continue;
          }
          this.#overlay.clear();
          this.#prefetched.clear();
        }
        const tx = new Tx(
          this.backend,
          this.#overlay,
          this.#prefetched,
          this.#cache,
        );
        let result: unknown;
        try {
          result = await op.build(tx);
          tx.cut(); // all its groups in tx.done, without a copy
          for (const group of tx.done) {
            if (!Batch.fitsAlone(group)) {
              throw new RangeError("write too large for one Deno KV commit");
            }
          }
        } catch (error) {
          op.reject(error);
          continue;
        }
        const overlay = this.#overlay;
        tx.local.forEach((m, k) => overlay.set(k, m));
        let ok = true;
        for (const group of tx.done) {
          if (!batch.fits(group) && !await flush()) {
            ok = false;
            break;
          }
          batch.add(group);
        }
        if (!ok) {
          op.reject(failure);
          continue;
        }
        waiting.push({ op, result });
        if (op.exclusive) await flush();
        // The commit in flight is done while calls keep coming: start the
        // next with what is built, and build the rest meanwhile.
        else if (inFlightDone && !doneBefore) start();
      }
      // Nothing in flight: commit what was built now; else once it settles.
      if (
        (inFlight === undefined || inFlightDone) &&
        (waiting.length > 0 || batch.size > 0)
      ) start();
    }
    this.#overlay.clear();
    this.#prefetched.clear();
    this.#draining = false;
    if (this.#closing && !this.#closed) this.#close();
  }

  /**
   * Commits `mutations` with each record's text as its UTF-8 bytes, all in
   * one buffer reused by the next commit: until now they were text (see
   * `RecordText`); the mutations themselves keep the text.
   */
  async #commit(mutations: Mutation[]): Promise<void> {
    const out = this.#records.take(mutations);
    try {
      await this.backend.commit(
        mutations.map((m) =>
          m.value instanceof RecordText
            ? { key: m.key, value: out.encode(m.value) }
            : m
        ),
      );
    } finally {
      this.#records.give(out);
    }
  }

  /** Reads the keys the batch will need concurrently, not one by one. */
  async #prefetch(ops: Op[]): Promise<void> {
    const keys = new Map<string, Key>();
    const cache = this.#cache;
    for (const op of ops) {
      for (const key of op.prefetch ?? []) {
        const k = encodeKey(key);
        if (!cache?.knows(key, k)) keys.set(k, key);
      }
    }
    const all = [...keys];
    for (let i = 0; i < all.length; i += PREFETCH_AT_ONCE) {
      const slice = all.slice(i, i + PREFETCH_AT_ONCE);
      const ticket = cache?.ticket() ?? -1;
      try {
        const values = await Promise.all(
          slice.map(([, key]) => this.backend.get(key)),
        );
        slice.forEach(([k, key], j) => {
          this.#prefetched.set(k, values[j]);
          cache?.fill(key, k, values[j], ticket);
        });
      } catch {
        return; // The builds will read (and report) for themselves.
      }
    }
  }
}
