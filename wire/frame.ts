/**
 * Encoding side of AWP framing: one JSON object per line, at most 1 MiB.
 *
 * @module
 */

/** The largest line AWP allows, in bytes, newline excluded (SPEC section 5). */
export const MAX_LINE_BYTES = 1048576;

/**
 * Thrown when a line would exceed {@linkcode MAX_LINE_BYTES}.
 *
 * @example
 * ```ts
 * import { LineTooLargeError } from "./frame.ts";
 * const err = new LineTooLargeError(2_000_000);
 * console.log(err.size, err.message);
 * ```
 */
export class LineTooLargeError extends Error {
  /** Size of the offending line in bytes, newline excluded. */
  readonly size: number;

  /** Builds the error for a line of `size` bytes over the `limit`. */
  constructor(size: number, limit: number = MAX_LINE_BYTES) {
    super(`line of ${size} bytes exceeds the ${limit} byte limit`);
    this.name = "LineTooLargeError";
    this.size = size;
  }
}

const encoder = new TextEncoder();

/**
 * Encodes a message as one UTF-8 JSON line terminated by "\n".
 *
 * Throws {@linkcode LineTooLargeError} when the JSON exceeds
 * {@linkcode MAX_LINE_BYTES}, and a TypeError when the value does not
 * serialize to a JSON object.
 *
 * @example
 * ```ts
 * import { encodeLine } from "./frame.ts";
 * const bytes = encodeLine({ t: "ping", id: "1", ts: "2026-01-01T00:00:00.000Z" });
 * console.log(new TextDecoder().decode(bytes)); // {"t":"ping",...}\n
 * ```
 */
export function encodeLine(message: object): Uint8Array {
  return encodeTextLine(message).bytes;
}

/**
 * {@linkcode encodeLine}, with the line's JSON text too (newline excluded):
 * serialized once, for a caller that logs what it writes.
 *
 * @example
 * ```ts
 * import { encodeTextLine } from "./frame.ts";
 * const { text, bytes } = encodeTextLine({ t: "bye", id: "1", ts: "2026-01-01T00:00:00.000Z" });
 * console.log(text.length + 1 === bytes.length); // true
 * ```
 */
export function encodeTextLine(
  message: object,
): { text: string; bytes: Uint8Array } {
  if (
    message === null || typeof message !== "object" || Array.isArray(message)
  ) {
    throw new TypeError("encodeLine: message must be a JSON object");
  }
  const text = JSON.stringify(message);
  if (typeof text !== "string") {
    throw new TypeError("encodeLine: message is not serializable as JSON");
  }
  const bytes = encoder.encode(text + "\n");
  const size = bytes.length - 1;
  if (size > MAX_LINE_BYTES) throw new LineTooLargeError(size);
  return { text, bytes };
}

/**
 * Room a drafted line leaves under {@linkcode MAX_LINE_BYTES} for what is
 * added after it is measured: the outbox gives it `id` (a 26-character
 * ULID) and `ts` (24 characters) when it is enqueued, 66 bytes with their
 * keys and punctuation. The rest is slack for envelope fields added later
 * (e.g. a `th` or `re` filled in by a layer below), so a draft that passed
 * never fails when it is written.
 */
export const ENVELOPE_HEADROOM_BYTES = 200;

/**
 * True when `message` encodes as a line of at most `limit` bytes (newline
 * excluded): it is serialized once, and encoded as UTF-8 only when it
 * might be over (UTF-8 takes at most 3 bytes per UTF-16 unit).
 *
 * @example
 * ```ts
 * import { ENVELOPE_HEADROOM_BYTES, fitsLine, MAX_LINE_BYTES } from "./frame.ts";
 * const draft = { t: "msg", th: "t1", parts: [{ type: "text", text: "hi" }] };
 * console.log(fitsLine(draft, MAX_LINE_BYTES - ENVELOPE_HEADROOM_BYTES)); // true
 * ```
 */
export function fitsLine(
  message: object,
  limit: number = MAX_LINE_BYTES,
): boolean {
  const json = JSON.stringify(message);
  if (typeof json !== "string") return false;
  return json.length * 3 <= limit || encoder.encode(json).length <= limit;
}
