/**
 * Lines written to a stream in order, grouped: the lines pushed in one turn
 * of the event loop go out in one write. Small batches are written
 * synchronously (an event's latency is one syscall, not a hop through the
 * runtime's blocking-write threads, whose p99 was 2–18 ms here) while few
 * bytes went out that way lately; past that budget (a flood) the writes are
 * asynchronous, off the main thread, and what queues meanwhile goes in the
 * next. The driver's events: a lone `acked` leaves at once, a burst's in
 * few writes.
 *
 * @module
 */

const encoder = new TextEncoder();

/**
 * A stream that takes bytes, like `Deno.stdout`: asynchronously, and
 * optionally synchronously.
 */
export interface ByteSink {
  write(bytes: Uint8Array): Promise<number>;
  writeSync?(bytes: Uint8Array): number;
}

/**
 * Bytes written synchronously per {@link SYNC_WINDOW_MS} at most: a reader
 * that keeps up (the driver's contract) empties the pipe (64 KiB) far
 * faster, so they never wait; past it, a flood goes asynchronously.
 */
const SYNC_WINDOW_BYTES = 16 * 1024;
/**
 * The budget's window; also how long after an asynchronous write (a flood,
 * whose bytes may still fill the pipe) every write stays asynchronous: a
 * synchronous write into a full pipe would stop the whole peer until the
 * reader catches up. (The earlier rule, a gap of 0.25 ms since the last
 * synchronous write, sent an `acked` shortly after its `sent` through the
 * blocking-write threads, and wrote a flood's small batches synchronously.)
 */
const SYNC_WINDOW_MS = 10;

/**
 * Writes lines in order, in as few writes as the stream's pace allows. Each
 * line may carry a mark (a number); `onWritten` is told the highest mark
 * once the line holding it is written, so a cursor saved from it never runs
 * ahead of what the reader was given.
 *
 * @example
 * ```ts
 * import { LineWriter } from "./line_writer.ts";
 * const out = new LineWriter(Deno.stdout);
 * out.push('{"event":"a"}');
 * out.push('{"event":"b"}'); // goes out in the same write
 * await out.flush();
 * ```
 */
export class LineWriter {
  #sink: ByteSink;
  #onWritten: (mark: number) => void;
  #queue: string[] = [];
  #mark = -Infinity;
  #writing: Promise<void> | undefined;
  #broken = false;
  /** When the current window of synchronous writes began. */
  #windowStart = -Infinity;
  /** Bytes written synchronously in it. */
  #windowBytes = 0;
  /** When the last asynchronous write ended. */
  #lastAsync = -Infinity;

  constructor(sink: ByteSink, onWritten: (mark: number) => void = () => {}) {
    this.#sink = sink;
    this.#onWritten = onWritten;
  }

  /** Queues one line (without its newline), with an optional mark. */
  push(line: string, mark?: number): void {
    if (this.#broken) return;
    this.#queue.push(line);
    if (mark !== undefined && mark > this.#mark) this.#mark = mark;
    // At the end of this turn: the lines pushed meanwhile join the write.
    this.#writing ??= Promise.resolve().then(() => this.#drain());
  }

  /** Resolves once every line pushed so far is written (or the sink broke). */
  async flush(): Promise<void> {
    while (this.#writing) await this.#writing;
  }

  async #drain(): Promise<void> {
    try {
      while (this.#queue.length > 0) {
        const bytes = encoder.encode(this.#queue.join("\n") + "\n");
        const mark = this.#mark;
        this.#queue = [];
        this.#mark = -Infinity;
        let off = 0;
        const now = performance.now();
        if (now - this.#windowStart >= SYNC_WINDOW_MS) {
          this.#windowStart = now;
          this.#windowBytes = 0;
        }
        if (
          this.#sink.writeSync &&
          now - this.#lastAsync >= SYNC_WINDOW_MS &&
          this.#windowBytes + bytes.length <= SYNC_WINDOW_BYTES
        ) {
          this.#windowBytes += bytes.length;
          while (off < bytes.length) {
            off += this.#sink.writeSync(bytes.subarray(off));
          }
        }
        if (off < bytes.length) {
          while (off < bytes.length) {
            off += await this.#sink.write(bytes.subarray(off));
          }
          this.#lastAsync = performance.now();
        }
        if (mark !== -Infinity) this.#onWritten(mark);
      }
    } catch {
      // The reader went away: nothing more can be reported.
      this.#broken = true;
      this.#queue = [];
    } finally {
      this.#writing = undefined;
    }
  }
}
