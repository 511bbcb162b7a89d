/**
 * The durable state of one peer: the contract between the actors and the
 * storage backends ({@link KvStore} on Deno KV, {@link MemoryStore}).
 *
 * Everything that must survive `kill -9` goes through here. Rules it keeps
 * (SPEC 9.2, 9.5; NOTES items 1-3):
 * - an outgoing content line gets its id inside the same atomic commit that
 *   puts it in the outbox, so id order, outbox order and send order agree;
 * - a received content line is committed before it is acked, and a line
 *   received twice is reported as a duplicate (acked again, not delivered);
 * - `seen` only counts content lines (msg, state, chunk, introduce, mirror).
 * - grant, introduce and err lines are outboxed and replayed like content, but
 *   the remote never acks them; one leaves the outbox when the remote acks
 *   any later msg or state of the same peer, in any thread: the stream is
 *   ordered and there is one active connection per peer, so a later line's
 *   ack proves the earlier line arrived. Until then it keeps the peer
 *   "wanted" (redialed) and is replayed on every resume.
 *
 * @module
 */

import type { Grant } from "../wire/types.ts";

/** Which side wrote a line. */
export type Direction = "in" | "out";

/** A thread's soft state as one side last reported it. */
export interface SideState {
  /** The soft-state word (`working`, `done`, ...). */
  state: string;
  /** The optional note sent with it. */
  note?: string;
  /** RFC 3339 time the state was set. */
  ts: string;
}

/** One thread with one remote peer. */
export interface ThreadRecord {
  /** The remote peer's key. */
  peer: string;
  /** The thread id. */
  th: string;
  /** The subject of the thread's first msg. */
  subject?: string;
  /** Our own state. */
  mine?: SideState;
  /** The remote peer's state, as last heard. */
  theirs?: SideState;
  /** RFC 3339 time the thread was created here. */
  created: string;
  /** RFC 3339 local time of the last change (for retention). */
  updated: string;
  /** Received msgs the application has not read yet. */
  unread: number;
}

/** A change to our side of a thread ({@link Store.patchThread}). */
export interface ThreadPatch {
  /** Set as the subject when the thread has none yet. */
  subject?: string;
  /** Our new state. */
  mine?: SideState;
  /** Marks every message of the thread read. */
  read?: boolean;
}

/** A reference to spooled blob bytes, so chunk data never sits in the outbox. */
export interface ChunkSource {
  /** Path of the spooled (snapshotted) file. */
  path: string;
  /** Byte offset of the chunk in the file. */
  offset: number;
  /** Length of the chunk in bytes. */
  length: number;
}

/**
 * An outgoing content line waiting for its ack. `fields` is the message
 * without `id` and `ts` (those are allocated at enqueue time); for a chunk,
 * `fields.data` is absent and `chunk` says where to read the bytes.
 */
export interface OutboxDraft {
  /** Message fields other than `id` and `ts`; must include `t`. */
  fields: Record<string, unknown> & { t: string; th?: string };
  /** For a chunk: where its bytes are. */
  chunk?: ChunkSource;
}

/** An outbox line as stored, with its allocated id and timestamp. */
export interface OutboxEntry {
  /** The remote peer's key. */
  peer: string;
  /** The line's id. */
  id: string;
  /** The line's timestamp. */
  ts: string;
  /** The line's type. */
  t: string;
  /** The line's thread, when it has one. */
  th?: string;
  /** The message without `id` and `ts`. */
  fields: Record<string, unknown> & { t: string };
  /** For a chunk: where its bytes are. */
  chunk?: ChunkSource;
  /** Time the entry was enqueued, ms since the epoch (for retention). */
  queuedAt: number;
}

/**
 * Entries `Store.queue` took: their ids are allocated, their commit
 * is under way.
 */
export interface Queued {
  /** The entries, in id order. */
  entries: OutboxEntry[];
  /** Resolves with them once durable; rejects when the commit failed. */
  durable: Promise<OutboxEntry[]>;
  /**
   * They may go to the socket now, before `durable`: their ids are within
   * `EARLY_WRITE_MS` (5 s, storage/outbox.ts) of the last durable one, and no entry queued
   * before waits for its commit to be written.
   */
  early: boolean;
}

/**
 * The outbox records as `Peer.send` queues through them (the Deno KV one is
 * `Outbox`, storage/outbox.ts).
 */
export interface OutboxRecords {
  /**
   * {@link Store.enqueue} without waiting: the entries with their ids at
   * once, the promise of their commit, and whether they may be written
   * before it (never when `mayBeEarly` is false). Throws on a bad draft,
   * queuing nothing.
   */
  queue(peer: string, drafts: OutboxDraft[], mayBeEarly?: boolean): Queued;
}

/**
 * The wire line of an outbox entry: `t`, its id and ts, then its stored
 * fields (the envelope first, as on every line we write). A chunk's `data`
 * is added by whoever reads its bytes.
 *
 * @example
 * ```ts
 * import { entryLine } from "./store.ts";
 * const line = entryLine({
 *   peer: "p", id: "01", ts: "2026-01-01T00:00:00.000Z", t: "msg", queuedAt: 0,
 *   fields: { t: "msg", th: "t1", parts: [] },
 * });
 * console.log(Object.keys(line).join(",")); // "t,id,ts,th,parts"
 * ```
 */
export function entryLine(
  entry: OutboxEntry,
): Record<string, unknown> & { t: string } {
  // Copied key by key: no intermediate object without `t` (two lines' worth
  // of garbage per sent line otherwise: this runs for the log and the wire).
  const fields = entry.fields;
  const line: Record<string, unknown> & { t: string } = {
    t: fields.t,
    id: entry.id,
    ts: entry.ts,
  };
  for (const key in fields) {
    if (key !== "t") line[key] = fields[key];
  }
  return line;
}

/** A received content line, to be committed before its ack. */
export interface IncomingLine {
  /** The line's id. */
  id: string;
  /** The line's type. */
  t: string;
  /** The line's thread, when it has one. */
  th?: string;
  /** The parsed line. */
  message: Record<string, unknown>;
  /** The line exactly as received, without the newline. */
  raw: string;
}

/**
 * Records written in the same commit as received lines (with the first of
 * them): a blob transfer's record with the seen markers of its chunks.
 */
export interface ReceiveExtras {
  /** Blob transfer records to store, replacing the previous ones. */
  blobs?: BlobRecord[];
}

/** What happened to one received line. */
export interface ReceiveOutcome {
  /** The line's id. */
  id: string;
  /** True when this id was already received from this peer. */
  duplicate: boolean;
  /**
   * The traffic-log `seq` the line was committed under (not for
   * duplicates): a cursor for {@link Store.readLog}'s `after`.
   */
  seq?: number;
}

/** One line of the traffic log, in or out. */
export interface LogEntry {
  /** Position in the log, strictly increasing. */
  seq: number;
  /** The remote peer's key. */
  peer: string;
  /** Whether the line was received or sent. */
  dir: Direction;
  /** The line's type. */
  t: string;
  /** The line's id, when it has one. */
  id?: string;
  /** The line's thread, when it has one. */
  th?: string;
  /** The line without the newline (chunk data elided). */
  line: string;
  /** ms since the epoch. */
  at: number;
}

/** A peer we know: its key, what it calls itself, where it can be reached. */
export interface PeerRecord {
  /** The peer's key (`ed25519:...`). */
  key: string;
  /** The name the peer gave in hello. */
  name?: string;
  /** Our local name for the peer. */
  alias?: string;
  /** The peer's self-description from hello. */
  about?: string;
  /** Known addresses, newest first. */
  addresses: string[];
  /** We dialed this peer at least once (admission: keys we dialed). */
  dialed?: boolean;
  /** Capabilities the peer last announced. */
  caps?: string[];
  /** ms since the epoch we first saw the peer. */
  firstSeen: number;
  /** ms since the epoch we last saw the peer. */
  lastSeen: number;
}

/** Where a grant came from, from our point of view. */
export type GrantKind = "issued" | "held" | "presented";

/** A stored grant and its hash. */
export interface GrantRecord {
  /** Whether we issued, hold or were shown the grant. */
  kind: GrantKind;
  /** The grant's hash (see `grantHash`). */
  hash: string;
  /** The grant itself. */
  grant: Grant;
  /** For presented grants: the key that presented it. */
  from?: string;
  /** ms since the epoch the record was stored. */
  storedAt: number;
}

/** A blob transfer, in either direction. */
export interface BlobRecord {
  /** The remote peer's key. */
  peer: string;
  /** The blob's ref. */
  ref: string;
  /** Whether we receive (`in`) or send (`out`) it. */
  dir: Direction;
  /** The thread of the msg that names the blob. */
  th?: string;
  /** The blob's file name. */
  name?: string;
  /** The blob's media type. */
  mime?: string;
  /** Size in bytes. */
  size: number;
  /** Bytes done so far (received, or sent). */
  bytes: number;
  /** Next chunk index expected (in) or to send (out). */
  next: number;
  /** Where the transfer stands. */
  status: "active" | "complete" | "refused" | "failed";
  /** Spool (out), temp file (in) or final path (in, complete). */
  path: string;
  /** Lowercase hex sha256, once complete. */
  sha256?: string;
  /** ms since the epoch of the last change. */
  updated: number;
}

/**
 * A profile request this peer answers (PROFILE.md), journaled from its
 * receipt to its answer so that an acked request is answered exactly once,
 * across crashes. One record per request part; an `err forbidden` for a
 * msg is one record (`kind: "forbid"`, `part` the first forbidden part).
 */
export interface RequestRecord {
  /** The requester's key. */
  peer: string;
  /** The request msg's id. */
  re: string;
  /** The request msg's thread. */
  th: string;
  /** Index of the request part in the msg's `parts`. */
  part: number;
  /** Served here (a result msg answers it) or refused (an err forbidden). */
  kind: "serve" | "forbid";
  /** The capability it needs. */
  cap: string;
  /** The request part's mime type. */
  mime: string;
  /** The request data (serve), or the err's detail (forbid). */
  data: unknown;
  /**
   * received: committed with the msg, not started; running: being served
   * (a crash here gets an "interrupted" result); answered: the answer is in
   * the outbox (kept as a tombstone so a re-received msg is not served again).
   */
  state: "received" | "running" | "answered";
  /** ms since the epoch of the last change. */
  at: number;
}

/** Options of {@link Store.readLog}. */
export interface LogQuery {
  /** Only this peer's entries. */
  peer?: string;
  /** Only this thread's entries. */
  th?: string;
  /** Only entries with `seq` greater than this. */
  after?: number;
  /** At most this many entries. */
  limit?: number;
}

/**
 * The record store of received content lines (`ReceivedLines` in
 * `storage/received_lines.ts`): what the receive path commits into directly.
 */
export interface ReceivedRecords {
  /**
   * Commits received content lines with group commit: dedup, per-thread
   * seen, thread records, log. Resolve before acking.
   */
  receive(
    peer: string,
    lines: IncomingLine[],
    also?: ReceiveExtras,
  ): Promise<ReceiveOutcome[]>;
  /** Per thread, the last content id received from `peer` (for resume). */
  seen(peer: string): Promise<Record<string, string>>;
}

/**
 * The durable state of a peer. Implementations: KvStore, MemoryStore. Its
 * `receive` and `seen` are those of its {@link Store.received} records.
 */
export interface Store extends ReceivedRecords {
  /**
   * The received lines' records, which {@link Store.receive} and
   * {@link Store.seen} read and write too (the receive path calls them
   * directly).
   */
  readonly received: ReceivedRecords;

  /** The identity seed (32 bytes): created with `create` on first use. */
  identity(create: () => Uint8Array): Promise<Uint8Array>;

  /**
   * A fresh id for a line that is not outboxed (ack, ping, hello, ...).
   * Strictly greater than every id handed out before, by this process or
   * (for ids that were committed) an earlier one.
   */
  nextId(): string;

  /**
   * Allocates ids and timestamps for `drafts` and commits them to `peer`'s
   * outbox in one atomic commit (several, in order, if too big for one).
   * Resolves once durable, with the entries in id order.
   */
  enqueue(peer: string, drafts: OutboxDraft[]): Promise<OutboxEntry[]>;

  /** The outbox records, as `Peer.send` queues through them. */
  readonly outboxRecords: OutboxRecords;

  /** Every unacked outbox entry for `peer`, in id order. */
  outbox(peer: string): Promise<OutboxEntry[]>;

  /** How many entries wait in `peer`'s outbox (read nothing: cheap). */
  outboxCount(peer: string): Promise<number>;

  /** True while the line `id` to `peer` is in the outbox (not yet acked). */
  inOutbox(peer: string, id: string): Promise<boolean>;

  /**
   * The entries to replay after the remote's `resume`: in listed threads
   * those with id greater than the seen id, in unlisted threads all, in id
   * order. Also drops entries at or before a listed seen id, and tells
   * `onCovered` about each (the remote has them durably: as good as acked).
   */
  replay(
    peer: string,
    seen: Record<string, string>,
    onCovered?: (entry: OutboxEntry) => void,
  ): Promise<OutboxEntry[]>;

  /**
   * {@link Store.replay} read from storage a page at a time as the consumer
   * asks (each page ≤ 1,000 entries), so an outbox of any length replays in
   * bounded memory. Everything queued before the call is committed before
   * the listing starts; `onCovered` hears of a dropped entry once its drop
   * is durable. A consumer that stops early stops the listing.
   */
  replayPages(
    peer: string,
    seen: Record<string, string>,
    onCovered?: (entry: OutboxEntry) => void,
  ): AsyncIterable<OutboxEntry[]>;

  /**
   * Handles an ack of `id` in thread `th`: removes that entry, the earlier
   * never-acked non-msg/state lines of the same thread, and the earlier
   * grant, introduce and err lines to `peer` in any thread. Resolves (true
   * when the id was in the outbox) once the ack is taken: after the entry's
   * own commit, when it was written before it (`Outbox.queue`); the deletes
   * commit later, with the next commit.
   */
  acked(peer: string, th: string | undefined, id: string): Promise<boolean>;

  /**
   * Removes the chunk entries of blob `ref` still in `peer`'s outbox (the
   * remote refused it): the transfer stops, the msg naming it still goes.
   * Resolves with the number of entries removed.
   */
  dropBlob(peer: string, ref: string): Promise<number>;

  /** Removes outbox entries queued before `olderThan` (ms since epoch). */
  expireOutbox(olderThan: number): Promise<number>;

  /** Thread records, optionally for one peer. */
  threads(peer?: string): Promise<ThreadRecord[]>;
  /** The record of thread `th` with `peer`, or undefined. */
  thread(peer: string, th: string): Promise<ThreadRecord | undefined>;
  /** Stores a thread record, replacing the previous one. */
  putThread(record: ThreadRecord): Promise<void>;
  /**
   * Changes our side of a thread atomically with respect to every other
   * write (received lines count unread in their own commit), creating the
   * record if needed; concurrent patches share group commits.
   */
  patchThread(
    peer: string,
    th: string,
    patch: ThreadPatch,
  ): Promise<ThreadRecord>;

  /** Appends lines to the traffic log (batched by the caller). */
  log(entries: Omit<LogEntry, "seq">[]): Promise<void>;
  /** Log entries in `seq` order, filtered by `query`. */
  readLog(query?: LogQuery): Promise<LogEntry[]>;

  /** Every known peer. */
  peers(): Promise<PeerRecord[]>;
  /** The record of the peer with this key, or undefined. */
  peer(key: string): Promise<PeerRecord | undefined>;
  /** Stores a peer record, replacing the previous one. */
  putPeer(record: PeerRecord): Promise<void>;
  /**
   * Reads the record of `key` and stores what `update` makes of it, in one
   * step of the writer: concurrent updates never lose each other's changes.
   */
  updatePeer(
    key: string,
    update: (known: PeerRecord | undefined) => PeerRecord,
  ): Promise<PeerRecord>;

  /** Stores a grant under its hash. */
  putGrant(record: GrantRecord): Promise<void>;
  /** Stored grants, optionally of one kind. */
  grants(kind?: GrantKind): Promise<GrantRecord[]>;
  /** Marks the grant with this hash as revoked. */
  revoke(hash: string): Promise<void>;
  /** Whether the grant with this hash was revoked. */
  isRevoked(hash: string): Promise<boolean>;

  /** Stores a blob transfer record, replacing the previous one. */
  putBlob(record: BlobRecord): Promise<void>;
  /**
   * The transfer record of `ref` with `peer` in direction `dir`, or undefined.
   */
  blob(
    peer: string,
    ref: string,
    dir: Direction,
  ): Promise<BlobRecord | undefined>;
  /** Blob transfer records, optionally for one peer. */
  blobs(peer?: string): Promise<BlobRecord[]>;

  /** Stores a request journal record, replacing the previous one. */
  putRequest(record: RequestRecord): Promise<void>;
  /** The journal record of part `part` of msg `re` from `peer`, or undefined. */
  request(
    peer: string,
    re: string,
    part: number,
  ): Promise<RequestRecord | undefined>;
  /** Every request journal record. */
  requests(): Promise<RequestRecord[]>;
  /** Removes a request journal record. */
  dropRequest(peer: string, re: string, part: number): Promise<void>;

  /** A small persisted value (counters such as presence seq, config). */
  getMeta<T>(name: string): Promise<T | undefined>;
  /** Persists a small value under `name`; undefined deletes it. */
  setMeta<T>(name: string, value: T): Promise<void>;

  /** Releases the store; nothing may be called after. */
  close(): void;
}
