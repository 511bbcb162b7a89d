/**
 * The durable {@link Store} on Deno KV, with group commit.
 *
 * Every write goes through one serial committer: calls that arrive while a
 * commit is in flight are merged into the next `kv.atomic()` (split across
 * several commits, in order, when over Deno KV's limits), and each caller's
 * promise resolves once its part is durable. Outbox ids are allocated at call
 * time from one {@link IdGenerator}, and the highest one is written in the
 * same commit as the entry, so id order = outbox order = send order, also
 * across restarts (NOTES item 3).
 *
 * Records (JSON) are stored as UTF-8 bytes. A record over {@link PART_BYTES}
 * (lines go up to 1 MiB, KV values to 64 KiB) is split: its parts go to
 * `[...key, 0..n-1]` in earlier commits, marked by `["pend", ...key] = n`,
 * and the head `key = n` is written last, with the record's indexes. A crash
 * in between leaves the marker, and the next open deletes the parts.
 *
 * ## Key layout
 *
 * `pk` is the peer key, `tk` the thread id (`""` for unthreaded lines), `ik`
 * a received line's id; all three are replaced by `#<sha256 hex>` when over 128 characters (KV keys ≤ 2 KiB).
 *
 * | key | value |
 * |-----|-------|
 * | `["id", "last"]` | highest outbox id committed |
 * | `["seq", "log"]` | highest log seq committed |
 * | `["identity"]` | 32-byte seed |
 * | `["ob", pk, id]` | outbox entry record (without `peer`) |
 * | `["rx", pk, tk, ik]` | receive time (`{ at, id }` when `ik` is hashed): dedup of received content lines |
 * | `["seen", pk, tk]` | `{ th?, id?, floor?, max? }` last received id; dedup floor; highest id (above it, no `rx` read) |
 * | `["thr", pk, tk]` | {@link ThreadRecord} |
 * | `["log", seq]` | {@link LogEntry} |
 * | `["logt", pk, tk, seq]` | `1`: log index by thread (a line with a `th`) |
 * | `["peer", pk]` | {@link PeerRecord} |
 * | `["grant", kind, hash]` | {@link GrantRecord} |
 * | `["revoked", hash]` | revocation time |
 * | `["blob", pk, dir, ref]` | {@link BlobRecord} |
 * | `["meta", name]` | any JSON value |
 * | `["pend", ...key]` | parts count of a split record not yet complete |
 *
 * The outbox has no index rows: an {@link OutboxIndex} in memory (thread,
 * type, queue time and parts of each entry) is rebuilt from the `ob` records
 * on open, so an enqueue costs one row and an ack one delete, with no reads.
 * Stores written before this layout have `obt`, `obc`, `obq`, `obx`,
 * `rxq` and `logp` (log by peer) index rows; open deletes them. A log query
 * by peer alone scans the log (rare: views read by thread).
 *
 * ## Bounded indexes
 *
 * Outbox entries leave on ack (cumulatively for chunks and introductions of
 * the thread, and for grants and introductions to the peer in any thread,
 * see {@link Store.acked}), on {@link KvStore.dropBlob}, on replay when the remote's `seen` covers them, or on
 * {@link KvStore.expireOutbox}. The same `expireOutbox(olderThan)` compacts
 * dedup: exact received ids older than `olderThan` are forgotten and the
 * thread's `floor` rises to the highest of them; afterwards an id at or below
 * the floor counts as a duplicate. That is exact for senders whose ids
 * increase (NOTES item 3); a sender that reuses lower ids after the retention
 * window would be taken for a replay. What stays per thread is one `seen`
 * record, and that goes too once the thread ended (either side done, failed
 * or closed) and did not change since `olderThan`.
 *
 * The traffic log keeps at most `maxLogEntries` (default 100,000) and
 * `maxLogBytes` of line text (default 256 MiB; over it, the oldest go until
 * 90% is left; the running total is kept under `["seq", "logbytes"]`): every
 * `min(1000, maxLogEntries / 10)` appends a trim deletes the oldest entries
 * with their parts and `logt` keys, so it never holds more than the
 * bound plus one trim interval. `expireOutbox` also trims log entries older
 * than `olderThan`, from the oldest on.
 *
 * @module
 */

import { ReadCache } from "./read_cache.ts";
import { sha256Hex } from "./sha256.ts";
import { IdGenerator } from "../wire/id.ts";
import { timestamp } from "../wire/time.ts";
import { CONTENT_TYPES } from "../wire/types.ts";
import { OutboxIndex, type OutboxMeta } from "./outbox_index.ts";
import type {
  BlobRecord,
  Direction,
  GrantKind,
  GrantRecord,
  IncomingLine,
  LogEntry,
  LogQuery,
  OutboxDraft,
  OutboxEntry,
  PeerRecord,
  ReceiveExtras,
  ReceiveOutcome,
  RequestRecord,
  Store,
  ThreadPatch,
  ThreadRecord,
} from "./store.ts";

/** A key part as this store uses them: strings and non-negative integers. */
export type KeyPart = string | number;

/** A key: a tuple of parts, ordered part by part. */
export type Key = readonly KeyPart[];

/** One write of an atomic commit; `value: undefined` deletes the key. */
export interface Mutation {
  /** The key to write. */
  key: Key;
  /** The value to store; undefined deletes the key. */
  value: unknown;
}

/** A key range: everything under `prefix`, or `start` (incl.) to `end` (excl.). */
export type KeyRange = { prefix: Key } | { start: Key; end: Key };

/**
 * The few operations {@link KvStore} needs from an ordered key-value store.
 * Deno KV is one; `MemoryStore` brings an in-memory one.
 *
 * @example
 * ```ts
 * import type { KvBackend } from "./kv_store.ts";
 * const nothing: Pick<KvBackend, "get"> = { get: () => Promise.resolve(undefined) };
 * console.log(await nothing.get(["a"])); // undefined
 * ```
 */
export interface KvBackend {
  /** The value at `key`, or undefined. */
  get(key: Key): Promise<unknown>;
  /** Entries in key order; a shorter key sorts before the keys it prefixes. */
  list(range: KeyRange): AsyncIterable<{ key: Key; value: unknown }>;
  /** Applies all mutations atomically, or throws. */
  commit(mutations: Mutation[]): Promise<void>;
  /** Releases the store; nothing may be called after. */
  close(): void;
}

/**
 * Options of {@link KvStore} and `MemoryStore`.
 *
 * @example
 * ```ts
 * import type { KvStoreOptions } from "./kv_store.ts";
 * const options: KvStoreOptions = { maxLogEntries: 10_000 };
 * console.log(options.maxLogEntries); // 10000
 * ```
 */
export interface KvStoreOptions {
  /**
   * Most traffic log entries kept (oldest trimmed first); default
   * {@link DEFAULT_MAX_LOG_ENTRIES}, `Infinity` keeps everything.
   */
  maxLogEntries?: number;
  /**
   * Most traffic log bytes kept (the lines' text, oldest trimmed first,
   * down to 90% of it); default {@link DEFAULT_MAX_LOG_BYTES}.
   */
  maxLogBytes?: number;
}

/**
 * Default bound of the traffic log, in bytes of line text (256 MiB).
 *
 * @example
 * ```ts
 * import { DEFAULT_MAX_LOG_BYTES } from "./kv_store.ts";
 * console.log(DEFAULT_MAX_LOG_BYTES); // 268435456
 * ```
 */
export const DEFAULT_MAX_LOG_BYTES = 256 * 1024 * 1024;

/**
 * Default bound of the traffic log, in entries.
 *
 * @example
 * ```ts
 * import { DEFAULT_MAX_LOG_ENTRIES } from "./kv_store.ts";
 * console.log(DEFAULT_MAX_LOG_ENTRIES); // 100000
 * ```
 */
export const DEFAULT_MAX_LOG_ENTRIES = 100_000;

/** Largest record part stored in one value (KV values are ≤ 64 KiB). */
export const PART_BYTES = 60_000;

// Deno KV's limits are 1,000 mutations, 800 KiB of mutations and 80 KiB of
// keys per atomic commit; stay under them with estimates.
const MAX_MUTATIONS = 990;
const MAX_COMMIT_BYTES = 760_000;
const MAX_KEY_BYTES = 72_000;
const STAGE_PARTS = 10;
// Fields copied from remote lines into thread records are clipped.
const CLIP = 4096;
const MAX_KEY_TEXT = 128;
const LAST_ID: Key = ["id", "last"];
const LOG_SEQ: Key = ["seq", "log"];
/** The bytes of line text the log holds now (kept with each append/trim). */
const LOG_BYTES: Key = ["seq", "logbytes"];
const END_SEQ = Number.MAX_SAFE_INTEGER;
// The log is trimmed every this many appends at most (fewer for small bounds).
const TRIM_EVERY = 1000;
/** Thread states after which a thread's dedup watermark may be forgotten. */
const ENDED_STATES: ReadonlySet<string> = new Set(["done", "failed", "closed"]);

const utf8 = new TextEncoder();
const fromUtf8 = new TextDecoder();

/**
 * Encodes a key as a string whose order matches the key order, and whose
 * prefixes are the encodings of the key's prefixes.
 *
 * @example
 * ```ts
 * import { encodeKey } from "./kv_store.ts";
 * console.log(encodeKey(["a", 2]) < encodeKey(["a", 10])); // true
 * console.log(encodeKey(["a", 2, 0]).startsWith(encodeKey(["a", 2]))); // true
 * ```
 */
export function encodeKey(key: Key): string {
  let out = "";
  for (const part of key) {
    if (typeof part === "number") {
      if (!Number.isSafeInteger(part) || part < 0) {
        throw new RangeError(
          `key part must be a non-negative integer: ${part}`,
        );
      }
      out += "n" + part.toString().padStart(16, "0");
    } else {
      out += "s" + part.replaceAll("\0", "\0\x01") + "\0\0";
    }
  }
  return out;
}

/** Short keys are kept as they are; long ones are hashed (KV keys ≤ 2 KiB). */
function keyText(text: string): string {
  if (text.length <= MAX_KEY_TEXT) return text;
  return "#" + sha256Hex(text);
}

function threadKey(th: string | undefined): string {
  return th === undefined ? "" : keyText(th);
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

function concat(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.byteLength, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.byteLength;
  }
  return out;
}

function decodeRecord(bytes: Uint8Array): unknown {
  return JSON.parse(fromUtf8.decode(bytes));
}

function clip(text: string): string {
  return text.length > CLIP ? text.slice(0, CLIP) : text;
}

function requireText(value: unknown, what: string): string {
  if (typeof value !== "string" || value === "") {
    throw new TypeError(
      `${what} must be a non-empty string, got ${JSON.stringify(value)}`,
    );
  }
  return value;
}

/** Reads a possibly split record: inline bytes, or a parts count. */
async function assemble(
  key: Key,
  head: unknown,
  get: (key: Key) => Promise<unknown>,
): Promise<unknown> {
  if (head instanceof Uint8Array) return decodeRecord(head);
  if (typeof head !== "number") return undefined;
  const parts: Uint8Array[] = [];
  for (let k = 0; k < head; k++) {
    const part = await get([...key, k]);
    if (!(part instanceof Uint8Array)) return undefined;
    parts.push(part);
  }
  return decodeRecord(concat(parts));
}

/** A listed record with the number of parts it was split into. */
interface Listed {
  key: Key;
  value: unknown;
  parts: number;
}

/** Lists the records at key length `depth` in `range`, joining split ones. */
async function* listRecords(
  backend: KvBackend,
  range: KeyRange,
  depth: number,
): AsyncGenerator<Listed> {
  let open: { key: Key; n: number; parts: Uint8Array[] } | undefined;
  for await (const { key, value } of backend.list(range)) {
    if (key.length === depth) {
      open = undefined;
      if (value instanceof Uint8Array) {
        yield { key, value: decodeRecord(value), parts: 0 };
      } else if (typeof value === "number") {
        open = { key, n: value, parts: [] };
      }
    } else if (
      open && key.length === depth + 1 && key[depth] === open.parts.length &&
      value instanceof Uint8Array && open.key.every((p, i) => key[i] === p)
    ) {
      open.parts.push(value);
      if (open.parts.length === open.n) {
        yield {
          key: open.key,
          value: decodeRecord(concat(open.parts)),
          parts: open.n,
        };
        open = undefined;
      }
    }
    // Anything else is a staged part without its head yet: skipped.
  }
}

/** A mutation that remembers its encoded key. */
interface KeyedMutation extends Mutation {
  encoded?: string;
}

/** The writes and reads of one queued call, before they are packed. */
class Tx {
  #backend: KvBackend;
  #overlay: Map<string, Mutation>;
  #prefetched: Map<string, unknown>;
  /** Mutations this call made, by encoded key (latest wins). */
  readonly local: Map<string, Mutation> = new Map();
  /** Closed groups, each atomic, in commit order. */
  readonly done: Mutation[][] = [];
  #open: Mutation[] = [];

  constructor(
    backend: KvBackend,
    overlay: Map<string, Mutation>,
    prefetched: Map<string, unknown>,
  ) {
    this.#backend = backend;
    this.#overlay = overlay;
    this.#prefetched = prefetched;
  }

  /** All groups, the open one last. */
  get groups(): Mutation[][] {
    return this.#open.length > 0 ? [...this.done, this.#open] : this.done;
  }

  get(key: Key): Promise<unknown> {
    const k = encodeKey(key);
    const m = this.local.get(k) ?? this.#overlay.get(k);
    if (m) return Promise.resolve(m.value);
    if (this.#prefetched.has(k)) {
      return Promise.resolve(this.#prefetched.get(k));
    }
    return this.#backend.get(key);
  }

  set(key: Key, value: unknown): void {
    const encoded = encodeKey(key);
    const m: KeyedMutation = { key, value, encoded };
    this.#open.push(m);
    this.local.set(encoded, m);
  }

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

  getRecord<T>(key: Key): Promise<T | undefined> {
    return this.get(key).then((head) =>
      assemble(key, head, (k) => this.get(k))
    ) as Promise<
      T | undefined
    >;
  }

  /**
   * Writes a record. A big one's parts go in groups committed before the
   * current one, whose other writes then share the head's commit. `fresh`
   * skips the read that cleans up parts of a bigger previous value.
   */
  async putRecord(key: Key, value: unknown, fresh = false): Promise<number> {
    const previous = fresh ? undefined : await this.get(key);
    const bytes = utf8.encode(JSON.stringify(value));
    let n = 0;
    if (bytes.byteLength <= PART_BYTES) {
      this.set(key, bytes);
    } else {
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
    if (typeof n === "number") {
      for (let k = 0; k < n; k++) this.delete([...key, k]);
    }
    this.delete(key);
  }
}

interface Cost {
  bytes: number;
  keyBytes: number;
}

/** One commit being filled, with Deno KV's limits in mind. */
class Batch {
  readonly mutations: Map<string, Mutation> = new Map();
  #count = 0;
  #bytes = 0;
  #keyBytes = 0;

  static #costs = new WeakMap<Mutation[], Cost>();

  static cost(group: Mutation[]): Cost {
    const known = Batch.#costs.get(group);
    if (known) return known;
    const cost = Batch.#measure(group);
    Batch.#costs.set(group, cost);
    return cost;
  }

  static #measure(group: Mutation[]): Cost {
    let bytes = 0;
    let keys = 0;
    for (const m of group) {
      const kb = keyBytes(m.key);
      keys += kb;
      bytes += kb + valueBytes(m.value);
    }
    return { bytes, keyBytes: keys };
  }

  get size(): number {
    return this.mutations.size;
  }

  fits(group: Mutation[]): boolean {
    const { bytes, keyBytes } = Batch.cost(group);
    return this.#count + group.length <= MAX_MUTATIONS &&
      this.#bytes + bytes <= MAX_COMMIT_BYTES &&
      this.#keyBytes + keyBytes <= MAX_KEY_BYTES;
  }

  add(group: Mutation[]): void {
    const { bytes, keyBytes } = Batch.cost(group);
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

interface Op {
  exclusive: boolean;
  /** Keys the build will read, fetched concurrently before the batch. */
  prefetch?: Key[];
  build(tx: Tx): Promise<unknown>;
  resolve(value: unknown): void;
  reject(error: unknown): void;
}

/** An outbox entry as stored: without `peer`, which is in the key. */
type StoredEntry = Omit<OutboxEntry, "peer">;

/** Dedup and resume state of one thread (or of unthreaded lines). */
interface SeenRecord {
  th?: string;
  id?: string;
  floor?: string;
  /** The highest id received in the thread: any higher one is new. */
  max?: string;
}

/** Index rows of the layout before the in-memory outbox index (deleted on open). */
const LEGACY_INDEXES = ["obt", "obc", "obq", "obx", "rxq", "logp"];

/**
 * The {@link Store} on Deno KV (or any {@link KvBackend}). Single writer:
 * one process owns a KV file at a time.
 *
 * @example
 * ```ts
 * import { KvStore } from "./kv_store.ts";
 * const store = await KvStore.open(); // in-memory KV
 * const [entry] = await store.enqueue("ed25519:peer", [{ fields: { t: "msg", th: "t1", parts: [] } }]);
 * console.log((await store.outbox("ed25519:peer"))[0].id === entry.id); // true
 * store.close();
 * ```
 */
export class KvStore implements Store {
  #backend: KvBackend;
  #ids: IdGenerator;
  #seq: number;
  #queue: Op[] = [];
  #draining = false;
  #closing = false;
  #closed = false;
  /** Writes of the current drain not yet known durable, for reads in it. */
  #overlay: Map<string, Mutation> = new Map();
  /** Values read ahead for the current drain (older than the overlay). */
  #prefetched: Map<string, unknown> = new Map();
  #maxLog: number;
  #trimEvery: number;
  /** Log appends since the last trim was scheduled. */
  #sinceTrim = 0;
  #maxLogBytes: number;
  /**
   * The highest log seq dropped: trims queued together see the same
   * committed entries, and must not drop (and count) one twice.
   */
  #droppedThrough = 0;
  /** Bytes of line text in the log (see {@link LOG_BYTES}). */
  #logBytes: number;
  /** The outbox's index, kept in step with every enqueue and drop. */
  #index = new OutboxIndex();
  // Every handshake reads the peer's record, all grants and revocations:
  // served from memory, kept in step by this store's writes of them.
  #peerCache = new ReadCache<string, PeerRecord | undefined>();
  #grantCache = new ReadCache<"all", GrantRecord[]>();
  #revokedCache = new ReadCache<string, boolean>();

  /**
   * Wraps a backend; `lastId` and `seq` resume the id generator and the log
   * sequence. Use {@link KvStore.open} for Deno KV. Throws a one-line
   * RangeError for a bad `options.maxLogEntries`.
   */
  constructor(
    backend: KvBackend,
    resume: { lastId?: string; seq?: number; logBytes?: number } = {},
    options: KvStoreOptions = {},
  ) {
    this.#maxLog = checkMaxLog(options.maxLogEntries);
    this.#maxLogBytes = options.maxLogBytes ?? DEFAULT_MAX_LOG_BYTES;
    if (!(this.#maxLogBytes > 0)) {
      throw new RangeError(
        `maxLogBytes must be a positive number or Infinity, got ${options.maxLogBytes}`,
      );
    }
    this.#logBytes = resume.logBytes ?? 0;
    this.#backend = backend;
    this.#ids = new IdGenerator({ last: resume.lastId });
    this.#seq = resume.seq ?? 0;
    this.#trimEvery = Math.max(
      1,
      Math.min(TRIM_EVERY, Math.ceil(this.#maxLog / 10)),
    );
  }

  /**
   * Opens Deno KV at `path`: undefined for an in-memory KV, a file path, or
   * a KV Connect URL (http/https, with `DENO_KV_ACCESS_TOKEN`). A log over
   * `options.maxLogEntries` (a smaller bound than last time) is trimmed.
   */
  static async open(
    path?: string,
    options: KvStoreOptions = {},
  ): Promise<KvStore> {
    checkMaxLog(options.maxLogEntries);
    const kv = await Deno.openKv(path ?? ":memory:");
    try {
      const backend = new DenoKvBackend(kv);
      const lastId = await backend.get(LAST_ID);
      const seq = await backend.get(LOG_SEQ);
      const logBytes = await backend.get(LOG_BYTES);
      const store = new KvStore(backend, {
        lastId: typeof lastId === "string" ? lastId : undefined,
        seq: typeof seq === "number" ? seq : 0,
        logBytes: typeof logBytes === "number" ? logBytes : 0,
      }, options);
      await store.#cleanStaged();
      await store.#dropLegacyIndexes();
      await store.#loadIndex();
      await store.#trimLog();
      return store;
    } catch (error) {
      kv.close();
      throw error;
    }
  }

  /** Deletes the parts of split records whose head never got written. */
  #cleanStaged(): Promise<void> {
    return this.#submit(true, async (tx) => {
      for await (
        const { key, value } of this.#backend.list({ prefix: ["pend"] })
      ) {
        const head = key.slice(1);
        for (let k = 0; k < (typeof value === "number" ? value : 0); k++) {
          tx.delete([...head, k]);
        }
        tx.delete(key);
        tx.cut();
      }
    }) as Promise<void>;
  }

  /** Deletes the index rows an older layout wrote (see the module doc). */
  #dropLegacyIndexes(): Promise<void> {
    return this.#submit(true, async (tx) => {
      for (const prefix of LEGACY_INDEXES) {
        for await (const { key } of this.#backend.list({ prefix: [prefix] })) {
          tx.delete(key);
          tx.cut();
        }
      }
    }) as Promise<void>;
  }

  /** Rebuilds the outbox index from the `ob` records. */
  #loadIndex(): Promise<void> {
    return this.#submit(true, async () => {
      for await (
        const { key, value, parts } of listRecords(this.#backend, {
          prefix: ["ob"],
        }, 3)
      ) {
        const e = value as StoredEntry;
        this.#index.add(key[1] as string, metaOf(e, parts));
      }
    }) as Promise<void>;
  }

  #submit<T>(
    exclusive: boolean,
    build: (tx: Tx) => Promise<T> | T,
    prefetch?: Key[],
  ): Promise<T> {
    if (this.#closing) return Promise.reject(new Error("store is closed"));
    return new Promise<T>((resolve, reject) => {
      this.#queue.push({
        exclusive,
        prefetch,
        build: async (tx) => await build(tx),
        resolve: resolve as (value: unknown) => void,
        reject,
      });
      if (!this.#draining) {
        this.#draining = true;
        queueMicrotask(() => this.#drain());
      }
    });
  }

  async #drain(): Promise<void> {
    while (this.#queue.length > 0) {
      const ops = this.#queue.splice(0);
      await this.#prefetch(ops);
      let batch = new Batch();
      let waiting: Array<{ op: Op; result: unknown }> = [];
      let failure: unknown = undefined;
      let failed = false;
      const flush = async (): Promise<boolean> => {
        const done = waiting;
        const current = batch;
        waiting = [];
        batch = new Batch();
        if (current.size > 0) {
          try {
            await this.#backend.commit([...current.mutations.values()]);
          } catch (error) {
            failed = true;
            failure = error;
            this.#overlay.clear();
            for (const w of done) w.op.reject(error);
            return false;
          }
        }
        for (const w of done) w.op.resolve(w.result);
        return true;
      };
      for (const op of ops) {
        if (failed) {
          op.reject(failure);
          continue;
        }
        if (op.exclusive) {
          if (!await flush()) {
            op.reject(failure);
            continue;
          }
          this.#overlay.clear();
          this.#prefetched.clear();
        }
        const tx = new Tx(this.#backend, this.#overlay, this.#prefetched);
        let result: unknown;
        try {
          result = await op.build(tx);
          for (const group of tx.groups) {
            if (!new Batch().fits(group)) {
              throw new RangeError("write too large for one Deno KV commit");
            }
          }
        } catch (error) {
          op.reject(error);
          continue;
        }
        for (const [k, m] of tx.local) this.#overlay.set(k, m);
        let ok = true;
        for (const group of tx.groups) {
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
      }
      await flush();
      this.#overlay.clear();
      this.#prefetched.clear();
    }
    this.#draining = false;
    if (this.#closing && !this.#closed) this.#close();
  }

  /** Reads the keys the batch will need concurrently, not one by one. */
  async #prefetch(ops: Op[]): Promise<void> {
    const keys = new Map<string, Key>();
    for (const op of ops) {
      for (const key of op.prefetch ?? []) keys.set(encodeKey(key), key);
    }
    const all = [...keys];
    for (let i = 0; i < all.length; i += 256) {
      const slice = all.slice(i, i + 256);
      try {
        const values = await Promise.all(
          slice.map(([, key]) => this.#backend.get(key)),
        );
        slice.forEach(([k], j) => this.#prefetched.set(k, values[j]));
      } catch {
        return; // The builds will read (and report) for themselves.
      }
    }
  }

  #close(): void {
    this.#closed = true;
    this.#backend.close();
  }

  /** Closes the store once queued writes are done; later calls reject. */
  close(): void {
    if (this.#closing) return;
    this.#closing = true;
    if (!this.#draining) this.#close();
  }

  identity(create: () => Uint8Array): Promise<Uint8Array> {
    return this.#submit(false, async (tx) => {
      const seed = await tx.get(["identity"]);
      if (seed instanceof Uint8Array) return seed.slice();
      const made = create();
      if (!(made instanceof Uint8Array) || made.byteLength !== 32) {
        throw new TypeError("identity seed must be 32 bytes");
      }
      tx.set(["identity"], made.slice());
      return made.slice();
    });
  }

  nextId(): string {
    return this.#ids.next();
  }

  enqueue(peer: string, drafts: OutboxDraft[]): Promise<OutboxEntry[]> {
    try {
      requireText(peer, "enqueue: peer");
      if (!Array.isArray(drafts)) {
        throw new TypeError("enqueue: drafts must be an array");
      }
    } catch (error) {
      return Promise.reject(error);
    }
    const queuedAt = Date.now();
    const ts = timestamp(queuedAt);
    const entries: OutboxEntry[] = [];
    try {
      // Ids are taken now, in call order; commits happen in the same order.
      for (const draft of drafts) {
        entries.push(this.#entry(peer, draft, ts, queuedAt));
      }
    } catch (error) {
      return Promise.reject(error);
    }
    if (entries.length === 0) return Promise.resolve([]);
    const pk = keyText(peer);
    // Indexed now, in id order; the entries are sent only once committed,
    // so no ack can come for them before.
    const metas = entries.map((e) => metaOf(e, 0));
    for (const meta of metas) this.#index.add(pk, meta);
    const done = this.#submit(false, async (tx) => {
      for (let i = 0; i < entries.length; i++) {
        const { peer: _, ...stored } = entries[i];
        metas[i].n = await tx.putRecord(["ob", pk, stored.id], stored, true);
        tx.set(LAST_ID, stored.id);
        tx.cut();
      }
      return entries;
    });
    done.catch(() => {
      for (const meta of metas) this.#index.remove(pk, meta.id);
    });
    return done;
  }

  #entry(
    peer: string,
    draft: OutboxDraft,
    ts: string,
    queuedAt: number,
  ): OutboxEntry {
    const fields = draft?.fields;
    if (
      typeof fields !== "object" || fields === null ||
      typeof fields.t !== "string"
    ) {
      throw new TypeError("enqueue: each draft needs fields with a string t");
    }
    if (fields.th !== undefined && typeof fields.th !== "string") {
      throw new TypeError("enqueue: fields.th must be a string");
    }
    const { id: _id, ts: _ts, ...rest } = fields;
    if (fields.t === "chunk") {
      if (draft.chunk === undefined) {
        throw new TypeError(
          "enqueue: a chunk draft needs a ChunkSource (chunk data is never outboxed)",
        );
      }
      delete rest.data;
    }
    const entry: OutboxEntry = {
      peer,
      id: this.#ids.next(),
      ts,
      t: fields.t,
      fields: rest as OutboxEntry["fields"],
      queuedAt,
    };
    if (fields.th !== undefined) entry.th = fields.th;
    if (draft.chunk !== undefined) entry.chunk = { ...draft.chunk };
    return entry;
  }

  /** True while the line `id` to `peer` waits for its ack. */
  inOutbox(peer: string, id: string): Promise<boolean> {
    return Promise.resolve(
      this.#index.get(keyText(peer), id) !== undefined,
    );
  }

  async outbox(peer: string): Promise<OutboxEntry[]> {
    const out: OutboxEntry[] = [];
    const range = {
      prefix: ["ob", keyText(requireText(peer, "outbox: peer"))],
    };
    const pk = range.prefix[1];
    for await (const { value } of listRecords(this.#backend, range, 3)) {
      const e = value as StoredEntry;
      // An acked entry whose delete is not committed yet is already gone.
      if (this.#index.get(pk, e.id)) out.push({ ...e, peer });
    }
    return out;
  }

  replay(
    peer: string,
    seen: Record<string, string>,
    onCovered?: (entry: OutboxEntry) => void,
  ): Promise<OutboxEntry[]> {
    const pk = keyText(peer);
    const covered: OutboxEntry[] = [];
    return this.#submit(true, async (tx) => {
      const out: OutboxEntry[] = [];
      // Only indexed entries are replayed: none, nothing to list (most
      // handshakes).
      if (this.#index.list(pk).length === 0) return out;
      for await (
        const { value, parts } of listRecords(this.#backend, {
          prefix: ["ob", pk],
        }, 3)
      ) {
        const e = value as StoredEntry;
        // Acked already, its delete not committed yet: not sent again.
        if (!this.#index.get(pk, e.id)) continue;
        const last = e.th !== undefined && Object.hasOwn(seen, e.th)
          ? seen[e.th]
          : undefined;
        if (typeof last === "string" && e.id <= last) {
          this.#index.remove(pk, e.id);
          this.#dropEntry(tx, pk, e.id, parts);
          covered.push({ ...e, peer });
        } else {
          out.push({ ...e, peer });
        }
      }
      return out;
    }).then((out) => {
      for (const e of covered) onCovered?.(e);
      return out;
    });
  }

  /** Deletes one outbox record and its parts (already out of the index). */
  #dropEntry(tx: Tx, pk: string, id: string, parts: number): void {
    const key: Key = ["ob", pk, id];
    for (let k = 0; k < parts; k++) tx.delete([...key, k]);
    tx.delete(key);
    tx.cut();
  }

  acked(peer: string, _th: string | undefined, id: string): Promise<boolean> {
    const pk = keyText(peer);
    // The index answers at once; only the deletes go to the committer, so
    // acks arriving together share one commit and read nothing.
    // The entry's own thread counts, whatever `th` the ack carried.
    const drops = this.#index.ackDrops(pk, id);
    if (drops.length === 0) return Promise.resolve(false);
    return this.#submit(false, (tx) => {
      for (const m of drops) this.#dropEntry(tx, pk, m.id, m.n);
      return true;
    });
  }

  /** Removes the outbox chunk entries of `ref` to `peer` (refused blob). */
  dropBlob(peer: string, ref: string): Promise<number> {
    try {
      requireText(peer, "dropBlob: peer");
      requireText(ref, "dropBlob: ref");
    } catch (error) {
      return Promise.reject(error);
    }
    const pk = keyText(peer);
    const drops = this.#index.list(pk).filter((m) =>
      m.t === "chunk" && m.ref === ref
    );
    for (const m of drops) this.#index.remove(pk, m.id);
    if (drops.length === 0) return Promise.resolve(0);
    return this.#submit(false, (tx) => {
      for (const m of drops) this.#dropEntry(tx, pk, m.id, m.n);
      return drops.length;
    });
  }

  /**
   * Retention, for everything older than `olderThan` (ms since the epoch):
   * outbox entries queued before it (their count is the result); exact
   * received ids, folded into their thread's dedup floor; log entries from
   * the oldest on, up to the first one not older; and the `seen` record of
   * threads that ended (either side done, failed or closed) and did not
   * change since. After that a replayed old line of such a thread counts as
   * new, and resume no longer lists the thread.
   */
  expireOutbox(olderThan: number): Promise<number> {
    if (!Number.isFinite(olderThan)) {
      return Promise.reject(
        new TypeError(
          `expireOutbox: olderThan must be a time in ms, got ${olderThan}`,
        ),
      );
    }
    const end = Math.max(0, Math.ceil(olderThan));
    return this.#submit(true, async (tx) => {
      let count = 0;
      // Ended threads first, so the floors below skip their seen records.
      const forget = new Set<string>();
      for await (
        const { key, value } of listRecords(this.#backend, {
          prefix: ["thr"],
        }, 3)
      ) {
        const r = value as ThreadRecord;
        const ended = ENDED_STATES.has(r.mine?.state ?? "") ||
          ENDED_STATES.has(r.theirs?.state ?? "");
        if (ended && Date.parse(r.updated) < olderThan) {
          const seenKey: Key = ["seen", key[1], key[2]];
          forget.add(encodeKey(seenKey));
          await tx.deleteRecord(seenKey);
          tx.cut();
        }
      }
      for await (
        const listed of listRecords(this.#backend, { prefix: ["log"] }, 2)
      ) {
        if (!((listed.value as LogEntry).at < olderThan)) break;
        await this.#dropLog(tx, listed);
      }
      for (const pk of this.#index.peers()) {
        for (const m of this.#index.list(pk)) {
          if (m.q >= end) continue;
          this.#index.remove(pk, m.id);
          this.#dropEntry(tx, pk, m.id, m.n);
          count++;
        }
      }
      for await (
        const { key, value } of this.#backend.list({ prefix: ["rx"] })
      ) {
        const [, pk, tk, ik] = key as [string, string, string, string];
        const rx = value as number | { at: number; id: string };
        const at = typeof rx === "number" ? rx : rx.at;
        if (!(at < end)) continue;
        const id = typeof rx === "number" ? ik : rx.id;
        tx.delete(key);
        tx.cut();
        if (forget.has(encodeKey(["seen", pk, tk]))) continue;
        const seen = await tx.getRecord<SeenRecord>(["seen", pk, tk]) ?? {};
        if (seen.floor === undefined || id > seen.floor) {
          await tx.putRecord(["seen", pk, tk], { ...seen, floor: id });
        }
        tx.cut();
      }
      return count;
    });
  }

  receive(
    peer: string,
    lines: IncomingLine[],
    also: ReceiveExtras = {},
  ): Promise<ReceiveOutcome[]> {
    try {
      requireText(peer, "receive: peer");
      if (!Array.isArray(lines)) {
        throw new TypeError("receive: lines must be an array");
      }
      for (const line of lines) {
        requireText(line?.id, "receive: line id");
        requireText(line.t, "receive: line t");
        if (line.th !== undefined) requireText(line.th, "receive: line th");
        if (typeof line.raw !== "string") {
          throw new TypeError("receive: line raw must be a string");
        }
      }
    } catch (error) {
      return Promise.reject(error);
    }
    const pk = keyText(peer);
    // The `rx` rows are not read ahead: a line above its thread's `max` is
    // new without a read, which is every line of an in-order sender.
    const prefetch: Key[] = lines.flatMap((line) => {
      const tk = threadKey(line.th);
      return [["seen", pk, tk], ["thr", pk, tk]];
    });
    return this.#submit(false, async (tx) => {
      const out: ReceiveOutcome[] = [];
      const at = Date.now();
      const now = timestamp(at);
      // In the first line's group: one atomic write with its seen marker.
      for (const record of also.blobs ?? []) {
        await tx.putRecord(blobKey(record), record);
      }
      for (const line of lines) {
        const tk = threadKey(line.th);
        const rxKey: Key = ["rx", pk, tk, keyText(line.id)];
        const seen = await tx.getRecord<SeenRecord>(["seen", pk, tk]);
        const above = seen?.max !== undefined && line.id > seen.max;
        const duplicate = !above && (
          (seen?.floor !== undefined && line.id <= seen.floor) ||
          (await tx.get(rxKey)) !== undefined
        );
        if (duplicate) {
          out.push({ id: line.id, duplicate });
          continue;
        }
        // The log record first: if split, its parts commit before this group.
        const seq = await this.#appendLog(tx, {
          peer,
          dir: "in",
          t: line.t,
          id: line.id,
          ...(line.th === undefined ? {} : { th: line.th }),
          line: line.t === "chunk" ? elideChunk(line) : line.raw,
          at,
        });
        out.push({ id: line.id, duplicate, seq });
        const ik = keyText(line.id);
        tx.set(rxKey, ik === line.id ? at : { at, id: line.id });
        // `max` is kept from a thread's first record on (a record written
        // before it existed may have seen higher ids: it goes without).
        const max = seen === undefined
          ? line.id
          : seen.max === undefined || line.id < seen.max
          ? seen.max
          : line.id;
        if (line.th !== undefined && CONTENT_TYPES.has(line.t)) {
          await tx.putRecord(["seen", pk, tk], {
            ...seen,
            th: line.th,
            id: line.id,
            ...(max === undefined ? {} : { max }),
          });
        } else if (max !== undefined && max !== seen?.max) {
          await tx.putRecord(["seen", pk, tk], { ...seen, max });
        }
        if (line.th !== undefined && (line.t === "msg" || line.t === "state")) {
          await this.#touchThread(tx, peer, line, now);
        }
        tx.cut();
      }
      return out;
    }, prefetch);
  }

  async #touchThread(
    tx: Tx,
    peer: string,
    line: IncomingLine,
    now: string,
  ): Promise<void> {
    const th = line.th as string;
    const key: Key = ["thr", keyText(peer), threadKey(th)];
    const record = await tx.getRecord<ThreadRecord>(key) ??
      { peer, th, created: now, updated: now, unread: 0 };
    const m = line.message;
    if (line.t === "msg") {
      record.unread += 1;
      if (record.subject === undefined && typeof m.subject === "string") {
        record.subject = clip(m.subject);
      }
    } else if (typeof m.state === "string") {
      record.theirs = {
        state: clip(m.state),
        ts: typeof m.ts === "string" ? m.ts : now,
      };
      if (typeof m.note === "string") record.theirs.note = clip(m.note);
    }
    record.updated = now;
    await tx.putRecord(key, record);
  }

  async seen(peer: string): Promise<Record<string, string>> {
    const out: Record<string, string> = {};
    const range = {
      prefix: ["seen", keyText(requireText(peer, "seen: peer"))],
    };
    for await (const { value } of listRecords(this.#backend, range, 3)) {
      const s = value as SeenRecord;
      if (s.th !== undefined && s.id !== undefined) out[s.th] = s.id;
    }
    return out;
  }

  threads(peer?: string): Promise<ThreadRecord[]> {
    return this.#collect<ThreadRecord>(
      peer === undefined ? ["thr"] : ["thr", keyText(peer)],
      3,
    );
  }

  /** The record of thread `th` with `peer`, or undefined. */
  thread(peer: string, th: string): Promise<ThreadRecord | undefined> {
    return this.#read<ThreadRecord>(["thr", keyText(peer), threadKey(th)]);
  }

  /** Stores a thread record, replacing the previous one. */
  putThread(record: ThreadRecord): Promise<void> {
    try {
      requireText(record?.peer, "putThread: peer");
      requireText(record.th, "putThread: th");
    } catch (error) {
      return Promise.reject(error);
    }
    return this.#put(
      ["thr", keyText(record.peer), threadKey(record.th)],
      record,
    );
  }

  /** Our side of a thread, read and written in one step of the committer. */
  patchThread(
    peer: string,
    th: string,
    patch: ThreadPatch,
  ): Promise<ThreadRecord> {
    try {
      requireText(peer, "patchThread: peer");
      requireText(th, "patchThread: th");
    } catch (error) {
      return Promise.reject(error);
    }
    const key: Key = ["thr", keyText(peer), threadKey(th)];
    return this.#submit(false, async (tx) => {
      const now = timestamp();
      const record = await tx.getRecord<ThreadRecord>(key) ??
        { peer, th, created: now, updated: now, unread: 0 };
      if (patch.subject !== undefined && record.subject === undefined) {
        record.subject = clip(patch.subject);
      }
      if (patch.mine) {
        record.mine = { ...patch.mine, state: clip(patch.mine.state) };
        if (patch.mine.note !== undefined) {
          record.mine.note = clip(patch.mine.note);
        }
      }
      if (patch.read) record.unread = 0;
      record.updated = now;
      await tx.putRecord(key, record);
      return record;
    }, [key]);
  }

  log(entries: Omit<LogEntry, "seq">[]): Promise<void> {
    try {
      if (!Array.isArray(entries)) {
        throw new TypeError("log: entries must be an array");
      }
      for (const e of entries) {
        requireText(e?.peer, "log: peer");
        if (e.dir !== "in" && e.dir !== "out") {
          throw new TypeError(`log: dir must be "in" or "out"`);
        }
        requireText(e.t, "log: t");
        if (typeof e.line !== "string") {
          throw new TypeError("log: line must be a string");
        }
        if (!Number.isFinite(e.at)) {
          throw new TypeError("log: at must be a time in ms");
        }
      }
    } catch (error) {
      return Promise.reject(error);
    }
    if (entries.length === 0) return Promise.resolve();
    return this.#submit(false, async (tx) => {
      for (const e of entries) {
        await this.#appendLog(tx, e);
        tx.cut();
      }
    });
  }

  /** Seqs are taken in commit order, so they increase with the log. */
  async #appendLog(tx: Tx, entry: Omit<LogEntry, "seq">): Promise<number> {
    this.#logBytes += entry.line.length;
    const overBytes = this.#logBytes > this.#maxLogBytes;
    if (++this.#sinceTrim >= this.#trimEvery || overBytes) {
      this.#sinceTrim = 0;
      // Queued behind this op; a store closing meanwhile just skips it.
      this.#trimLog().catch(() => {});
    }
    const seq = ++this.#seq;
    await tx.putRecord(["log", seq], { seq, ...entry }, true);
    // No index by peer alone: one row fewer per line (readLog scans instead).
    if (entry.th !== undefined) {
      tx.set(["logt", keyText(entry.peer), threadKey(entry.th), seq], 1);
    }
    tx.set(LOG_SEQ, seq);
    tx.set(LOG_BYTES, this.#logBytes);
    return seq;
  }

  /**
   * Deletes the oldest log entries, with their parts and index keys, down to
   * the bound. Not exclusive: it only reads committed entries, older than
   * any still in the overlay, and nothing else writes them.
   */
  #trimLog(): Promise<void> {
    if (this.#maxLog === Infinity && this.#maxLogBytes === Infinity) {
      return Promise.resolve();
    }
    return this.#submit(false, async (tx) => {
      const cutoff = this.#seq - this.#maxLog;
      const overBytes = this.#logBytes > this.#maxLogBytes;
      if (cutoff < 1 && !overBytes) return;
      // Over the byte bound: down to 90% of it, so trims stay rare.
      const byteTarget = overBytes ? this.#maxLogBytes * 0.9 : Infinity;
      const end = overBytes ? this.#seq + 1 : cutoff + 1;
      const range = { start: ["log", 0], end: ["log", end] };
      for await (const listed of listRecords(this.#backend, range, 2)) {
        const e = listed.value as LogEntry;
        if (e.seq > cutoff && this.#logBytes <= byteTarget) break;
        await this.#dropLog(tx, listed);
      }
    });
  }

  /** Deletes one log entry, its parts and its index keys. */
  async #dropLog(tx: Tx, { key, value, parts }: Listed): Promise<void> {
    const e = value as LogEntry;
    if (e.seq <= this.#droppedThrough) return; // a trim before has it
    this.#droppedThrough = e.seq;
    await tx.deleteRecord(key, parts);
    this.#logBytes = Math.max(0, this.#logBytes - e.line.length);
    tx.set(LOG_BYTES, this.#logBytes);
    if (e.th !== undefined) {
      tx.delete(["logt", keyText(e.peer), threadKey(e.th), e.seq]);
    }
    tx.cut();
  }

  /** Log entries in `seq` order, filtered by `query`. */
  async readLog(query: LogQuery = {}): Promise<LogEntry[]> {
    const limit = query.limit ?? Infinity;
    const start = query.after === undefined
      ? 0
      : Math.max(0, Math.floor(query.after) + 1);
    const out: LogEntry[] = [];
    if (limit <= 0 || start > END_SEQ) return out;
    if (query.peer !== undefined && query.th !== undefined) {
      const base: Key = ["logt", keyText(query.peer), threadKey(query.th)];
      for await (
        const { key } of this.#backend.list({
          start: [...base, start],
          end: [...base, END_SEQ],
        })
      ) {
        const entry = await this.#read<LogEntry>(["log", key[key.length - 1]]);
        if (entry && entry.peer === query.peer && entry.th === query.th) {
          out.push(entry);
          if (out.length >= limit) break;
        }
      }
      return out;
    }
    const range = { start: ["log", start], end: ["log", END_SEQ] };
    for await (const { value } of listRecords(this.#backend, range, 2)) {
      const entry = value as LogEntry;
      if (query.th !== undefined && entry.th !== query.th) continue;
      if (query.peer !== undefined && entry.peer !== query.peer) continue;
      out.push(entry);
      if (out.length >= limit) break;
    }
    return out;
  }

  /** Every known peer. */
  peers(): Promise<PeerRecord[]> {
    return this.#collect<PeerRecord>(["peer"], 2);
  }

  /** The record of the peer with this key, or undefined. */
  peer(key: string): Promise<PeerRecord | undefined> {
    const k = keyText(key);
    return this.#peerCache.read(k, () => this.#read<PeerRecord>(["peer", k]));
  }

  /** Stores a peer record, replacing the previous one. */
  putPeer(record: PeerRecord): Promise<void> {
    try {
      requireText(record?.key, "putPeer: key");
    } catch (error) {
      return Promise.reject(error);
    }
    const k = keyText(record.key);
    return this.#peerCache.write(k, () => this.#put(["peer", k], record));
  }

  /** Reads and replaces a peer record in one step of the committer. */
  updatePeer(
    key: string,
    update: (known: PeerRecord | undefined) => PeerRecord,
  ): Promise<PeerRecord> {
    const k: Key = ["peer", keyText(key)];
    return this.#peerCache.write(
      k[1] as string,
      () =>
        this.#submit(false, async (tx) => {
          const record = update(await tx.getRecord<PeerRecord>(k));
          requireText(record?.key, "updatePeer: key");
          await tx.putRecord(k, record);
          return record;
        }, [k]),
    );
  }

  /** Stores a grant under its hash. */
  putGrant(record: GrantRecord): Promise<void> {
    try {
      if (!["issued", "held", "presented"].includes(record?.kind)) {
        throw new TypeError(`putGrant: kind must be issued, held or presented`);
      }
      requireText(record.hash, "putGrant: hash");
    } catch (error) {
      return Promise.reject(error);
    }
    return this.#grantCache.write(
      "all",
      () => this.#put(["grant", record.kind, keyText(record.hash)], record),
    );
  }

  /** Stored grants, optionally of one kind. */
  async grants(kind?: GrantKind): Promise<GrantRecord[]> {
    const all = await this.#grantCache.read(
      "all",
      () => this.#collect<GrantRecord>(["grant"], 3),
    );
    // Listed by key, so one kind's records keep their order.
    return kind === undefined ? all : all.filter((r) => r.kind === kind);
  }

  /** Marks the grant with this hash as revoked. */
  revoke(hash: string): Promise<void> {
    const key: Key = ["revoked", keyText(requireText(hash, "revoke: hash"))];
    return this.#revokedCache.write(
      key[1] as string,
      () => this.#submit(false, (tx) => tx.set(key, Date.now())),
    );
  }

  /** Whether the grant with this hash was revoked. */
  async isRevoked(hash: string): Promise<boolean> {
    const k = keyText(hash);
    return await this.#revokedCache.read(
      k,
      async () => (await this.#backend.get(["revoked", k])) !== undefined,
    );
  }

  /** Stores a blob transfer record, replacing the previous one. */
  putBlob(record: BlobRecord): Promise<void> {
    try {
      requireText(record?.peer, "putBlob: peer");
      requireText(record.ref, "putBlob: ref");
      if (record.dir !== "in" && record.dir !== "out") {
        throw new TypeError(`putBlob: dir must be "in" or "out"`);
      }
    } catch (error) {
      return Promise.reject(error);
    }
    return this.#put(blobKey(record), record);
  }

  /**
   * The transfer record of `ref` with `peer` in direction `dir`, or undefined.
   */
  blob(
    peer: string,
    ref: string,
    dir: Direction,
  ): Promise<BlobRecord | undefined> {
    return this.#read<BlobRecord>(["blob", keyText(peer), dir, keyText(ref)]);
  }

  /** Blob transfer records, optionally for one peer. */
  blobs(peer?: string): Promise<BlobRecord[]> {
    return this.#collect<BlobRecord>(
      peer === undefined ? ["blob"] : ["blob", keyText(peer)],
      4,
    );
  }

  /** Stores a request journal record, replacing the previous one. */
  putRequest(record: RequestRecord): Promise<void> {
    try {
      requireText(record?.peer, "putRequest: peer");
      requireText(record.re, "putRequest: re");
    } catch (error) {
      return Promise.reject(error);
    }
    return this.#put(requestKey(record.peer, record.re, record.part), record);
  }

  /** The journal record of part `part` of msg `re` from `peer`. */
  request(
    peer: string,
    re: string,
    part: number,
  ): Promise<RequestRecord | undefined> {
    return this.#read<RequestRecord>(requestKey(peer, re, part));
  }

  /** Every request journal record. */
  requests(): Promise<RequestRecord[]> {
    return this.#collect<RequestRecord>(["req"], 4);
  }

  /** Removes a request journal record. */
  dropRequest(peer: string, re: string, part: number): Promise<void> {
    const key = requestKey(peer, re, part);
    return this.#submit(false, (tx) => tx.deleteRecord(key));
  }

  getMeta<T>(name: string): Promise<T | undefined> {
    return this.#read<T>(["meta", keyText(name)]);
  }

  /** Persists a small value under `name`; undefined deletes it. */
  setMeta<T>(name: string, value: T): Promise<void> {
    const key: Key = ["meta", keyText(requireText(name, "setMeta: name"))];
    if (value === undefined) {
      return this.#submit(false, (tx) => tx.deleteRecord(key));
    }
    return this.#put(key, value);
  }

  #put(key: Key, value: unknown): Promise<void> {
    return this.#submit(false, async (tx) => {
      await tx.putRecord(key, value);
    });
  }

  async #read<T>(key: Key): Promise<T | undefined> {
    const head = await this.#backend.get(key);
    return await assemble(key, head, (k) => this.#backend.get(k)) as
      | T
      | undefined;
  }

  async #collect<T>(prefix: Key, depth: number): Promise<T[]> {
    const out: T[] = [];
    for await (
      const { value } of listRecords(this.#backend, { prefix }, depth)
    ) out.push(value as T);
    return out;
  }
}

/** The key of a request journal record. */
function requestKey(peer: string, re: string, part: number): Key {
  return ["req", keyText(peer), keyText(re), part];
}

/** Where a blob transfer record is stored. */
function blobKey(record: BlobRecord): Key {
  return ["blob", keyText(record.peer), record.dir, keyText(record.ref)];
}

/** The index entry of a stored outbox entry split into `parts`. */
function metaOf(e: StoredEntry, parts: number): OutboxMeta {
  const meta: OutboxMeta = {
    id: e.id,
    t: e.t,
    tk: e.th === undefined ? null : threadKey(e.th),
    q: e.queuedAt,
    n: parts,
  };
  if (e.t === "chunk" && typeof e.fields.ref === "string") {
    meta.ref = e.fields.ref;
  }
  return meta;
}

/** Validates a `maxLogEntries` option; undefined gives the default. */
function checkMaxLog(value: unknown): number {
  if (value === undefined) return DEFAULT_MAX_LOG_ENTRIES;
  if (
    value !== Infinity &&
    (typeof value !== "number" || !Number.isSafeInteger(value) || value < 1)
  ) {
    throw new RangeError(
      `maxLogEntries must be a positive integer or Infinity, got ${
        typeof value === "string" ? JSON.stringify(value) : String(value)
      }`,
    );
  }
  return value as number;
}

/** A received chunk line for the log, without its data. */
function elideChunk(line: IncomingLine): string {
  const { data: _, ...rest } = line.message;
  return JSON.stringify(rest);
}

/** {@link KvBackend} on a `Deno.Kv`. */
class DenoKvBackend implements KvBackend {
  #kv: Deno.Kv;

  constructor(kv: Deno.Kv) {
    this.#kv = kv;
  }

  async get(key: Key): Promise<unknown> {
    const entry = await this.#kv.get(key as Deno.KvKey);
    return entry.versionstamp === null ? undefined : entry.value;
  }

  async *list(range: KeyRange): AsyncIterable<{ key: Key; value: unknown }> {
    for await (
      const entry of this.#kv.list(range as Deno.KvListSelector, {
        batchSize: 500,
      })
    ) {
      yield { key: entry.key as Key, value: entry.value };
    }
  }

  async commit(mutations: Mutation[]): Promise<void> {
    const op = this.#kv.atomic();
    for (const m of mutations) {
      if (m.value === undefined) op.delete(m.key as Deno.KvKey);
      else op.set(m.key as Deno.KvKey, m.value);
    }
    const result = await op.commit();
    if (!result.ok) throw new Error("Deno KV commit failed");
  }

  close(): void {
    this.#kv.close();
  }
}
