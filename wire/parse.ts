/**
 * Turns one received line into a JSON object with a string `t`, or a
 * bad_frame verdict (SPEC section 5). Schema checks are separate
 * (`validate.ts`), so that unknown types can still be ignored politely.
 *
 * @module
 */

/** A parsed line, or why it is a bad frame (detail is one line). */
export type ParseResult =
  | { ok: true; message: Record<string, unknown> & { t: string }; raw: string }
  | { ok: false; code: "bad_frame"; detail: string };

// fatal: reject invalid UTF-8 instead of inserting U+FFFD; ignoreBOM keeps a
// BOM in the text so that JSON.parse rejects it rather than it vanishing.
const decoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

const MAX_DETAIL = 160;

function oneLine(text: string): string {
  // deno-lint-ignore no-control-regex
  const flat = text.replace(/[\u0000-\u001f\u2028\u2029]+/g, " ").trim();
  return flat.length > MAX_DETAIL ? flat.slice(0, MAX_DETAIL) + "…" : flat;
}

function bad(detail: string): ParseResult {
  return { ok: false, code: "bad_frame", detail: oneLine(detail) };
}

function kindOf(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  return typeof value === "object" ? "an object" : `a ${typeof value}`;
}

/**
 * Parses one line (bytes without the newline): strict UTF-8, JSON, an
 * object whose `t` is a string.
 *
 * @example
 * ```ts
 * import { parseLine } from "./parse.ts";
 * const ok = parseLine(new TextEncoder().encode('{"t":"ping","id":"1","ts":"x"}'));
 * console.log(ok.ok && ok.message.t); // "ping"
 * const bad = parseLine(new TextEncoder().encode("[1]"));
 * console.log(!bad.ok && bad.detail); // "line is an array, not a JSON object"
 * ```
 */
export function parseLine(bytes: Uint8Array): ParseResult {
  // One decoder call, even for a short ASCII line: copying its bytes out
  // in JS (`String.fromCharCode.apply`, tried first until resume4) cost a
  // restarted peer ~15 µs a line until V8 optimized it, a few hundred lines
  // in, and ~600 B of garbage a line; the decoder costs about the same warm
  // (bench/README "resume4"). Pings and acks skip this (plain_line.ts).
  let raw: string;
  try {
    raw = decoder.decode(bytes);
  } catch {
    return bad("line is not valid UTF-8");
  }
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch (error) {
    const why = error instanceof Error ? error.message : String(error);
    return bad(`line is not JSON: ${why}`);
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    return bad(`line is ${kindOf(value)}, not a JSON object`);
  }
  const t = (value as { t?: unknown }).t;
  if (t === undefined) return bad("line has no t field");
  if (typeof t !== "string") {
    return bad(`line's t is ${kindOf(t)}, not a string`);
  }
  return {
    ok: true,
    message: value as Record<string, unknown> & { t: string },
    raw,
  };
}
