/**
 * The receive side's group commit: content lines a connection read are
 * made durable (`beforeCommit`, then the received lines' records,
 * `store.received.receive`) before any is acked, whatever arrived while the
 * previous commit ran going in the next one; acks (written by the committer
 * through the writer it holds) and delivery follow the commits in order
 * (SPEC 9.1/9.2).
 *
 * @module
 */

import type {
  IncomingLine,
  ReceivedRecords,
  ReceiveExtras,
  ReceiveOutcome,
  Store,
} from "../storage/store.ts";
import { errorText } from "../wire/error_text.ts";
import { timestamp } from "../wire/time.ts";
import type { Frame } from "../wire/read_frame.ts";
import type { Message } from "../wire/types.ts";
import type { ReceivedLine } from "./connection.ts";
import type { WireLine } from "./outbox_writer.ts";

/**
 * Where the committer writes its acks: the connection's output, which
 * encodes the line and queues it on the socket under the unsent bound.
 */
export interface AckWriter {
  /** Queues one line on the socket (nothing once the connection closed). */
  writeLine(line: WireLine): void;
  /**
   * Runs `writeLines` so that the lines it queues go out in one socket
   * write (`OutboxWriter.corked`); absent: each as it comes.
   */
  corked?(writeLines: () => void): void;
}

/**
 * Bytes of received content lines whose commit is in flight before reading
 * waits for them: reading and parsing go on while a commit runs (so the next
 * group commit can take all that arrived), but a flood cannot pile up.
 */
const MAX_UNCOMMITTED_BYTES = 4 * 1024 * 1024;

/** A store's received lines on their way in, across its connections. */
interface StoreReceives {
  /** Batches of received lines queued for commit so far (a mark). */
  started: number;
  /** Per remote key, the committers with lines not yet committed. */
  peers: Map<string, Set<ReceiveCommitter>>;
}

/**
 * Per store: a new connection's resume waits for the previous connection's
 * commits ({@link ReceiveCommitter.previousSettled}), and may use a `seen`
 * read ahead only if nothing was received since
 * ({@link ReceiveCommitter.quietMark}).
 */
const inFlight = new WeakMap<Store, StoreReceives>();

/** A received content line waiting for its commit; `size` is its length on the wire. */
type Pending = IncomingLine & {
  received: ReceivedLine;
  size: number;
  /** A chunk or a request: it (and its thread) passes `beforeCommit` first. */
  held: boolean;
};

/** What the committer asks of its connection. */
export interface CommitterHost {
  /** The remote's key (known once its hello was accepted). */
  remoteKey(): string;
  /**
   * Makes durable what must be before `lines` count as seen (a chunk's
   * bytes); may add to the commit.
   */
  beforeCommit(
    lines: ReceivedLine[],
  ): Promise<ReceiveExtras | void> | undefined;
  /**
   * A chunk as it is staged: its bytes may go to their file now; a returned
   * promise holds reading ({@link ReceiveCommitter.roomToRead}).
   */
  takeChunk(frame: Frame): Promise<void> | void;
  /** True when a line other than a chunk must pass `beforeCommit` too. */
  needsBeforeCommit(message: Message): boolean;
  /** New (non-duplicate) lines, committed and acked. */
  deliver(lines: ReceivedLine[]): void;
  /** A commit failed: close with `err internal` and this detail. */
  fail(detail: string): void;
}

/** Committed lines that are acked (NOTES: mirror and private are "reliable like a msg"). */
export const ACKED: ReadonlySet<string> = new Set([
  "msg",
  "state",
  "mirror",
  "private",
]);

/**
 * One connection's received content lines on their way to the store.
 *
 * @example
 * ```ts ignore
 * const committer = new ReceiveCommitter(store, host, output);
 * committer.stage(frame); // a msg read from the socket
 * await committer.commit(); // committed, acked, delivered
 * ```
 */
export class ReceiveCommitter {
  #store: Store;
  /** The records committed into (the store's, without its facade). */
  #records: ReceivedRecords;
  #host: CommitterHost;
  #acks: AckWriter;
  /** Lines staged in this read turn and not queued yet. */
  #staged: Pending[] = [];
  /** Lines queued and not yet handed to the store. */
  #uncommitted: Pending[] = [];
  /** The pump handing them over, while it runs. */
  #pumping: Promise<void> | undefined;
  /** Handed batches once committed: acks and delivery, in order. */
  #committed: Promise<void> = Promise.resolve();
  /** Committed and acked lines not delivered yet (see #deliverSoon). */
  #undelivered: ReceivedLine[] = [];
  /** Their delivery, once the group commit has moved on. */
  #delivering: Promise<void> | undefined;
  #uncommittedBytes = 0;
  /** Reading, waiting for a batch to commit (over the in-flight bound). */
  #waiters: Array<() => void> = [];
  /** A commit failed: nothing later is committed or acked. */
  #failed = false;
  /** A chunk's writes asked reading to wait for this. */
  #hold: Promise<void> | undefined;
  /** Threads of the lines in `beforeCommit` now (see #overtaking). */
  #syncing: Set<string> | undefined; // made on first sync (idle: never)
  /** In {@link inFlight} until everything staged is committed. */
  #tracked = false;

  /**
   * Commits into `store`'s received records for the connection `host`,
   * and writes the acks to `acks`.
   */
  constructor(store: Store, host: CommitterHost, acks: AckWriter) {
    this.#store = store;
    this.#records = store.received;
    this.#host = host;
    this.#acks = acks;
  }

  /** Reading may go on: the bytes in flight are under the bound (or nothing more will commit). */
  get #hasRoom(): boolean {
    return this.#uncommittedBytes <= MAX_UNCOMMITTED_BYTES || this.#failed;
  }

  /** Resolves when a commit finished (or failed). */
  #waitForCommit(): Promise<void> {
    return new Promise<void>((wake) => this.#waiters.push(wake));
  }

  /**
   * True when nothing was staged since the last {@link commit}, no chunk
   * holds reading, and the bytes in flight are under the bound: then
   * `commit()` would start nothing and {@link roomToRead} would not wait.
   */
  readOnNow(): boolean {
    return this.#staged.length === 0 && this.#hold === undefined &&
      this.#hasRoom;
  }

  /**
   * Resolves once reading may go on: a chunk's hold settled, and the bytes
   * in flight are under the bound (or `stopped`).
   */
  async roomToRead(stopped: () => boolean): Promise<void> {
    const hold = this.#hold;
    this.#hold = undefined;
    await hold;
    while (!this.#hasRoom && !stopped()) await this.#waitForCommit();
  }

  /** Adds a content line read in this turn (committed by {@link commit}). */
  stage(frame: Frame): void {
    const m = frame.message as Message & { th?: unknown };
    if (m.t === "chunk") this.#hold = this.#host.takeChunk(frame) ?? this.#hold;
    this.#staged.push({
      id: m.id,
      t: m.t,
      th: typeof m.th === "string" ? m.th : undefined,
      message: m as unknown as Record<string, unknown>,
      raw: frame.raw,
      received: frame,
      // A chunk whose bytes went to their file (onChunk) holds only its line.
      size: m.t === "chunk" && !frame.bytes ? frame.raw.length : frame.size,
      held: m.t === "chunk" || this.#host.needsBeforeCommit(m),
    });
  }

  /**
   * Queues the staged lines for the group commit and resolves once they and
   * every earlier line are committed, acked and delivered. One pump hands
   * the queued lines to `beforeCommit` and `store.receive`, all that queued
   * up since its last turn at once, without waiting for the commit before:
   * the store's group commit takes whatever arrived while its last commit
   * ran, and `beforeCommit` (a chunk's bytes) syncs once per turn. Acks and
   * delivery follow the commits in order. A failure closes the connection;
   * later lines are neither committed nor acked.
   */
  commit(): Promise<void> {
    const batch = this.#staged;
    if (batch.length > 0) {
      this.#receives().started++;
      this.#track();
      for (const line of batch) this.#uncommittedBytes += line.size;
      const now = this.#overtaking(batch);
      if (now.length > 0) this.#handOver(now);
      this.#uncommitted.push(...batch.splice(0));
      this.#startPump();
    }
    return this.#settled();
  }

  /**
   * While the pump waits for `beforeCommit` (a chunk batch's sync), the
   * lines of `batch` in other threads (a small msg beside a blob) go to the
   * store at once instead of after that sync: taken out of `batch` and
   * returned. Order within a thread is kept: a thread with lines syncing,
   * queued, or lines in `batch` that need `beforeCommit` waits its turn.
   */
  #overtaking(batch: Pending[]): Pending[] {
    if (!this.#syncing || this.#syncing.size === 0 || this.#failed) return [];
    const waiting = new Set(this.#syncing);
    for (const l of this.#uncommitted) waiting.add(l.th ?? "");
    for (const l of batch) if (l.held) waiting.add(l.th ?? "");
    const now = batch.filter((l) => !waiting.has(l.th ?? ""));
    if (now.length === 0) return now;
    const rest = batch.filter((l) => waiting.has(l.th ?? ""));
    batch.splice(0, batch.length, ...rest);
    return now;
  }

  /**
   * Resolves once the other connections to this remote (earlier ones:
   * closed, or being replaced) have committed, or failed to commit, every
   * line they received. A new connection's resume reads `store.seen` after
   * this: lines read by the old connection and still committing (a batch
   * of chunks being synced) are then in it, and the remote does not resend
   * what we already have.
   */
  async previousSettled(): Promise<void> {
    const others = inFlight.get(this.#store)?.peers.get(this.#host.remoteKey());
    if (!others) return;
    await Promise.all(
      [...others].filter((c) => c !== this).map((c) => c.#allSettled()),
    );
  }

  /**
   * A mark for a `seen` read ahead: undefined while another connection's
   * lines from this remote are in flight; two equal marks mean no received
   * line was queued for commit in this store in between, so a `seen` read
   * after the first is still current at the second.
   */
  quietMark(): number | undefined {
    const receives = inFlight.get(this.#store);
    if (!receives) return 0;
    const others = receives.peers.get(this.#host.remoteKey());
    if (others && [...others].some((c) => c !== this)) return undefined;
    return receives.started;
  }

  #receives(): StoreReceives {
    let receives = inFlight.get(this.#store);
    if (!receives) {
      inFlight.set(this.#store, receives = { started: 0, peers: new Map() });
    }
    return receives;
  }

  /** Registers this committer's work in flight until it is all settled. */
  #track(): void {
    if (this.#tracked) return;
    this.#tracked = true;
    const peer = this.#host.remoteKey();
    const byPeer = this.#receives().peers;
    let committers = byPeer.get(peer);
    if (!committers) byPeer.set(peer, committers = new Set());
    committers.add(this);
    void this.#allSettled().then(() => {
      this.#tracked = false;
      committers.delete(this);
      if (committers.size === 0 && byPeer.get(peer) === committers) {
        byPeer.delete(peer);
      }
    });
  }

  /** Resolves once nothing staged or queued is left uncommitted. */
  async #allSettled(): Promise<void> {
    let last: Promise<void>;
    do {
      last = this.#committed;
      await this.#settled();
    } while (
      last !== this.#committed || this.#pumping ||
      (this.#uncommitted.length > 0 && !this.#failed)
    );
  }

  #startPump(): void {
    this.#pumping ??= this.#pump().finally(() => {
      this.#pumping = undefined;
      // Lines queued after the pump's last look.
      if (this.#uncommitted.length > 0) this.#startPump();
    });
  }

  /** Resolves once every queued line is committed, acked and delivered. */
  async #settled(): Promise<void> {
    while (this.#pumping) await this.#pumping;
    await this.#committed;
    while (this.#delivering) await this.#delivering;
  }

  async #pump(): Promise<void> {
    while (this.#uncommitted.length > 0 && !this.#failed) {
      const lines = this.#uncommitted.splice(0);
      // Lines of threads without chunks or requests here go at once; the
      // chunks and requests, and the lines of their threads (a blob's msg),
      // after beforeCommit made the chunk bytes durable and journaled the
      // requests (an acked request is a promise). Order within a thread is
      // kept.
      const synced = new Set<string>();
      for (const l of lines) if (l.held) synced.add(l.th ?? "");
      const early = lines.filter((l) => !synced.has(l.th ?? ""));
      const late = early.length === lines.length
        ? []
        : lines.filter((l) => synced.has(l.th ?? ""));
      try {
        if (early.length > 0) this.#handOver(early);
        if (late.length > 0) {
          const syncing = this.#syncing ??= new Set();
          for (const l of late) syncing.add(l.th ?? "");
          const also = await Promise.resolve(
            this.#host.beforeCommit(late.map((l) => l.received)),
          ).finally(() => syncing.clear());
          if (this.#failed) throw new Error("an earlier commit failed");
          this.#handOver(late, also ?? undefined);
        }
      } catch (error) {
        this.#failed = true;
        for (const line of late) this.#uncommittedBytes -= line.size;
        this.#host.fail(`storage failed: ${errorText(error)}`);
        break;
      }
    }
    if (this.#failed) {
      for (const line of this.#uncommitted.splice(0)) {
        this.#uncommittedBytes -= line.size;
      }
      for (const wake of this.#waiters.splice(0)) wake();
    }
  }

  /** Gives `lines` to the store's group commit; acks follow in order. */
  #handOver(lines: Pending[], also?: ReceiveExtras): void {
    let bytes = 0;
    for (const line of lines) bytes += line.size;
    const outcomes = this.#records.receive(
      this.#host.remoteKey(),
      lines, // each an IncomingLine (its other fields are not read)
      also,
    );
    outcomes.catch(() => {}); // handled in order below
    this.#committed = this.#committed.then(async () => {
      const out = await outcomes;
      if (!this.#failed) this.#ackAndDeliver(lines, out);
    }).catch((error) => {
      this.#failed = true;
      this.#host.fail(`storage failed: ${errorText(error)}`);
    }).finally(() => {
      this.#uncommittedBytes -= bytes;
      for (const wake of this.#waiters.splice(0)) wake();
    });
  }

  /** Acks the committed lines, then delivers the new ones. */
  #ackAndDeliver(lines: Pending[], outcomes: ReceiveOutcome[]): void {
    const fresh: ReceivedLine[] = [];
    const ackAll = () => {
      let ts: string | undefined;
      for (let i = 0; i < lines.length; i++) {
        const line = lines[i];
        if (ACKED.has(line.t)) {
          ts ??= timestamp(); // the batch's acks go out in the same instant
          this.#acks.writeLine({
            t: "ack",
            id: this.#store.nextId(),
            ts,
            th: line.th,
            re: line.id,
          });
        }
        const outcome = outcomes[i];
        if (outcome?.duplicate) continue;
        // The frame is this committer's own from here on: no copy.
        if (outcome?.seq !== undefined) line.received.seq = outcome.seq;
        fresh.push(line.received);
      }
    };
    // A batch's acks in one socket write (else the first went alone).
    if (lines.length > 1 && this.#acks.corked) this.#acks.corked(ackAll);
    else ackAll();
    if (fresh.length) this.#deliverSoon(fresh);
  }

  /**
   * Delivers `lines` at the end of this turn (`setImmediate`), not at once:
   * their commit's resolution also lets the group commit build and start
   * the next batch (lines read meanwhile), which now goes first, so that
   * commit runs on Deno KV's thread while the app is told of these (a
   * resume replay's batches overlap instead of taking turns). Their acks
   * are already written. In order: batches resolved in the same turn are
   * delivered together.
   */
  #deliverSoon(lines: ReceivedLine[]): void {
    for (const line of lines) this.#undelivered.push(line);
    this.#delivering ??= new Promise<void>((resolve) =>
      setImmediate(() => {
        const batch = this.#undelivered;
        this.#undelivered = [];
        this.#delivering = undefined;
        try {
          this.#host.deliver(batch);
        } catch (error) {
          this.#failed = true;
          this.#host.fail(`delivery failed: ${errorText(error)}`);
        }
        resolve();
      })
    );
  }
}
