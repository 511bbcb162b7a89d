/**
 * A fast path for received chunk lines: a line that ends with its `data`
 * (as we and most writers send it: `...,"data":"<base64>"}`) is split into
 * its small envelope, parsed as JSON with `data` empty, and its data,
 * decoded straight from the line's bytes, in pieces. The general parse
 * would decode the whole ~350 KB line into a string and JSON.parse would
 * copy the data again; here the only large allocation is the decoded
 * bytes. Any other shape (data not last, escapes, whitespace, another
 * alphabet) returns undefined and takes the general path, so what is
 * accepted does not change.
 *
 * @module
 */

const QUOTE = 0x22;
const BRACE = 0x7d;
const BACKSLASH = 0x5c;
/** `"data":` before the value's opening quote. */
const DATA_KEY = new TextEncoder().encode('"data":');
// ignoreBOM: a BOM stays in the text (and fails there) instead of vanishing.
const strict = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
/**
 * For the data: not fatal, which takes Deno's single-pass UTF-8 path (~6×
 * faster on a 350 KB line). Any byte that is not plain ASCII base64 still
 * fails, later: as U+FFFD or a multi-byte letter, which `setFromBase64`
 * rejects, and the line takes the general parse.
 */
const loose = new TextDecoder("utf-8", { ignoreBOM: true });
/** Lines shorter than this go the general way (nothing to save). */
const MIN_FAST_BYTES = 4096;
/** The envelope before `data` is looked for in this many bytes. */
const MAX_HEAD_BYTES = 4096;

/** A chunk line split by {@linkcode splitChunkLine}. */
export interface SplitChunkLine {
  /** The parsed line with `data` set to "". */
  message: Record<string, unknown> & { t: string; data: string };
  /** `message` as JSON text (the line without its data). */
  raw: string;
  /** The data, decoded. */
  bytes: Uint8Array;
}

/**
 * Splits a chunk line whose last member is a standard-base64 `data`; else
 * undefined (parse it the general way).
 *
 * @example
 * ```ts
 * import { splitChunkLine } from "./chunk_line.ts";
 * const data = "QUJD".repeat(2000);
 * const line = new TextEncoder().encode(
 *   `{"t":"chunk","id":"1","ts":"x","ref":"r","n":0,"last":true,"data":"${data}"}`,
 * );
 * const split = splitChunkLine(line)!;
 * console.log(split.message.n, split.message.data, split.bytes.length); // 0 "" 6000
 * ```
 */
export function splitChunkLine(bytes: Uint8Array): SplitChunkLine | undefined {
  const end = bytes.length;
  if (end < MIN_FAST_BYTES) return undefined;
  if (bytes[end - 1] !== BRACE || bytes[end - 2] !== QUOTE) return undefined;
  const open = dataQuote(bytes);
  if (open < 0) return undefined;
  let head: string;
  try {
    head = strict.decode(bytes.subarray(0, open + 1));
  } catch {
    return undefined;
  }
  let message: unknown;
  try {
    message = JSON.parse(`${head}"}`);
  } catch {
    return undefined;
  }
  if (
    message === null || typeof message !== "object" ||
    Array.isArray(message) || (message as { t?: unknown }).t !== "chunk" ||
    (message as { data?: unknown }).data !== ""
  ) return undefined;
  const data = decodePooled(bytes.subarray(open + 1, end - 2));
  if (!data) return undefined;
  const m = message as SplitChunkLine["message"];
  return { message: m, raw: `${head}"}`, bytes: data };
}

/**
 * Where the value of the first `"data":` key opens (the index of its
 * quote), looked for in the line's first {@link MAX_HEAD_BYTES}; -1 if
 * none. Searched forward through the small envelope, not back through the
 * data: everything after this quote up to the line's closing `"}` must then
 * be base64, with no quote in it, or `decodePooled` refuses it. So a `data`
 * that is not last, or a second `data` key, takes the general parse. Inside
 * a JSON string every quote is escaped: a match after no backslash is a key
 * (or the line is not JSON, and the envelope's parse fails).
 */
function dataQuote(bytes: Uint8Array): number {
  const limit = Math.min(bytes.length - 2, MAX_HEAD_BYTES);
  const after = DATA_KEY.length;
  for (
    let at = bytes.indexOf(QUOTE, 1);
    at >= 0 && at + after < limit;
    at = bytes.indexOf(QUOTE, at + 1)
  ) {
    // An escaped quote is inside a string: not a key.
    if (bytes[at - 1] === BACKSLASH) continue;
    let i = 1;
    while (i < after && bytes[at + i] === DATA_KEY[i]) i++;
    if (i === after && bytes[at + after] === QUOTE) return at + after;
  }
  return -1;
}

/** Decoded chunk buffers kept for reuse, and those handed out. */
const free: ArrayBuffer[] = [];
const pooled = new WeakSet<ArrayBuffer>();
/** At most this many spare buffers (a receiver holds a few in flight). */
const POOL_SIZE = 8;

interface NativeSetFromBase64 {
  setFromBase64(
    text: string,
    options: { alphabet: string; lastChunkHandling: string },
  ): { read: number; written: number };
}

/**
 * The base64 is turned into text this many characters at a time (a
 * multiple of 4: each piece decodes alone). One string per 350 KB chunk
 * line would be a large object, which V8 keeps on pages of its own until
 * a scavenge: ~1.7 MiB of them at a 20 MiB blob's peak. Pieces of 64 KiB
 * are ordinary young strings on the young generation's pages, which the
 * transfer fills and reuses anyway (bench/README.md, "blobrx").
 */
const TEXT_PIECE = 65536;
const EQUALS = 0x3d;

/**
 * Standard base64 (the line's bytes between the quotes) decoded into a
 * reused buffer, or undefined when it is not exactly that (whitespace, bad
 * padding, a byte that is not base64...: the general path says what is
 * wrong).
 */
function decodePooled(base64: Uint8Array): Uint8Array | undefined {
  // Padded to whole groups (as we write it): then any skipped whitespace
  // shows as fewer bytes written than the length says.
  const length = base64.length;
  if (length % 4 !== 0) return undefined;
  const pad = base64[length - 1] !== EQUALS
    ? 0
    : base64[length - 2] === EQUALS
    ? 2
    : 1;
  const size = length / 4 * 3 - pad;
  let buffer = free.pop();
  if (!buffer || buffer.byteLength < size) {
    buffer = new ArrayBuffer(Math.max(size, 262144));
    pooled.add(buffer);
  }
  const view = new Uint8Array(buffer, 0, size);
  let written = 0;
  for (let at = 0; at < length; at += TEXT_PIECE) {
    const end = Math.min(length, at + TEXT_PIECE);
    // A byte that is not ASCII becomes U+FFFD (or part of a multi-byte
    // letter) here, which setFromBase64 rejects.
    const text = loose.decode(base64.subarray(at, end));
    let result: { read: number; written: number };
    try {
      // Only the standard alphabet (what the schema's pattern allows): a
      // `-` or `_` throws here, and so does anything after padding.
      result = (view.subarray(written) as unknown as NativeSetFromBase64)
        .setFromBase64(text, {
          alphabet: "base64",
          lastChunkHandling: "loose",
        });
    } catch {
      releaseChunkBytes(view);
      return undefined;
    }
    // Skipped whitespace, padding before the last piece, or stopped early
    // (no room): not ours to accept here.
    const whole = end === length ? size - written : text.length / 4 * 3;
    if (result.read !== text.length || result.written !== whole) {
      releaseChunkBytes(view);
      return undefined;
    }
    written += result.written;
  }
  return view;
}

/**
 * Hands the bytes of a {@linkcode splitChunkLine} back for reuse once they
 * are written and nothing else holds them (others are ignored).
 *
 * @example
 * ```ts
 * import { releaseChunkBytes } from "./chunk_line.ts";
 * releaseChunkBytes(new Uint8Array(4)); // not pooled: ignored
 * ```
 */
export function releaseChunkBytes(bytes: Uint8Array): void {
  const buffer = bytes.buffer as ArrayBuffer;
  if (!pooled.has(buffer) || free.length >= POOL_SIZE) return;
  if (free.includes(buffer)) return;
  free.push(buffer);
}
