/**
 * Pings, pongs and acks without the generic line path. A quiet
 * connection's only traffic is the dialer's ping every 30 s and the
 * listener's pong, and at 10,000 connections the generic path (JSON parse,
 * schema check, frame object, JSON stringify, a runtime encode call) was
 * most of the idle listener's work per ping; a sender's acks come back one
 * per msg (a resume's 1,000 acks took ~33 µs each, bench/README "resume3").
 * A ping or an ack is read here with the runtime's decoder and JSON parser
 * and checked against its schema by hand (no generated validator, no
 * chart): native code, as fast on a process's first line as on its
 * thousandth. (Until resume4 the bytes were matched in JS against the one
 * shape our peers write; that ran in V8's interpreter for a sender's first
 * ~1,000 acks, ~15–40 µs each.) Any other line, or one that fails the
 * check, takes the generic path, which decides as before.
 *
 * @module
 */

import { isDateTime } from "./schema_formats.ts";
import type { Frame } from "./read_frame.ts";
import type { Ack, Ping } from "./types.ts";

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
/** `{"t":"` : the bytes before the type of a line our peers write. */
const TYPE_AT = 6;
const P = 0x70;
const A = 0x61;

// As the generic path decodes (parse.ts): strict UTF-8, a BOM kept (and so
// refused by JSON.parse).
const decoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/** An optional envelope field: absent, or a string. */
function optionalText(value: unknown): boolean {
  return value === undefined || typeof value === "string";
}

/**
 * True when `value` is a ping or an ack its schema accepts: the envelope's
 * `id` non-empty, `ts` an RFC 3339 date-time (the schema's own check), `th`
 * and `re` strings (required for an ack, optional for a ping); other fields
 * are allowed, as the schema allows them.
 *
 * @example
 * ```ts
 * import { isPlainPingOrAck } from "./plain_line.ts";
 * const ts = "2026-01-01T00:00:00.000Z";
 * console.log(isPlainPingOrAck({ t: "ping", id: "1", ts })); // true
 * console.log(isPlainPingOrAck({ t: "ack", id: "2", ts, th: "t1" })); // false (no re)
 * ```
 */
export function isPlainPingOrAck(value: unknown): value is Ping | Ack {
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    return false;
  }
  const { t, id, ts, th, re } = value as Record<string, unknown>;
  if (t !== "ping" && t !== "ack") return false;
  if (typeof id !== "string" || id.length === 0) return false;
  if (typeof ts !== "string") return false;
  if (
    t === "ack" ? typeof th !== "string" || typeof re !== "string" : (
      !optionalText(th) || !optionalText(re)
    )
  ) return false;
  return isDateTime(ts);
}

/**
 * A ping or ack line (bytes without the newline) that its schema accepts,
 * as the {@link Frame} `readFrame` would make of it (the same text, the
 * same parsed message); else undefined (the generic path then reads it,
 * and refuses it if it must). Only a line starting `{"t":"p` or `{"t":"a`
 * is parsed here.
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
  if (type !== P && type !== A) return undefined;
  let raw: string;
  let value: unknown;
  try {
    raw = decoder.decode(bytes);
    value = JSON.parse(raw);
  } catch {
    return undefined;
  }
  if (!isPlainPingOrAck(value)) return undefined;
  return { message: value, raw, size: bytes.length };
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
