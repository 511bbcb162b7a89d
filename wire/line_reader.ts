/**
 * Decoding side of AWP framing: splits a byte stream into lines, bounded.
 *
 * @module
 */

import { MAX_LINE_BYTES } from "./frame.ts";

/**
 * What {@linkcode LineReader.push} reports: a complete line (without its
 * "\n"), or a line that went over the limit. For `too_large`, `size` is the
 * number of bytes of that line seen when it became known to be over the
 * limit, so it is a lower bound on the real length when the line had not
 * ended yet.
 */
export type LineEvent =
  | { kind: "line"; bytes: Uint8Array }
  | { kind: "too_large"; size: number };

const NEWLINE = 0x0a;

/**
 * Splits pushed chunks into newline-terminated lines of at most
 * `maxLineBytes` bytes (default {@linkcode MAX_LINE_BYTES}, newline
 * excluded). Never buffers more than the limit: an over-long line is
 * reported as soon as it is known to be over, and the rest of it, up to the
 * next newline, is discarded.
 *
 * @example
 * ```ts
 * import { LineReader } from "./line_reader.ts";
 * const reader = new LineReader();
 * const enc = new TextEncoder();
 * reader.push(enc.encode('{"t":"pi'));
 * const events = reader.push(enc.encode('ng"}\n{"t"'));
 * console.log(events.length, reader.buffered); // 1 4
 * ```
 */
export class LineReader {
  #max: number;
  // Pieces of the current partial line, copied; joined once at its end so
  // that a large line costs O(n), not O(n^2).
  #pieces: Uint8Array[] = [];
  #pending = 0;
  // True after a too_large report until the end of that line.
  #discarding = false;

  /** Creates a reader; `maxLineBytes` must be a non-negative integer. */
  constructor(options: { maxLineBytes?: number } = {}) {
    const max = options.maxLineBytes ?? MAX_LINE_BYTES;
    if (!Number.isSafeInteger(max) || max < 0) {
      throw new RangeError(`LineReader: invalid maxLineBytes: ${max}`);
    }
    this.#max = max;
  }

  /** Bytes of the current unfinished line held in memory. */
  get buffered(): number {
    return this.#pending;
  }

  /**
   * Feeds a chunk of the stream and returns the events it completes, in
   * order. The chunk may be reused by the caller afterwards: returned lines
   * are copies.
   */
  push(chunk: Uint8Array): LineEvent[] {
    const events: LineEvent[] = [];
    let pos = 0;
    while (pos < chunk.length) {
      const nl = chunk.indexOf(NEWLINE, pos);
      if (this.#discarding) {
        if (nl < 0) return events;
        this.#discarding = false;
        pos = nl + 1;
        continue;
      }
      const end = nl < 0 ? chunk.length : nl;
      const size = this.#pending + (end - pos);
      if (size > this.#max) {
        events.push({ kind: "too_large", size });
        this.#reset();
        if (nl < 0) {
          this.#discarding = true;
          return events;
        }
        pos = nl + 1;
        continue;
      }
      if (nl < 0) {
        this.#pieces.push(chunk.slice(pos));
        this.#pending = size;
        return events;
      }
      events.push({ kind: "line", bytes: this.#take(chunk.subarray(pos, nl)) });
      pos = nl + 1;
    }
    return events;
  }

  #take(last: Uint8Array): Uint8Array {
    if (this.#pieces.length === 0) return last.slice();
    const out = new Uint8Array(this.#pending + last.length);
    let offset = 0;
    for (const piece of this.#pieces) {
      out.set(piece, offset);
      offset += piece.length;
    }
    out.set(last, offset);
    this.#reset();
    return out;
  }

  #reset(): void {
    this.#pieces = [];
    this.#pending = 0;
  }
}
