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
/** Views mode keeps its buffers after a push at least this big. */
const KEEP_AFTER_BYTES = 64 * 1024;

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
  /** Views mode: lines may be views, valid until the next push. */
  #views: boolean;
  /** Views mode: the current partial line, in its first `#pending` bytes. */
  #joined: Uint8Array | undefined;
  /** Views mode: the other buffer (lent out by the last push, or unused). */
  #spare: Uint8Array | undefined;
  /** Views mode: `#joined` holds a line returned by this push. */
  #lent = false;

  /**
   * Creates a reader; `maxLineBytes` must be a non-negative integer. With
   * `views`, returned lines may be views of the pushed chunk or of the
   * reader's own buffers, valid only until the next push (and while the
   * pushed chunk is unchanged): a line whole in one chunk is not copied at
   * all, one split across chunks is gathered in one of two reused buffers.
   * For a caller done with each line before it pushes again, whose
   * transport reads into a reused buffer (the connection: a blob's ~350 KB
   * chunk lines then cost no allocation here).
   */
  constructor(options: { maxLineBytes?: number; views?: boolean } = {}) {
    const max = options.maxLineBytes ?? MAX_LINE_BYTES;
    if (!Number.isSafeInteger(max) || max < 0) {
      throw new RangeError(`LineReader: invalid maxLineBytes: ${max}`);
    }
    this.#max = max;
    this.#views = options.views ?? false;
  }

  /** Bytes of the current unfinished line held in memory. */
  get buffered(): number {
    return this.#pending;
  }

  /**
   * Feeds a chunk of the stream and returns the events it completes, in
   * order. The chunk may be reused by the caller afterwards: returned lines
   * are copies (unless made with `views`, see the constructor).
   */
  push(chunk: Uint8Array): LineEvent[] {
    if (!this.#views) return this.#split(chunk);
    this.#lent = false;
    const events = this.#split(chunk);
    // Nothing partial after a small read: an idle connection keeps no
    // buffer (a burst keeps them, even when a read ends with a line).
    if (this.#pending === 0 && chunk.length < KEEP_AFTER_BYTES) {
      this.#joined = this.#spare = undefined;
    }
    return events;
  }

  #split(chunk: Uint8Array): LineEvent[] {
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
        this.#keep(chunk.subarray(pos));
        this.#pending = size;
        return events;
      }
      events.push({ kind: "line", bytes: this.#take(chunk.subarray(pos, nl)) });
      pos = nl + 1;
    }
    return events;
  }

  /** Keeps the start of a partial line (`#pending` counts it after). */
  #keep(piece: Uint8Array): void {
    if (!this.#views) {
      this.#pieces.push(piece.slice());
      return;
    }
    // The buffer holds a line this push returned: gather in the other one.
    if (this.#lent) {
      [this.#joined, this.#spare] = [this.#spare, this.#joined];
      this.#lent = false;
    }
    this.#room(this.#pending + piece.length).set(piece, this.#pending);
  }

  /** The gathering buffer, grown (keeping its pending bytes) to `need`. */
  #room(need: number): Uint8Array {
    if (this.#joined === undefined || this.#joined.length < need) {
      const grown = new Uint8Array(
        Math.min(this.#max, Math.max(4096, need + (need >> 1))),
      );
      if (this.#pending > 0) {
        grown.set(this.#joined!.subarray(0, this.#pending));
      }
      this.#joined = grown;
    }
    return this.#joined;
  }

  #take(last: Uint8Array): Uint8Array {
    if (this.#views) {
      if (this.#pending === 0) return last;
      const size = this.#pending + last.length;
      const line = this.#room(size);
      line.set(last, this.#pending);
      this.#pending = 0;
      this.#lent = true;
      return line.subarray(0, size);
    }
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
