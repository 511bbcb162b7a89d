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
  // One string for the line; its fields are slices of it.
  const raw = String.fromCharCode.apply(null, bytes as unknown as number[]);
  const ts = raw.slice(tsStart, tsEnd);
  // The schema's own date-time check, so this accepts what it accepts.
  if (!isDateTime(ts)) return undefined;
  const message: Ping = { t: "ping", id: raw.slice(idStart, idEnd), ts };
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
