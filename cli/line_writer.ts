/**
 * Lines written to a stream without blocking, grouped: a line alone is
 * written at once, and the lines that queue up while a write is in flight go
 * out together in the next one (the driver's events in a burst: one write per
 * turn instead of a synchronous write per event).
 *
 * @module
 */

const encoder = new TextEncoder();

/** A stream that takes bytes asynchronously, like `Deno.stdout`. */
export interface ByteSink {
  write(bytes: Uint8Array): Promise<number>;
}

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
 * out.push('{"event":"b"}'); // goes out with the next write
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

  constructor(sink: ByteSink, onWritten: (mark: number) => void = () => {}) {
    this.#sink = sink;
    this.#onWritten = onWritten;
  }

  /** Queues one line (without its newline), with an optional mark. */
  push(line: string, mark?: number): void {
    if (this.#broken) return;
    this.#queue.push(line);
    if (mark !== undefined && mark > this.#mark) this.#mark = mark;
    this.#writing ??= this.#drain();
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
