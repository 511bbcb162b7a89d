/**
 * Pings, pongs and acks without the generic line path. A quiet
 * connection's only traffic is the dialer's ping every 30 s and the
 * listener's pong, and at 10,000 connections the generic path (JSON parse,
 * schema check, frame object, JSON stringify, a runtime encode call) was
 * most of the idle listener's work per ping; a sender's acks come back one
 * per msg (a resume's 1,000 acks took ~33 µs each, bench/README "resume3").
 * A ping `{"t":"ping","id":"…","ts":"…"}` or an ack
 * `{"t":"ack","id":"…","ts":"…","th":"…","re":"…"}` in exactly that shape,
 * with plain ASCII strings, is read here; any other line (extra fields,
 * escapes, other key order) takes the generic path, which decides as
 * before.
 *
 * @module
 */

import { isDateTime } from "./schema_formats.ts";
import type { Frame } from "./read_frame.ts";
import type { Ack, Ping } from "./types.ts";

const QUOTE = 0x22;
const CLOSE = 0x7d;
const BACKSLASH = 0x5c;
/** `{"t":"` : the bytes before the type of every plain line. */
const TYPE_AT = 6;

function bytesOf(text: string): Uint8Array {
  return Uint8Array.from(text, (c) => c.charCodeAt(0));
}

/** A plain line's shape: its head up to its first value, then its fields. */
interface PlainShape {
  /** `{"t":"<type>","<first>":"` as bytes. */
  head: Uint8Array;
  /** `","<name>":"` as bytes, for each field after the first. */
  between: Uint8Array[];
  /** The fields' names, in order. */
  names: string[];
}

function plainShape(type: string, names: string[]): PlainShape {
  return {
    head: bytesOf(`{"t":"${type}","${names[0]}":"`),
    between: names.slice(1).map((name) => bytesOf(`","${name}":"`)),
    names,
  };
}

const PING = plainShape("ping", ["id", "ts"]);
const ACK = plainShape("ack", ["id", "ts", "th", "re"]);

/**
 * A ping or ack line (bytes without the newline) in the plain shape,
 * schema-valid (`id` non-empty, `ts` an RFC 3339 date-time), as the
 * {@link Frame} that `readFrame` would make of it; else undefined (the
 * generic path then reads it, and refuses it if it must).
 *
 * @example
 * ```ts
 * import { readPlainLine } from "./plain_line.ts";
 * const enc = new TextEncoder();
 * const line = '{"t":"ping","id":"01J0000000000000000000000A","ts":"2026-01-01T00:00:00.000Z"}';
 * const ping = readPlainLine(enc.encode(line));
 * console.log(ping?.message.id, ping?.raw === line); // "01J0000000000000000000000A" true
 * const ack = readPlainLine(enc.encode('{"t":"ack","id":"02","ts":"2026-01-01T00:00:00Z","th":"t1","re":"01"}'));
 * console.log(ack?.message.t); // "ack"
 * console.log(readPlainLine(enc.encode('{"t":"ping","id":""}'))); // undefined
 * ```
 */
export function readPlainLine(bytes: Uint8Array): Frame | undefined {
  const type = bytes[TYPE_AT];
  const shape = type === 0x70 ? PING : type === 0x61 ? ACK : undefined;
  if (shape === undefined) return undefined;
  const ends = fieldEnds(bytes, shape);
  if (ends === undefined) return undefined;
  // One string for the line; its fields are slices of it.
  const raw = String.fromCharCode.apply(null, bytes as unknown as number[]);
  const values: string[] = [];
  for (let i = 0; i < ends.length; i += 2) {
    values.push(raw.slice(ends[i], ends[i + 1]));
  }
  const [id, ts] = values;
  // The schema's own date-time check, so this accepts what it accepts.
  if (id === "" || !isDateTime(ts)) return undefined;
  const message: Ping | Ack = shape === PING
    ? { t: "ping", id, ts }
    : { t: "ack", id, ts, th: values[2], re: values[3] };
  return { message, raw, size: bytes.length };
}

/**
 * Where each field's value starts and ends (pairs of indexes) in a line of
 * exactly `shape`, or undefined.
 */
function fieldEnds(bytes: Uint8Array, shape: PlainShape): number[] | undefined {
  if (!startsWith(bytes, shape.head, 0)) return undefined;
  const ends: number[] = [];
  let from = shape.head.length;
  for (let i = 0; i < shape.names.length; i++) {
    const end = plainStringEnd(bytes, from);
    if (end < 0) return undefined;
    ends.push(from, end);
    if (i + 1 < shape.names.length) {
      const between = shape.between[i];
      if (!startsWith(bytes, between, end)) return undefined;
      from = end + between.length;
    } else if (end + 2 !== bytes.length || bytes[end + 1] !== CLOSE) {
      // The last string's quote, then the object's brace, then the end.
      return undefined;
    }
  }
  return ends;
}

function startsWith(bytes: Uint8Array, part: Uint8Array, at: number): boolean {
  if (at + part.length > bytes.length) return false;
  for (let i = 0; i < part.length; i++) {
    if (bytes[at + i] !== part[i]) return false;
  }
  return true;
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
 * import { plainPongLine } from "./plain_line.ts";
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
