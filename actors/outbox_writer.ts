/**
 * The send side of one connection: outbox entries (sent live or replayed
 * after resume, SPEC 9.5) written to the socket in an order the remote's
 * `seen` and cumulative acks can count on, each at most once per
 * connection, paced by the socket's write-ahead window.
 *
 * @module
 */

import { type ChunkFrame, ChunkFramer } from "../storage/chunk_frame.ts";
import { entryLine, type OutboxEntry } from "../storage/store.ts";
import { errorText } from "../wire/error_text.ts";

/** A line to write: a JSON object with its type. */
export type WireLine = Record<string, unknown> & { t: string };

/** What the writer asks of its connection. */
export interface OutboxWriterHost {
  /** Resolves once the socket has room (the write-ahead window). */
  writeRoom(): Promise<void>;
  /** Nothing more may be written: closed, or our bye was sent. */
  stopped(): boolean;
  /** Writes one line to the socket. */
  writeLine(line: WireLine): void;
  /** Writes a chunk's line (its buffer goes back once written). */
  writeFrame(frame: ChunkFrame): void;
  /** `entry` was just written. */
  sent(entry: OutboxEntry): void;
  /** A local note for the line log (an entry that could not be sent). */
  note(text: string): void;
}

/**
 * Bytes queued on the socket and not yet written before outbox lines wait:
 * a sliding window, so the socket's own pace sets the sender's (a replay of
 * a big blob never reads and queues every chunk at once). Small: a small
 * line of another thread waits behind at most this much of our own.
 */
export const WRITE_AHEAD_BYTES = 512 * 1024;

/** How many written entry ids a connection remembers (see #written). */
const WRITTEN_IDS_KEPT = 4096;

/** Outboxed lines a later line never overtakes (a later ack drops them). */
const BARRIERS: ReadonlySet<string> = new Set(["grant", "introduce"]);

/**
 * Writes one connection's outbox entries.
 *
 * @example
 * ```ts ignore
 * const writer = new OutboxWriter(host);
 * if (!writer.tryWriteNow(entries)) {
 *   writer.hold(entries); // counted at once: later lines keep their order
 *   queue(() => writer.write(entries));
 * }
 * ```
 */
export class OutboxWriter {
  #host: OutboxWriterHost;
  /**
   * Ids of outbox entries written on this connection (bounded, oldest
   * forgotten first): an entry both replayed and sent live goes out once.
   * Exact ids, not "the highest per thread": an entry written after a later
   * one of its thread must still go out, or the remote's seen would pass it.
   */
  #written: Set<string> | undefined; // made on first write (idle: never)
  /** Entries handed to the output chain and not written yet, per thread. */
  #queuedThreads: Map<string, number> | undefined; // made on first hold
  /** Grants and introductions among them (never overtaken). */
  #queuedBarriers = 0;
  /**
   * A replay is queued or under way (its pages are not all counted yet):
   * nothing may overtake it, or a line would move the remote's seen past
   * older lines of its thread not written yet.
   */
  #listing = false;

  /** Builds chunk lines in reused buffers (created on first use). */
  #frames: ChunkFramer | undefined;

  /** The connection is closed: the open spooled file and buffers go. */
  close(): void {
    this.#frames?.close();
  }

  /** A writer for the connection `host`. */
  constructor(host: OutboxWriterHost) {
    this.#host = host;
  }

  /**
   * Writes `entries` at once when they may overtake the lines queued ahead
   * of them (small lines are not stuck behind a blob's chunks in other
   * threads); false when they must queue ({@link hold}, then {@link write}
   * in the connection's output order).
   */
  tryWriteNow(entries: OutboxEntry[]): boolean {
    if (!this.#mayOvertake(entries)) return false;
    for (const entry of entries) this.#writeLine(entry, entryLine(entry));
    return true;
  }

  /**
   * True when `entries` (msgs and states) may be written before the lines
   * queued ahead of them (a blob's chunks): none is in a thread with lines
   * queued, and no grant or introduction is queued. Order within a thread
   * is kept (the remote's seen and the cumulative acks count on it), and
   * grants and introductions are never overtaken (a later ack drops them).
   */
  #mayOvertake(entries: OutboxEntry[]): boolean {
    const queued = this.#queuedThreads;
    if (!queued || queued.size === 0 || this.#queuedBarriers > 0) {
      return false;
    }
    if (this.#listing) return false;
    return entries.every((e) =>
      (e.t === "msg" || e.t === "state") && e.th !== undefined &&
      !queued.has(e.th)
    );
  }

  /** Counts entries handed to the output chain. */
  hold(entries: OutboxEntry[]): void {
    for (const e of entries) {
      if (BARRIERS.has(e.t)) this.#queuedBarriers++;
      const th = e.th ?? "";
      const queued = this.#queuedThreads ??= new Map();
      queued.set(th, (queued.get(th) ?? 0) + 1);
    }
  }

  /** Uncounts one entry of the output chain (written or skipped). */
  #release(e: OutboxEntry): void {
    if (BARRIERS.has(e.t)) this.#queuedBarriers--;
    const th = e.th ?? "";
    const queued = this.#queuedThreads;
    if (!queued) return;
    const n = (queued.get(th) ?? 1) - 1;
    if (n > 0) queued.set(th, n);
    else queued.delete(th);
  }

  /**
   * A replay is queued in the connection's output order: from now on,
   * not only once its turn comes, nothing overtakes it. The connection
   * opens (and live entries arrive) while the replay still waits there
   * behind our own resume, which reads the store's seen (slow under load).
   */
  replayQueued(): void {
    this.#listing = true;
  }

  /**
   * The replay after their resume: `pages` reads the entries past their
   * seen a page at a time (bounded memory however long the outbox is); each
   * page is held and written in order before the next is read.
   */
  async replay(pages: AsyncIterable<OutboxEntry[]>): Promise<void> {
    // Until the last page is written nothing may overtake the replay: a
    // later line of a thread written before a page not listed yet would
    // move the remote's seen past it. Live entries wait behind it.
    this.#listing = true;
    try {
      for await (const page of pages) {
        this.hold(page);
        await this.write(page);
        if (this.#host.stopped()) break;
      }
    } finally {
      this.#listing = false;
    }
  }

  /** Writes held `entries` in order, each as the socket has room. */
  async write(entries: OutboxEntry[]): Promise<void> {
    for (const entry of entries) {
      try {
        await this.#host.writeRoom();
        if (this.#host.stopped()) return;
        if (this.#written?.has(entry.id)) continue;
        if (entry.chunk) {
          let frame: ChunkFrame;
          try {
            frame = await (this.#frames ??= new ChunkFramer()).frame(entry);
          } catch (error) {
            // The spooled file is gone: nothing to send; the blob layer decides.
            this.#host.note(`chunk ${entry.id} not sent: ${errorText(error)}`);
            continue;
          }
          if (this.#written?.has(entry.id) || this.#host.stopped()) {
            frame.release();
          } else {
            this.#noteWritten(entry.id);
            this.#host.writeFrame(frame);
            this.#host.sent(entry);
          }
        } else this.#writeLine(entry, entryLine(entry));
      } finally {
        this.#release(entry);
      }
    }
  }

  /** Writes an entry's line unless already written on this connection. */
  #writeLine(entry: OutboxEntry, line: WireLine): void {
    if (this.#written?.has(entry.id)) return;
    this.#noteWritten(entry.id);
    this.#host.writeLine(line);
    this.#host.sent(entry);
  }

  #noteWritten(id: string): void {
    const written = this.#written ??= new Set();
    written.add(id);
    if (written.size > WRITTEN_IDS_KEPT) {
      // Forgetting one costs at most a duplicate, which the remote acks.
      written.delete(written.values().next().value!);
    }
  }
}
