/**
 * The durable {@link Store} on Deno KV: the AWP records, each in its own
 * module, written through one {@link GroupCommitter} (the KV engine in
 * `storage/kv/`: group commit within Deno KV's limits, records split over
 * 64 KiB values, key helpers).
 *
 * ## Where each record lives
 *
 * `pk` is the peer key, `tk` the thread id (`""` for unthreaded lines), `ik`
 * a received line's id; all three are replaced by `#<sha256 hex>` when over
 * 128 characters (KV keys ≤ 2 KiB).
 *
 * | key | value | module |
 * |-----|-------|--------|
 * | `["ob", pk, id]`, `["id", "last"]` | outbox entry; highest id | {@link Outbox} (outbox.ts) |
 * | `["rx", pk, tk, ik]` | dedup and log index of a received line | {@link ReceivedLines} (received_lines.ts) |
 * | `["thr", pk, tk]` | {@link ThreadRecord} and the thread's resume watermark and dedup marker (`seen`) | {@link ThreadRecords} (thread_records.ts), {@link ReceivedLines} |
 * | `["log", seq]`, `["logt", pk, tk, seq]`, `["seq", …]` | traffic log (received lines: a page per group) | {@link TrafficLog} (traffic_log.ts) |
 * | `["peer", pk]` | {@link PeerRecord} | {@link PeerRecords} (peer_records.ts) |
 * | `["grant", kind, hash]`, `["revoked", hash]` | grants, revocations | {@link GrantRecords} (grant_records.ts) |
 * | `["blob", pk, dir, ref]` | {@link BlobRecord} | {@link BlobRecords} (blob_records.ts) |
 * | `["req", pk, re, part]` | {@link RequestRecord} | {@link RequestJournal} (request_journal.ts) |
 * | `["identity"]` | 32-byte seed | here |
 * | `["rxfloor"]` | a time no `rx` entry is older than | {@link ReceivedLines} |
 * | `["meta", name]` | any JSON value | here |
 * | `["pend", ...key]` | parts count of a split record not yet complete | kv/tx.ts |
 *
 * Stores written before the in-memory outbox index have `obt`, `obc`,
 * `obq`, `obx`, `rxq` and `logp` (log by peer) index rows; open deletes
 * them. Stores written before the fold of the marker into the thread's row
 * have `["seen", pk, tk]` rows; open moves them ({@link foldSeenRows}).
 *
 * @module
 */

import { BlobRecords } from "./blob_records.ts";
import { GrantRecords } from "./grant_records.ts";
import { GroupCommitter } from "./kv/group_committer.ts";
import { DenoKvBackend, type KvBackend } from "./kv/kv_backend.ts";
import { type Key, keyText } from "./kv/key.ts";
import { LAST_ID, Outbox } from "./outbox.ts";
import { PeerRecords } from "./peer_records.ts";
import { ReceivedLines, RX_FLOOR } from "./received_lines.ts";
import { RequestJournal } from "./request_journal.ts";
import { requireText } from "./require_text.ts";
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
  OutboxRecords,
  PeerRecord,
  ReceiveExtras,
  ReceiveOutcome,
  RequestRecord,
  Store,
  ThreadPatch,
  ThreadRecord,
} from "./store.ts";
import { foldSeenRows, ThreadRecords } from "./thread_records.ts";
import {
  checkMaxLog,
  TrafficLog,
  type TrafficLogBounds,
} from "./traffic_log.ts";

export {
  DEFAULT_MAX_LOG_BYTES,
  DEFAULT_MAX_LOG_ENTRIES,
} from "./traffic_log.ts";

/**
 * Options of {@link KvStore} and `MemoryStore`: the traffic log's bounds.
 *
 * @example
 * ```ts
 * import type { KvStoreOptions } from "./kv_store.ts";
 * const options: KvStoreOptions = { maxLogEntries: 10_000 };
 * console.log(options.maxLogEntries); // 10000
 * ```
 */
export type KvStoreOptions = TrafficLogBounds;

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
  #c: GroupCommitter;
  #outbox: Outbox;
  #log: TrafficLog;
  #threads: ThreadRecords;
  #received: ReceivedLines;
  #peers: PeerRecords;
  #grants: GrantRecords;
  #blobs: BlobRecords;
  #requests: RequestJournal;

  /**
   * Wraps a backend; `lastId` and `seq` resume the id generator and the log
   * sequence. Use {@link KvStore.open} for Deno KV. Throws a one-line
   * RangeError for a bad `options.maxLogEntries`.
   */
  constructor(
    backend: KvBackend,
    resume: {
      lastId?: string;
      seq?: number;
      logBytes?: number;
      /** The log's checkpoint as stored (see `TrafficLog.resume`). */
      checkpoint?: { seq: number; logBytes: number };
      /** The seq received pages are chained after (see `TrafficLog.resume`). */
      chainFrom?: number;
    } = {},
    options: KvStoreOptions = {},
  ) {
    // A received line reads its thread's row: from memory.
    this.#c = new GroupCommitter(backend, ["thr"]);
    this.#log = new TrafficLog(this.#c, {
      seq: resume.seq ?? 0,
      logBytes: resume.logBytes ?? 0,
      checkpoint: resume.checkpoint,
      chainFrom: resume.chainFrom,
    }, options);
    this.#outbox = new Outbox(this.#c, resume.lastId, this.#log);
    this.#threads = new ThreadRecords(this.#c);
    this.#received = new ReceivedLines(this.#c, this.#log);
    this.#peers = new PeerRecords(this.#c);
    this.#grants = new GrantRecords(this.#c);
    this.#blobs = new BlobRecords(this.#c);
    this.#requests = new RequestJournal(this.#c);
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
      const store = new KvStore(backend, {
        lastId: typeof lastId === "string" ? lastId : undefined,
        ...await TrafficLog.resume(backend),
      }, options);
      await store.#cleanStaged();
      await store.#dropLegacyIndexes();
      await store.#c.submit(true, (tx) => foldSeenRows(tx, backend));
      store.#log.markChain();
      await store.#outbox.load();
      await store.#log.trim();
      return store;
    } catch (error) {
      kv.close();
      throw error;
    }
  }

  /** Deletes the parts of split records whose head never got written. */
  #cleanStaged(): Promise<void> {
    return this.#c.submit(true, async (tx) => {
      for await (
        const { key, value } of this.#c.backend.list({ prefix: ["pend"] })
      ) {
        const head = key.slice(1);
        for (let k = 0; k < (typeof value === "number" ? value : 0); k++) {
          tx.delete([...head, k]);
        }
        tx.delete(key);
        tx.cut();
      }
    });
  }

  /** Deletes the index rows an older layout wrote (see the module doc). */
  #dropLegacyIndexes(): Promise<void> {
    return this.#c.submit(true, async (tx) => {
      for (const prefix of LEGACY_INDEXES) {
        for await (
          const { key } of this.#c.backend.list({ prefix: [prefix] })
        ) {
          tx.delete(key);
          tx.cut();
        }
      }
    });
  }

  /** Closes the store once queued writes are done; later calls reject. */
  close(): void {
    void this.#outbox.flushDrops().catch(() => {});
    this.#c.close();
  }

  identity(create: () => Uint8Array): Promise<Uint8Array> {
    return this.#c.submit(false, async (tx) => {
      const seed = await tx.get(["identity"]);
      if (seed instanceof Uint8Array) return seed.slice();
      const made = create();
      if (!(made instanceof Uint8Array) || made.byteLength !== 32) {
        throw new TypeError("identity seed must be 32 bytes");
      }
      tx.set(["identity"], made.slice());
      // A new store's first retention pass need not list the ids received
      // (none is older than now), if there is none yet.
      let anyReceived = false;
      for await (const _ of this.#c.backend.list({ prefix: ["rx"] })) {
        anyReceived = true;
        break;
      }
      if (!anyReceived) tx.set(RX_FLOOR, Date.now());
      return made.slice();
    });
  }

  nextId(): string {
    return this.#outbox.nextId();
  }

  enqueue(peer: string, drafts: OutboxDraft[]): Promise<OutboxEntry[]> {
    return this.#outbox.enqueue(peer, drafts);
  }

  /** The outbox records: `Peer.send` queues through them directly. */
  get outboxRecords(): OutboxRecords {
    return this.#outbox;
  }

  /** True while the line `id` to `peer` waits for its ack. */
  inOutbox(peer: string, id: string): Promise<boolean> {
    return Promise.resolve(this.#outbox.has(peer, id));
  }

  outboxCount(peer: string): Promise<number> {
    return Promise.resolve(this.#outbox.count(peer));
  }

  outbox(peer: string): Promise<OutboxEntry[]> {
    return this.#outbox.list(peer);
  }

  replay(
    peer: string,
    seen: Record<string, string>,
    onCovered?: (entry: OutboxEntry) => void,
  ): Promise<OutboxEntry[]> {
    return this.#outbox.replay(peer, seen, onCovered);
  }

  replayPages(
    peer: string,
    seen: Record<string, string>,
    onCovered?: (entry: OutboxEntry) => void,
  ): AsyncIterable<OutboxEntry[]> {
    return this.#outbox.replayPages(peer, seen, onCovered);
  }

  acked(peer: string, _th: string | undefined, id: string): Promise<boolean> {
    return this.#outbox.acked(peer, id);
  }

  /** Removes the outbox chunk entries of `ref` to `peer` (refused blob). */
  dropBlob(peer: string, ref: string): Promise<number> {
    return this.#outbox.dropBlob(peer, ref);
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
    return this.#c.submit(true, async (tx) => {
      // Ended threads first, so the floors below skip their seen records.
      const forgotten = await this.#received.forgetEnded(tx, olderThan);
      await this.#log.expire(tx, olderThan);
      const count = this.#outbox.expire(tx, end);
      await this.#received.compact(tx, end, forgotten);
      return count;
    });
  }

  /** The received lines' records (see {@link Store.received}). */
  get received(): ReceivedLines {
    return this.#received;
  }

  receive(
    peer: string,
    lines: IncomingLine[],
    also: ReceiveExtras = {},
  ): Promise<ReceiveOutcome[]> {
    return this.#received.receive(peer, lines, also);
  }

  seen(peer: string): Promise<Record<string, string>> {
    return this.#received.seen(peer);
  }

  threads(peer?: string): Promise<ThreadRecord[]> {
    return this.#threads.list(peer);
  }

  /** The record of thread `th` with `peer`, or undefined. */
  thread(peer: string, th: string): Promise<ThreadRecord | undefined> {
    return this.#threads.get(peer, th);
  }

  /** Stores a thread record, replacing the previous one. */
  putThread(record: ThreadRecord): Promise<void> {
    return this.#threads.put(record);
  }

  /** Our side of a thread, read and written in one step of the committer. */
  patchThread(
    peer: string,
    th: string,
    patch: ThreadPatch,
  ): Promise<ThreadRecord> {
    return this.#threads.patch(peer, th, patch);
  }

  log(entries: Omit<LogEntry, "seq">[]): Promise<void> {
    return this.#log.log(entries);
  }

  /** Log entries in `seq` order, filtered by `query`. */
  readLog(query: LogQuery = {}): Promise<LogEntry[]> {
    return this.#log.read(query);
  }

  /** Every known peer. */
  peers(): Promise<PeerRecord[]> {
    return this.#peers.list();
  }

  /** The record of the peer with this key, or undefined. */
  peer(key: string): Promise<PeerRecord | undefined> {
    return this.#peers.get(key);
  }

  /** Stores a peer record, replacing the previous one. */
  putPeer(record: PeerRecord): Promise<void> {
    return this.#peers.put(record);
  }

  /** Reads and replaces a peer record in one step of the committer. */
  updatePeer(
    key: string,
    update: (known: PeerRecord | undefined) => PeerRecord,
  ): Promise<PeerRecord> {
    return this.#peers.update(key, update);
  }

  /** Stores a grant under its hash. */
  putGrant(record: GrantRecord): Promise<void> {
    return this.#grants.put(record);
  }

  /** Stored grants, optionally of one kind. */
  grants(kind?: GrantKind): Promise<GrantRecord[]> {
    return this.#grants.list(kind);
  }

  /** Marks the grant with this hash as revoked. */
  revoke(hash: string): Promise<void> {
    return this.#grants.revoke(hash);
  }

  /** Whether the grant with this hash was revoked. */
  isRevoked(hash: string): Promise<boolean> {
    return this.#grants.isRevoked(hash);
  }

  /** Stores a blob transfer record, replacing the previous one. */
  putBlob(record: BlobRecord): Promise<void> {
    return this.#blobs.put(record);
  }

  /**
   * The transfer record of `ref` with `peer` in direction `dir`, or undefined.
   */
  blob(
    peer: string,
    ref: string,
    dir: Direction,
  ): Promise<BlobRecord | undefined> {
    return this.#blobs.get(peer, ref, dir);
  }

  /** Blob transfer records, optionally for one peer. */
  blobs(peer?: string): Promise<BlobRecord[]> {
    return this.#blobs.list(peer);
  }

  /** Stores a request journal record, replacing the previous one. */
  putRequest(record: RequestRecord): Promise<void> {
    return this.#requests.put(record);
  }

  /** The journal record of part `part` of msg `re` from `peer`. */
  request(
    peer: string,
    re: string,
    part: number,
  ): Promise<RequestRecord | undefined> {
    return this.#requests.get(peer, re, part);
  }

  /** Every request journal record. */
  requests(): Promise<RequestRecord[]> {
    return this.#requests.list();
  }

  /** Removes a request journal record. */
  dropRequest(peer: string, re: string, part: number): Promise<void> {
    return this.#requests.drop(peer, re, part);
  }

  getMeta<T>(name: string): Promise<T | undefined> {
    return this.#c.read<T>(["meta", keyText(name)]);
  }

  /** Persists a small value under `name`; undefined deletes it. */
  setMeta<T>(name: string, value: T): Promise<void> {
    const key: Key = ["meta", keyText(requireText(name, "setMeta: name"))];
    if (value === undefined) {
      return this.#c.submit(false, (tx) => tx.deleteRecord(key));
    }
    return this.#c.put(key, value);
  }
}
