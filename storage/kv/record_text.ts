/**
 * {@link RecordText}: a small record's JSON text as it waits for its
 * commit, and {@link RecordEncoder}, which turns the texts of one commit
 * into UTF-8 in one reused buffer.
 *
 * A record encoded when it is written (`Tx.putRecord`) holds a buffer of
 * its own (native memory) from then until its commit is durable, and
 * after: a burst builds a few commits ahead, so those buffers outlive
 * V8's young generation and are freed only by a full GC (a 2,000-msg
 * burst held ~10 MiB of them; bench/README.md, "burst2"). As text it is
 * an ordinary string, and its bytes exist only while the commit runs.
 *
 * @module
 */

const NON_ASCII = /[\u0080-\uffff]/;

/**
 * The UTF-8 length of `text` (as `TextEncoder` encodes it: a lone
 * surrogate as U+FFFD), without encoding it.
 *
 * @example
 * ```ts
 * import { utf8Length } from "./record_text.ts";
 * console.log(utf8Length("é€😀a")); // 10
 * ```
 */
export function utf8Length(text: string): number {
  if (!NON_ASCII.test(text)) return text.length;
  let n = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x80) n += 1;
    else if (c < 0x800) n += 2;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < text.length) {
      const d = text.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        n += 4;
        i++;
      } else n += 3;
    } else n += 3;
  }
  return n;
}

/**
 * A record's JSON text and its UTF-8 length: the value of a record's
 * mutation until the backend commits it as those bytes.
 *
 * @example
 * ```ts
 * import { RecordText } from "./record_text.ts";
 * const r = RecordText.of({ a: "é" });
 * console.log(r.text, r.bytes); // {"a":"é"} 10
 * ```
 */
export class RecordText {
  /** The JSON text. */
  readonly text: string;
  /** Its UTF-8 length. */
  readonly bytes: number;

  constructor(text: string, bytes: number = utf8Length(text)) {
    this.text = text;
    this.bytes = bytes;
  }

  /** The record `value` as JSON text. */
  static of(value: unknown): RecordText {
    return new RecordText(JSON.stringify(value));
  }

  /** The record it holds. */
  decode(): unknown {
    return JSON.parse(this.text);
  }
}

const utf8 = new TextEncoder();

/** Largest buffer kept between commits; a bigger commit's goes after it. */
const KEPT_BUFFER_BYTES = 1024 * 1024;

/**
 * Encodes the {@link RecordText} values of one commit into views of one
 * buffer, reused by the next commit once this one is done with it.
 *
 * @example
 * ```ts
 * import { RecordEncoder, RecordText } from "./record_text.ts";
 * const encoder = new RecordEncoder();
 * const record = RecordText.of({ a: 1 });
 * const out = encoder.take([{ value: record }, { value: 7 }]);
 * const bytes = out.encode(record);
 * console.log(new TextDecoder().decode(bytes)); // {"a":1}
 * encoder.give(out);
 * ```
 */
export class RecordEncoder {
  #free: Uint8Array | undefined;

  /**
   * A buffer for the texts among the `mutations`' values (the free one when it is big
   * enough): give it back once the commit no longer reads it.
   */
  take(mutations: readonly { value: unknown }[]): RecordBuffer {
    let need = 0;
    for (const { value } of mutations) {
      if (value instanceof RecordText) need += value.bytes;
    }
    let buffer = this.#free;
    this.#free = undefined;
    if (buffer === undefined || buffer.byteLength < need) {
      // Rounded up, so a slightly bigger commit next time fits too.
      buffer = new Uint8Array(Math.max(64 * 1024, need + (need >> 2)));
    }
    return new RecordBuffer(buffer);
  }

  /** `out`'s buffer is free again (its commit settled). */
  give(out: RecordBuffer): void {
    const buffer = out.buffer;
    if (buffer.byteLength > KEPT_BUFFER_BYTES) return;
    if (this.#free === undefined || this.#free.byteLength < buffer.byteLength) {
      this.#free = buffer;
    }
  }
}

/**
 * One commit's buffer, filled from the start (see {@link RecordEncoder}).
 *
 * @example
 * ```ts
 * import { RecordBuffer, RecordText } from "./record_text.ts";
 * const out = new RecordBuffer(new Uint8Array(64));
 * const a = out.encode(RecordText.of([1]));
 * const b = out.encode(RecordText.of("é"));
 * console.log(a.byteOffset, b.byteOffset, b.byteLength); // 0 3 4
 * ```
 */
export class RecordBuffer {
  /** The whole buffer. */
  readonly buffer: Uint8Array;
  #offset = 0;

  /** Fills `buffer` from its start. */
  constructor(buffer: Uint8Array) {
    this.buffer = buffer;
  }

  /** `record`'s bytes, in the next free part of the buffer. */
  encode(record: RecordText): Uint8Array {
    const start = this.#offset;
    const { read, written } = utf8.encodeInto(
      record.text,
      this.buffer.subarray(start, start + record.bytes),
    );
    if (read !== record.text.length || written !== record.bytes) {
      throw new RangeError("a record's text does not fit its UTF-8 length");
    }
    this.#offset = start + written;
    return this.buffer.subarray(start, start + written);
  }
}
