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
 *
 * @module
 */

import type { Grant } from "../wire/types.ts";

/** Which side wrote a line. */
export type Direction = "in" | "out";

/** A thread's soft state as one side last reported it. */
export interface SideState {
  state: string;
  note?: string;
  /** RFC 3339 time the state was set. */
  ts: string;
}

/** One thread with one remote peer. */
export interface ThreadRecord {
  peer: string;
  th: string;
  subject?: string;
  /** Our own state. */
  mine?: SideState;
  /** The remote peer's state, as last heard. */
  theirs?: SideState;
  created: string;
  updated: string;
  unread: number;
}

/** A reference to spooled blob bytes, so chunk data never sits in the outbox. */
export interface ChunkSource {
  /** Path of the spooled (snapshotted) file. */
  path: string;
  offset: number;
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
  chunk?: ChunkSource;
}

/** An outbox line as stored, with its allocated id and timestamp. */
export interface OutboxEntry {
  peer: string;
  id: string;
  ts: string;
  t: string;
  th?: string;
  fields: Record<string, unknown> & { t: string };
  chunk?: ChunkSource;
  /** Time the entry was enqueued, ms since the epoch (for retention). */
  queuedAt: number;
}

/** A received content line, to be committed before its ack. */
export interface IncomingLine {
  id: string;
  t: string;
  th?: string;
  /** The parsed line. */
  message: Record<string, unknown>;
  /** The line exactly as received, without the newline. */
  raw: string;
}

/** What happened to one received line. */
export interface ReceiveOutcome {
  id: string;
  /** True when this id was already received from this peer. */
  duplicate: boolean;
}

/** One line of the traffic log, in or out. */
export interface LogEntry {
  /** Position in the log, strictly increasing. */
  seq: number;
  peer: string;
  dir: Direction;
  t: string;
  id?: string;
  th?: string;
  /** The line without the newline (chunk data elided). */
  line: string;
  /** ms since the epoch. */
  at: number;
}

/** A peer we know: its key, what it calls itself, where it can be reached. */
export interface PeerRecord {
  key: string;
  name?: string;
  alias?: string;
  about?: string;
  /** Known addresses, newest first. */
  addresses: string[];
  /** We dialed this peer at least once (admission: keys we dialed). */
  dialed?: boolean;
  caps?: string[];
  firstSeen: number;
  lastSeen: number;
}

/** Where a grant came from, from our point of view. */
export type GrantKind = "issued" | "held" | "presented";

/** A stored grant and its hash. */
export interface GrantRecord {
  kind: GrantKind;
  hash: string;
  grant: Grant;
  /** For presented grants: the key that presented it. */
  from?: string;
  storedAt: number;
}

/** A blob transfer, in either direction. */
export interface BlobRecord {
  peer: string;
  ref: string;
  dir: Direction;
  th?: string;
  name?: string;
  mime?: string;
  size: number;
  /** Bytes done so far (received, or sent). */
  bytes: number;
  /** Next chunk index expected (in) or to send (out). */
  next: number;
  status: "active" | "complete" | "refused" | "failed";
  /** Spool (out), temp file (in) or final path (in, complete). */
  path: string;
  sha256?: string;
  updated: number;
}

/** Options of {@link Store.readLog}. */
export interface LogQuery {
  peer?: string;
  th?: string;
  /** Only entries with `seq` greater than this. */
  after?: number;
  limit?: number;
}

/** The durable state of a peer. Implementations: KvStore, MemoryStore. */
export interface Store {
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

  /** Every unacked outbox entry for `peer`, in id order. */
  outbox(peer: string): Promise<OutboxEntry[]>;

  /**
   * The entries to replay after the remote's `resume`: in listed threads
   * those with id greater than the seen id, in unlisted threads all, in id
   * order. Also drops entries at or before a listed seen id.
   */
  replay(peer: string, seen: Record<string, string>): Promise<OutboxEntry[]>;

  /**
   * Handles an ack of `id` in thread `th`: removes that entry and the earlier
   * never-acked non-msg/state lines of the same thread. Returns true when
   * the id was in the outbox.
   */
  acked(peer: string, th: string | undefined, id: string): Promise<boolean>;

  /** Removes outbox entries queued before `olderThan` (ms since epoch). */
  expireOutbox(olderThan: number): Promise<number>;

  /**
   * Commits received content lines in one atomic commit (group commit):
   * dedup, per-thread seen, thread records, log. Resolve before acking.
   */
  receive(peer: string, lines: IncomingLine[]): Promise<ReceiveOutcome[]>;

  /** Per thread, the last content id received from `peer` (for resume). */
  seen(peer: string): Promise<Record<string, string>>;

  /** Thread records, optionally for one peer. */
  threads(peer?: string): Promise<ThreadRecord[]>;
  thread(peer: string, th: string): Promise<ThreadRecord | undefined>;
  putThread(record: ThreadRecord): Promise<void>;

  /** Appends lines to the traffic log (batched by the caller). */
  log(entries: Omit<LogEntry, "seq">[]): Promise<void>;
  readLog(query?: LogQuery): Promise<LogEntry[]>;

  peers(): Promise<PeerRecord[]>;
  peer(key: string): Promise<PeerRecord | undefined>;
  putPeer(record: PeerRecord): Promise<void>;

  putGrant(record: GrantRecord): Promise<void>;
  grants(kind?: GrantKind): Promise<GrantRecord[]>;
  revoke(hash: string): Promise<void>;
  isRevoked(hash: string): Promise<boolean>;

  putBlob(record: BlobRecord): Promise<void>;
  blob(
    peer: string,
    ref: string,
    dir: Direction,
  ): Promise<BlobRecord | undefined>;
  blobs(peer?: string): Promise<BlobRecord[]>;

  /** A small persisted value (counters such as presence seq, config). */
  getMeta<T>(name: string): Promise<T | undefined>;
  setMeta<T>(name: string, value: T): Promise<void>;

  close(): void;
}
