/**
 * The output side of one connection: every line it writes goes through
 * here, counted against the unsent bound, and its outbox entries (sent
 * live by `Peer.send`, or replayed after resume, SPEC 9.5) are written in
 * an order the remote's `seen` and cumulative acks can count on, each at
 * most once per connection, paced by the socket's write-ahead window.
 *
 * @module
 */

import type { Transport } from "../net/transport.ts";
import { type ChunkFrame, ChunkFramer } from "../storage/chunk_frame.ts";
import { entryLine, type OutboxEntry } from "../storage/store.ts";
import { errorText } from "../wire/error_text.ts";
import { encodeTextLine } from "../wire/frame.ts";

/** A line to write: a JSON object with its type. */
export type WireLine = Record<string, unknown> & { t: string };

/** What the writer asks of its connection. */
export interface OutboxWriterHost {
  /** Outbox entries may be written now: the session is open, no bye sent. */
  open(): boolean;
  /** Nothing more may be written: closed, or our bye was sent. */
  stopped(): boolean;
  /** Runs `task` in the connection's ordered output (auth, resume, replay). */
  chain(task: () => Promise<void>): void;
  /**
   * A line is on its way to the socket (line events, the traffic log);
   * `logged`: an outbox entry, logged with its enqueue.
   */
  wrote(raw: string, line: WireLine, logged: boolean): void;
  /** The socket failed, or the remote does not read: the connection ends. */
  end(reason: string): void;
  /** `entry` was just written. */
  sent(entry: OutboxEntry): void;
  /** A local note for the line log (a line that could not be sent). */
  note(text: string): void;
}

/**
 * Default bound on the bytes queued for a connection's socket and not yet
 * written, each line counted as at least 1 KiB (a remote that never
 * reads): past it, once nothing could be written for 1 s (or at once past
 * four times it), the connection is closed; outbox lines stay in the
 * outbox for the next connection.
 */
export const DEFAULT_MAX_UNSENT_BYTES = 8 * 1024 * 1024;
/** Over the unsent bound, how long no write may finish before we close. */
const UNSENT_STALL_MS = 1_000;
/** Each queued line counts at least this much against the unsent bound. */
const MIN_LINE_COST = 1024;

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
 * Writes one connection's lines and outbox entries.
 *
 * @example
 * ```ts ignore
 * const writer = new OutboxWriter(transport, host, maxUnsentBytes);
 * writer.send(entries); // now, or in the connection's output order
 * writer.writeLine({ t: "ping", id, ts });
 * ```
 */
export class OutboxWriter {
  #t: Transport;
  #host: OutboxWriterHost;
  #maxUnsent: number;
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
  /** Bytes handed to the transport and not yet written. */
  #unwrittenBytes = 0;
  /** When the transport last finished writing a line. */
  #lastWritten = performance.now();
  #writeWaiters: Array<() => void> | undefined; // made on first wait

  /**
   * A writer to `transport` for the connection `host`; `maxUnsentBytes`
   * bounds what may wait unwritten ({@link DEFAULT_MAX_UNSENT_BYTES}).
   */
  constructor(
    transport: Transport,
    host: OutboxWriterHost,
    maxUnsentBytes = DEFAULT_MAX_UNSENT_BYTES,
  ) {
    this.#t = transport;
    this.#host = host;
    this.#maxUnsent = maxUnsentBytes;
  }

  /** Bytes handed to the transport and not yet written (0: none to drain). */
  get unwrittenBytes(): number {
    return this.#unwrittenBytes;
  }

  /** The connection is closed: the open spooled file and buffers go. */
  close(): void {
    this.#frames?.close();
  }

  /**
   * Sends outbox entries (ids allocated, commit durable or under way): now
   * when they may overtake what is queued, else in the connection's output
   * order. Nothing while the session is not open: they go on resume.
   */
  send(entries: OutboxEntry[]): void {
    if (!this.#host.open()) return;
    if (this.tryWriteNow(entries)) return;
    this.hold(entries);
    this.#host.chain(() => this.write(entries));
  }

  /**
   * Writes one line (not an outbox entry): encoded once; returns the bytes
   * queued (0 when nothing was sent).
   */
  writeLine(message: WireLine, logged = false): number {
    if (this.#host.stopped() || this.#t.closed) return 0;
    let line: { text: string; bytes: Uint8Array };
    try {
      line = encodeTextLine(message);
    } catch (error) {
      // Our own line too large or not JSON: a bug upstream, not the peer's.
      this.#host.note(`{"t":"${message.t}"} not sent: ${errorText(error)}`);
      return 0;
    }
    return this.#queue(line.bytes, line.text, message, logged);
  }

  /**
   * Writes one line already encoded (`text` without the newline, `bytes`
   * with it), e.g. a pong built without the generic encoder; returns the
   * bytes queued (0 when nothing was sent).
   */
  writeEncoded(message: WireLine, text: string, bytes: Uint8Array): number {
    if (this.#host.stopped() || this.#t.closed) return 0;
    return this.#queue(bytes, text, message, false);
  }

  /** Queues an encoded line; `written` runs once the socket is done with it. */
  #queue(
    frame: Uint8Array,
    raw: string,
    line: WireLine,
    logged: boolean,
    written?: () => void,
  ): number {
    this.#host.wrote(raw, line, logged);
    const size = frame.length;
    // A queued line costs about 1 KiB of bookkeeping whatever its size, so
    // small ones count as that much, against the window and the bound.
    const held = Math.max(size, MIN_LINE_COST);
    this.#unwrittenBytes += held;
    if (written === undefined && this.#t.writeThen) {
      // One bound callback for every line: no promise or closure per line.
      this.#t.writeThen(frame, this.#lineDone, held);
    } else {
      this.#t.write(frame).then(
        () => this.#lineDone(undefined, held, written),
        (error) => this.#lineDone(error, held, written),
      );
    }
    this.#checkUnsent();
    return size;
  }

  /** A queued line of `held` bytes is written, or failed with `error`. */
  #lineDone = (error: unknown, held: number, written?: () => void): void => {
    if (error !== undefined) {
      this.#host.end(`write failed: ${errorText(error)}`);
    }
    written?.();
    this.#lastWritten = performance.now();
    this.#unwrittenBytes -= held;
    const waiting = this.#writeWaiters;
    if (waiting?.length) { for (const wake of waiting.splice(0)) wake(); }
  };

  /**
   * A remote that does not read must not make us hold its bytes forever:
   * over the bound while nothing could be written for a while (a burst of
   * our own to a remote that reads is let through), or over four times it.
   */
  #checkUnsent(): void {
    const max = this.#maxUnsent;
    if (this.#unwrittenBytes <= max) return;
    const stalled = performance.now() - this.#lastWritten > UNSENT_STALL_MS;
    if (!stalled && this.#unwrittenBytes <= 4 * max) return;
    this.#t.close(); // what is queued is dropped; the outbox keeps its lines
    this.#host.end(`the peer is not reading: over ${max} bytes unsent`);
  }

  /**
   * Resolves once the bytes queued on the socket are under the window
   * (kept under half the unsent bound, so outbox lines never trip it).
   */
  async #writeRoom(): Promise<void> {
    while (this.#full()) {
      await new Promise<void>((wake) => (this.#writeWaiters ??= []).push(wake));
    }
  }

  /** The bytes queued on the socket are at the window: outbox lines wait. */
  #full(): boolean {
    const window = Math.min(WRITE_AHEAD_BYTES, this.#maxUnsent / 2);
    return this.#unwrittenBytes >= window && !this.#t.closed;
  }

  /**
   * Writes `entries` at once when nothing they must follow is queued (the
   * common case: straight to the socket, no hop through the output queue),
   * or when they may overtake what is (small lines are not stuck behind a
   * blob's chunks in other threads); false when they must queue
   * ({@link hold}, then {@link write} in the connection's output order).
   */
  tryWriteNow(entries: OutboxEntry[]): boolean {
    if (!this.#mayOvertake(entries)) return false;
    if (entries.length === 1) {
      this.#writeLine(entries[0], entryLine(entries[0]));
    } else {
      this.corked(() => {
        for (const entry of entries) this.#writeLine(entry, entryLine(entry));
      });
    }
    return true;
  }

  /**
   * Runs `writeLines`, which queues lines synchronously, with the transport
   * corked: they go out in one socket write, not the first alone and the
   * rest behind it (a commit's acks).
   */
  corked(writeLines: () => void): void {
    const t = this.#t;
    t.cork?.();
    try {
      writeLines();
    } finally {
      t.uncork?.();
    }
  }

  /**
   * True when `entries` may be written before the lines queued ahead of
   * them: with nothing queued, any but chunks (their bytes are read from the
   * spool first); else msgs and states none of which is in a thread with
   * lines queued, and no grant or introduction queued. Order within a
   * thread is kept (the remote's seen and the cumulative acks count on
   * it), grants and introductions are never overtaken (a later ack drops
   * them), nor is a replay.
   */
  #mayOvertake(entries: OutboxEntry[]): boolean {
    if (this.#listing || this.#queuedBarriers > 0) return false;
    const queued = this.#queuedThreads;
    // Nothing queued: the window still paces them (a burst of our own).
    if (!queued || queued.size === 0) {
      return !this.#full() && entries.every((e) => !e.chunk);
    }
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

  /**
   * Writes held `entries` in order, each as the socket has room. The lines
   * queued in one turn go out in one socket write: the transport is corked
   * while they queue (else the first went alone and the rest queued behind
   * its write), and uncorked before any wait.
   */
  async write(entries: OutboxEntry[]): Promise<void> {
    // One line alone is written at once (a live send is never held).
    const t = entries.length > 1 ? this.#t : undefined;
    let corked = false;
    const cork = (on: boolean) => {
      if (t === undefined || on === corked) return;
      corked = on;
      if (on) t.cork?.();
      else t.uncork?.();
    };
    cork(true);
    try {
      for (const entry of entries) {
        try {
          // Awaited only when full: a page's lines with room go out in one
          // turn, and so in one socket write.
          if (this.#full()) {
            cork(false);
            await this.#writeRoom();
            cork(true);
          }
          if (this.#host.stopped()) return;
          if (this.#written?.has(entry.id)) continue;
          if (entry.chunk) {
            let frame: ChunkFrame;
            try {
              cork(false); // its bytes are read first: what queued goes now
              frame = await (this.#frames ??= new ChunkFramer()).frame(entry);
            } catch (error) {
              // The spooled file is gone: nothing to send; the blob layer decides.
              this.#host.note(
                `chunk ${entry.id} not sent: ${errorText(error)}`,
              );
              continue;
            }
            if (this.#written?.has(entry.id) || this.#host.stopped()) {
              frame.release();
            } else {
              this.#noteWritten(entry.id);
              this.#queue(
                frame.bytes,
                frame.raw,
                frame.line,
                true,
                frame.release,
              );
              this.#host.sent(entry);
            }
          } else this.#writeLine(entry, entryLine(entry));
        } finally {
          this.#release(entry);
        }
      }
    } finally {
      cork(false);
    }
  }

  /** Writes an entry's line unless already written on this connection. */
  #writeLine(entry: OutboxEntry, line: WireLine): void {
    if (this.#written?.has(entry.id)) return;
    this.#noteWritten(entry.id);
    this.writeLine(line, true);
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
