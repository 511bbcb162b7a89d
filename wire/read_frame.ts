/**
 * The edge of the receive path: one line's bytes become a typed
 * {@link Frame}, parsed and schema-checked once. Everything after (the
 * connection's chart, the supervisor, the peer) takes the frame and never
 * parses or validates the line again.
 *
 * @module
 */

import { decodeBase64 } from "./base64.ts";
import { splitChunkLine } from "./chunk_line.ts";
import { parseLine } from "./parse.ts";
import type { Message } from "./types.ts";
import { validateMessage } from "./validate.ts";

/** One received line, parsed and checked once. */
export interface Frame {
  /**
   * The parsed line. Typed as the protocol's messages; it is schema-valid
   * only when {@link Frame.invalid} is absent (an unknown type is checked
   * as an envelope only, and is the chart's to ignore).
   */
  message: Message;
  /**
   * The line's exact text, without its newline, kept for what needs the
   * bytes as sent: the traffic log (`store.receive`) and presence relaying.
   * For a chunk: the line without its data (see {@link Frame.bytes}).
   */
  raw: string;
  /**
   * For a chunk: its data, decoded (and so checked) once; the text is
   * dropped then (`message.data` is empty), so a batch in flight holds each
   * chunk once.
   */
  bytes?: Uint8Array;
  /** The line's length on the wire, in bytes. */
  size: number;
  /** The first schema error, when the line fails its schema. */
  invalid?: string;
}

/** A frame, or why the line is a bad frame (one line). */
export type FrameResult =
  | { ok: true; frame: Frame }
  | { ok: false; detail: string };

/**
 * Parses and validates one line (bytes without the newline). A line that
 * is not a JSON object with a string `t` is a bad frame; one that fails its
 * schema is still a frame, with `invalid` set: what that means depends on
 * the connection's state and the type (the chart decides).
 *
 * @example
 * ```ts
 * import { readFrame } from "./read_frame.ts";
 * const line = '{"t":"ping","id":"01J0000000000000000000000A","ts":"2026-01-01T00:00:00.000Z"}';
 * const r = readFrame(new TextEncoder().encode(line));
 * console.log(r.ok && r.frame.message.t, r.ok && r.frame.invalid); // "ping" undefined
 * ```
 */
export function readFrame(bytes: Uint8Array): FrameResult {
  // A chunk line is split from its data without a line-sized string.
  const split = splitChunkLine(bytes);
  const parsed = split
    ? { ok: true as const, message: split.message, raw: split.raw }
    : parseLine(bytes);
  if (!parsed.ok) return { ok: false, detail: parsed.detail };
  const message = parsed.message;
  // A chunk's data is decoded here, once: that checks it faster than the
  // schema's pattern over ~350 KB, and the sink takes the bytes.
  const data = message.t === "chunk"
    ? split?.bytes ?? decodedChunk(message)
    : undefined;
  // The bytes are checked; the schema sees the line without them.
  if (data) message.data = "";
  const valid = validateMessage(message);
  const frame: Frame = {
    message: message as unknown as Message,
    raw: split ? split.raw : data ? JSON.stringify(message) : parsed.raw,
    size: bytes.length,
  };
  if (data) frame.bytes = data;
  if (!valid.ok) frame.invalid = valid.errors[0] ?? "schema";
  return { ok: true, frame };
}

/**
 * A chunk's data decoded, when it is standard base64 (what the schema's
 * pattern allows and more: the padding is right too); else undefined, and
 * the schema decides.
 */
function decodedChunk(
  message: Record<string, unknown>,
): Uint8Array | undefined {
  const data = message.data;
  if (typeof data !== "string" || data.includes("-") || data.includes("_")) {
    return undefined;
  }
  try {
    return decodeBase64(data);
  } catch {
    return undefined;
  }
}
