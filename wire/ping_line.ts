/**
 * Pings and pongs without the generic line path: a quiet connection's only
 * traffic is the dialer's ping every 30 s and the listener's pong, and at
 * 10,000 connections the generic path (JSON parse, schema check, frame
 * object, JSON stringify, a runtime encode call) was most of the idle
 * listener's work per ping. A ping in the shape every dialer sends,
 * `{"t":"ping","id":"…","ts":"…"}` with plain ASCII strings, is read here;
 * any other line (extra fields, escapes, other key order) takes the generic
 * path, which decides as before.
 *
 * @module
 */

import { isDateTime } from "./schema_formats.ts";
import type { Frame } from "./read_frame.ts";
import type { Ping } from "./types.ts";

const PING_HEAD = bytesOf('{"t":"ping","id":"');
const PING_MID = bytesOf('","ts":"');
const QUOTE = 0x22;
const CLOSE = 0x7d;
const BACKSLASH = 0x5c;

function bytesOf(text: string): Uint8Array {
  return Uint8Array.from(text, (c) => c.charCodeAt(0));
}

/**
 * A ping line (bytes without the newline) in the plain shape, schema-valid
 * (`id` non-empty, `ts` an RFC 3339 date-time), as the {@link Frame} that
 * `readFrame` would make of it; else undefined (the generic path then reads
 * it, and refuses it if it must).
 *
 * @example
 * ```ts
 * import { readPlainPing } from "./ping_line.ts";
 * const line = '{"t":"ping","id":"01J0000000000000000000000A","ts":"2026-01-01T00:00:00.000Z"}';
 * const ping = readPlainPing(new TextEncoder().encode(line));
 * console.log(ping?.message.id, ping?.raw === line); // "01J0000000000000000000000A" true
 * console.log(readPlainPing(new TextEncoder().encode('{"t":"ping","id":""}'))); // undefined
 * ```
 */
export function readPlainPing(bytes: Uint8Array): Frame | undefined {
  const n = bytes.length;
  if (n < PING_HEAD.length + PING_MID.length + 4) return undefined;
  for (let i = 0; i < PING_HEAD.length; i++) {
    if (bytes[i] !== PING_HEAD[i]) return undefined;
  }
  const idStart = PING_HEAD.length;
  const idEnd = plainStringEnd(bytes, idStart);
  if (idEnd <= idStart || idEnd + PING_MID.length > n) return undefined;
  for (let i = 0; i < PING_MID.length; i++) {
    if (bytes[idEnd + i] !== PING_MID[i]) return undefined;
  }
  const tsStart = idEnd + PING_MID.length;
  const tsEnd = plainStringEnd(bytes, tsStart);
  // The ts string's quote, then the object's brace, then the line's end.
  if (tsEnd < 0 || tsEnd + 2 !== n || bytes[tsEnd + 1] !== CLOSE) {
    return undefined;
  }
  if (!plainDateTime(bytes, tsStart, tsEnd)) return undefined;
  // One string for the line; its fields are slices of it.
  const raw = String.fromCharCode.apply(null, bytes as unknown as number[]);
  const message: Ping = {
    t: "ping",
    id: raw.slice(idStart, idEnd),
    ts: raw.slice(tsStart, tsEnd),
  };
  return { message, raw, size: n };
}

/**
 * Where a string of printable ASCII without escapes that starts at `from`
 * ends (the index of its closing quote), or -1.
 */
function plainStringEnd(bytes: Uint8Array, from: number): number {
  for (let i = from; i < bytes.length; i++) {
    const b = bytes[i];
    if (b === QUOTE) return i;
    if (b < 0x20 || b > 0x7e || b === BACKSLASH) return -1;
  }
  return -1;
}

const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/** The value of `count` ASCII digits at `at`, or -1. */
function digits(bytes: Uint8Array, at: number, count: number): number {
  let value = 0;
  for (let i = at; i < at + count; i++) {
    const d = bytes[i] - 0x30;
    if (d < 0 || d > 9) return -1;
    value = value * 10 + d;
  }
  return value;
}

/**
 * Whether `bytes[from, to)` is a UTC RFC 3339 date-time in the usual shape,
 * `YYYY-MM-DDTHH:MM:SS[.fff…]Z`, read without strings; any other shape
 * (offsets, a leap second, lower-case letters) is left to the schema's own
 * check ({@link isDateTime}), so this accepts nothing that one refuses.
 */
function plainDateTime(bytes: Uint8Array, from: number, to: number): boolean {
  if (to - from < 20) return slowDateTime(bytes, from, to);
  const year = digits(bytes, from, 4);
  const month = digits(bytes, from + 5, 2);
  const day = digits(bytes, from + 8, 2);
  const hour = digits(bytes, from + 11, 2);
  const minute = digits(bytes, from + 14, 2);
  const second = digits(bytes, from + 17, 2);
  if (
    year < 0 || month < 1 || month > 12 || day < 1 || hour < 0 ||
    hour > 23 || minute < 0 || minute > 59 || second < 0 || second > 59 ||
    bytes[from + 4] !== 0x2d || bytes[from + 7] !== 0x2d ||
    bytes[from + 10] !== 0x54 || bytes[from + 13] !== 0x3a ||
    bytes[from + 16] !== 0x3a || bytes[to - 1] !== 0x5a
  ) {
    return slowDateTime(bytes, from, to);
  }
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  if (day > (month === 2 && leap ? 29 : DAYS_IN_MONTH[month - 1])) {
    return false;
  }
  // Then nothing, or a fraction of at least one digit, before the Z.
  const fraction = from + 19;
  if (fraction === to - 1) return true;
  if (bytes[fraction] !== 0x2e || fraction + 1 === to - 1) {
    return slowDateTime(bytes, from, to);
  }
  return digits(bytes, fraction + 1, to - 1 - (fraction + 1)) >= 0 ||
    slowDateTime(bytes, from, to);
}

function slowDateTime(bytes: Uint8Array, from: number, to: number): boolean {
  return isDateTime(
    String.fromCharCode.apply(
      null,
      bytes.subarray(from, to) as unknown as number[],
    ),
  );
}

/**
 * The pong line answering ping `re` (text without the newline, and its
 * bytes with it), built without `JSON.stringify` or a runtime encode call;
 * the same bytes `JSON.stringify({ t: "pong", id, ts, re })` gives. Undefined
 * when a field is not plain ASCII (the caller encodes it generically).
 *
 * @example
 * ```ts
 * import { plainPongLine } from "./ping_line.ts";
 * const pong = plainPongLine("02", "2026-01-01T00:00:00.000Z", "01");
 * console.log(pong?.text); // {"t":"pong","id":"02","ts":"2026-01-01T00:00:00.000Z","re":"01"}
 * console.log(pong?.bytes.length === pong!.text.length + 1); // true
 * ```
 */
export function plainPongLine(
  id: string,
  ts: string,
  re: string,
): { text: string; bytes: Uint8Array } | undefined {
  const n = PONG_FIXED_BYTES + id.length + ts.length + re.length;
  const bytes = new Uint8Array(n + 1);
  let at = 0;
  for (const part of [PONG_ID, id, PONG_TS, ts, PONG_RE, re, PONG_END]) {
    for (let i = 0; i < part.length; i++) {
      const c = part.charCodeAt(i);
      // Beyond plain ASCII, or a quote or backslash inside a field: that
      // would need escaping (the caller encodes it generically).
      if (
        c < 0x20 || c > 0x7e ||
        (c === QUOTE || c === BACKSLASH) &&
          (part === id || part === ts || part === re)
      ) {
        return undefined;
      }
      bytes[at++] = c;
    }
  }
  bytes[n] = 0x0a;
  return {
    text: `${PONG_ID}${id}${PONG_TS}${ts}${PONG_RE}${re}${PONG_END}`,
    bytes,
  };
}

const PONG_ID = '{"t":"pong","id":"';
const PONG_TS = '","ts":"';
const PONG_RE = '","re":"';
const PONG_END = '"}';
const PONG_FIXED_BYTES = PONG_ID.length + PONG_TS.length + PONG_RE.length +
  PONG_END.length;
