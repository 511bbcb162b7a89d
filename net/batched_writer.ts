/**
 * The write side shared by every transport (TCP, Unix, WebSocket): one
 * queue per socket whose items, queued while a write is in flight, go out
 * together as one larger write. Each item's promise resolves only once the
 * kernel took its bytes, so a slow reader pushes back on writers that await
 * (the connection actor bounds what it queues on top of that: README
 * "Limits", unsent bytes per connection).
 *
 * @module
 */

import { errorText } from "../wire/error_text.ts";
import { concat } from "./websocket_frames.ts";
import type { ByteSink } from "./write_all.ts";

/** Where a {@link BatchedWriter} writes: a socket (`Deno.Conn`). */
export type { ByteSink };

/** Options of {@link BatchedWriter}. */
export interface BatchedWriterOptions {
  /**
   * Turns a queued item into the bytes to write, once, when its batch is
   * cut (the WebSocket binding frames lines here); a throw fails the
   * writer. Items queued as `raw` are written as they are. Default: as is.
   */
  encode?(bytes: Uint8Array): Uint8Array;
  /** One line for a failed socket write (default {@link errorText}). */
  reason?(error: unknown): string;
  /**
   * The writer failed (a socket write or `encode` threw): every queued
   * item is already rejected with `error`. The owner closes its socket.
   */
  onFail(error: Error): void;
  /** Overrides {@link BURST_MS} (tests under load). */
  burstMs?: number;
}

/** Batches are cut at this size so one slow write never copies unboundedly. */
export const BATCH_BYTES = 256 * 1024;

/**
 * Once {@link BatchedWriter.holdBursts} is on, a write asked for this soon
 * after the last one began is part of a burst: it waits for the end of the
 * event loop's turn (a 0 ms timer, 1–2.5 ms here), so the lines queued
 * meanwhile share its syscall. A socket write completes at once, so without
 * this a burst's lines, each queued a few microtasks apart, went out one
 * syscall each. A lone line goes at once, and so does the next msg of a
 * sequential sender (one round trip later: more than this; with 1 ms, one
 * line in ten waited for the timer once round trips fell under 1 ms). Off
 * during a handshake, whose lines follow each other by one round trip.
 */
const BURST_MS = 0.25;

/**
 * Told once a frame queued by {@link BatchedWriter.writeThen} is written
 * (`error` undefined) or dropped; `tag` is the caller's, given back.
 */
export type WriteDone = (error: Error | undefined, tag: number) => void;

interface Pending {
  bytes: Uint8Array;
  /** Written as is, not through `encode`. */
  raw: boolean;
  /** A promise's settlers ({@link BatchedWriter.write}), or a callback. */
  resolve: (() => void) | undefined;
  reject: ((error: Error) => void) | undefined;
  done: WriteDone | undefined;
  tag: number;
}

function settle(p: Pending, error?: Error): void {
  if (p.done) p.done(error, p.tag);
  else if (error) p.reject!(error);
  else p.resolve!();
}

/**
 * A write queue over one socket, batching what waits while a write is in
 * flight (up to {@link BATCH_BYTES} a write, at least one item).
 *
 * @example
 * ```ts
 * import { BatchedWriter } from "./batched_writer.ts";
 * const written: number[] = [];
 * const sink = {
 *   write(bytes: Uint8Array) {
 *     written.push(bytes.length);
 *     return Promise.resolve(bytes.length);
 *   },
 * };
 * const writer = new BatchedWriter(sink, { onFail() {} });
 * const a = writer.write(new Uint8Array(3)); // written at once
 * const b = writer.write(new Uint8Array(4)); // queued behind it...
 * const c = writer.write(new Uint8Array(5)); // ...and batched with this
 * await Promise.all([a, b, c, writer.flush()]);
 * console.assert(written.join() === "3,9");
 * ```
 */
export class BatchedWriter {
  readonly #sink: ByteSink;
  readonly #options: BatchedWriterOptions;
  #queue: Pending[] = [];
  #writing = false;
  #closed = false;
  /** When the last write began (see {@link BURST_MS}). */
  #lastWrite = -Infinity;
  /** Whether a burst's lines wait for the end of the turn (see {@link BURST_MS}). */
  #holdBursts = false;
  /** Open {@link BatchedWriter.cork}s: no write starts while above 0. */
  #corks = 0;
  /** Waiting flushes (made on the first: most connections never flush). */
  #idle: Array<() => void> | undefined;

  constructor(sink: ByteSink, options: BatchedWriterOptions) {
    this.#sink = sink;
    this.#options = options;
  }

  /** True once {@link BatchedWriter.fail} ran (by the owner or a failed write). */
  get closed(): boolean {
    return this.#closed;
  }

  /**
   * From now on (`on`), a line asked within 0.25 ms of the last write waits
   * for the end of the event loop's turn, so a burst shares a syscall; off
   * (the default), every line is written at once.
   */
  holdBursts(on: boolean): void {
    this.#holdBursts = on;
  }

  /**
   * Holds the writes until the matching {@link uncork}: lines queued
   * meanwhile go out together in one write (a replay page's lines, a
   * commit's acks), not the first alone and the rest behind it. A writer
   * queues synchronously, so a cork held within one turn delays nothing
   * but the lines it covers. Corks nest.
   */
  cork(): void {
    this.#corks++;
  }

  /** Ends a {@link cork}; the last one writes what queued meanwhile. */
  uncork(): void {
    if (this.#corks === 0) return;
    if (--this.#corks > 0 || this.#writing) return;
    if (this.#queue.length > 0 && !this.#closed) void this.#writeLoop();
  }

  /** A batch is being written (and so a frame may be half out). */
  get writing(): boolean {
    return this.#writing;
  }

  /**
   * Queues `bytes`; resolves once written, rejects when the writer fails
   * first. `raw` skips `encode` (a WebSocket control frame).
   */
  write(bytes: Uint8Array, raw = false): Promise<void> {
    if (this.#closed) return Promise.reject(new Error("transport closed"));
    return new Promise<void>((resolve, reject) => {
      this.#push({ bytes, raw, resolve, reject, done: undefined, tag: 0 });
    });
  }

  /**
   * {@link write} without a promise: `done(error, tag)` once written or
   * dropped (never before this returns), so a burst of lines makes no
   * promise and no closure per line.
   */
  writeThen(bytes: Uint8Array, done: WriteDone, tag: number): void {
    if (this.#closed) {
      queueMicrotask(() => done(new Error("transport closed"), tag));
      return;
    }
    this.#push({
      bytes,
      raw: false,
      resolve: undefined,
      reject: undefined,
      done,
      tag,
    });
  }

  #push(pending: Pending): void {
    this.#queue.push(pending);
    if (this.#writing || this.#corks > 0) return;
    if (
      !this.#holdBursts ||
      performance.now() - this.#lastWrite >=
        (this.#options.burstMs ?? BURST_MS)
    ) {
      void this.#writeLoop();
    } else {
      this.#writing = true; // later lines queue behind it meanwhile
      setTimeout(() => void this.#writeLoop(), 0);
    }
  }

  /** Resolves when every queued item is written (or dropped by a failure). */
  flush(): Promise<void> {
    if (!this.#writing && this.#queue.length === 0) return Promise.resolve();
    return new Promise((resolve) => (this.#idle ??= []).push(resolve));
  }

  /**
   * Stops the writer (idempotent): queued items are rejected with `error`,
   * flushes resolve. False when it had already stopped.
   */
  fail(error: Error): boolean {
    if (this.#closed) return false;
    this.#closed = true;
    const dropped = this.#queue.splice(0);
    for (const p of dropped) if (!p.done) p.reject!(error);
    // Callbacks a turn later, as a promise's handlers would run.
    if (dropped.some((p) => p.done)) {
      queueMicrotask(() => {
        for (const p of dropped) if (p.done) p.done(error, p.tag);
      });
    }
    this.#wakeIdle();
    return true;
  }

  async #writeLoop(): Promise<void> {
    this.#writing = true;
    try {
      while (this.#queue.length > 0 && !this.#closed && this.#corks === 0) {
        const count = this.#cut();
        const parts: Uint8Array[] = [];
        for (let i = 0; i < count; i++) {
          const p = this.#queue[i];
          const bytes = p.raw || !this.#options.encode
            ? p.bytes
            : this.#options.encode(p.bytes);
          parts.push(bytes);
        }
        const bytes = parts.length === 1 ? parts[0] : concat(parts);
        // The socket may take part of it: the rest, until all is taken.
        this.#lastWrite = performance.now();
        let at = 0;
        while (at < bytes.length) {
          at += await this.#sink.write(bytes.subarray(at));
        }
        for (const p of this.#queue.splice(0, count)) settle(p);
      }
    } catch (e) {
      // After fail() the queue is already rejected and the socket closed.
      if (!this.#closed) {
        const error = new Error(
          `write failed: ${(this.#options.reason ?? errorText)(e)}`,
        );
        this.fail(error);
        this.#options.onFail(error);
      }
    } finally {
      this.#writing = false;
      if (this.#queue.length === 0) this.#wakeIdle();
    }
  }

  /** How many queued items the next batch takes (at least one). */
  #cut(): number {
    let size = 0;
    let count = 0;
    while (
      count < this.#queue.length &&
      (count === 0 || size + this.#queue[count].bytes.length <= BATCH_BYTES)
    ) {
      size += this.#queue[count].bytes.length;
      count++;
    }
    return count;
  }

  #wakeIdle(): void {
    const idle = this.#idle;
    if (idle === undefined) return;
    this.#idle = undefined;
    for (const wake of idle) wake();
  }
}
