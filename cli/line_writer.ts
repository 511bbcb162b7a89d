/**
 * Lines written to a stream in order, grouped: the lines pushed in one turn
 * of the event loop go out in one write. A small batch after a pause is
 * written synchronously (an event's latency is one syscall, not a hop
 * through the runtime's blocking-write threads); in a burst the writes are
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
 * Batches up to this size are written synchronously: a reader that keeps up
 * (the driver's contract) never makes that wait.
 */
const SYNC_WRITE_BYTES = 16 * 1024;
/**
 * A synchronous write only this long after the previous one began: closer
 * together, the lines are a burst, written asynchronously in batches.
 */
const SYNC_GAP_MS = 0.25;

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
  /** When the last synchronous write began. */
  #lastSync = -Infinity;

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
        if (
          this.#sink.writeSync && bytes.length <= SYNC_WRITE_BYTES &&
          now - this.#lastSync >= SYNC_GAP_MS
        ) {
          this.#lastSync = now;
          while (off < bytes.length) {
            off += this.#sink.writeSync(bytes.subarray(off));
          }
        }
        while (off < bytes.length) {
          off += await this.#sink.write(bytes.subarray(off));
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
