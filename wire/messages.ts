/**
 * Constructors for every AWP line and part. They fill in `t` and, unless
 * given, `ts` (now); the caller supplies `id` so that ids come from one
 * increasing generator per sender. Optional fields left `undefined` are
 * dropped, and the envelope is written first so lines read well in logs.
 *
 * @module
 */

import { timestamp } from "./time.ts";
import type {
  Ack,
  Auth,
  BlobPart,
  Bye,
  Chunk,
  CodePart,
  DataPart,
  Envelope,
  Err,
  GrantMsg,
  Hello,
  Introduce,
  Mirror,
  Msg,
  Ping,
  Pong,
  PresenceMsg,
  Private,
  Resume,
  State,
  TextPart,
} from "./types.ts";

/** The fields a constructor takes: everything but `t`, with `ts` optional. */
export type MessageFields<X extends Envelope> = Omit<X, "t" | "ts"> & {
  ts?: string;
};

const ENVELOPE_KEYS = ["id", "ts", "th", "re"] as const;

function build<X extends Envelope>(
  t: X["t"],
  fields: MessageFields<X>,
): X {
  const source = fields as unknown as Record<string, unknown>;
  if (typeof source.id !== "string" || source.id === "") {
    throw new TypeError(`create ${t}: id must be a non-empty string`);
  }
  const out: Record<string, unknown> = { t, id: source.id };
  out.ts = source.ts ?? timestamp();
  if (source.th !== undefined) out.th = source.th;
  if (source.re !== undefined) out.re = source.re;
  for (const key in source) {
    if (key === "t" || (ENVELOPE_KEYS as readonly string[]).includes(key)) {
      continue;
    }
    const value = source[key];
    if (value !== undefined) out[key] = value;
  }
  return out as X;
}

/**
 * Builds a hello line.
 *
 * @example
 * ```ts
 * import { createHello } from "./messages.ts";
 * const key = "ed25519:" + "A".repeat(43);
 * console.log(createHello({ id: "01", v: 0, key, nonce: "bm9uY2U" }).t); // "hello"
 * ```
 */
export function createHello(fields: MessageFields<Hello>): Hello {
  return build<Hello>("hello", fields);
}

/**
 * Builds an auth line.
 *
 * @example
 * ```ts
 * import { createAuth } from "./messages.ts";
 * console.log(createAuth({ id: "02", sig: "c2ln" }).sig); // "c2ln"
 * ```
 */
export function createAuth(fields: MessageFields<Auth>): Auth {
  return build<Auth>("auth", fields);
}

/**
 * Builds a resume line.
 *
 * @example
 * ```ts
 * import { createResume } from "./messages.ts";
 * console.log(createResume({ id: "03", seen: {} }).seen); // {}
 * ```
 */
export function createResume(fields: MessageFields<Resume>): Resume {
  return build<Resume>("resume", fields);
}

/**
 * Builds a state line.
 *
 * @example
 * ```ts
 * import { createState } from "./messages.ts";
 * console.log(createState({ id: "04", th: "t1", state: "working" }).state);
 * ```
 */
export function createState(fields: MessageFields<State>): State {
  return build<State>("state", fields);
}

/**
 * Builds a msg line.
 *
 * @example
 * ```ts
 * import { createMsg, textPart } from "./messages.ts";
 * const m = createMsg({ id: "05", th: "t1", parts: [textPart("hi")] });
 * console.log(m.parts.length); // 1
 * ```
 */
export function createMsg(fields: MessageFields<Msg>): Msg {
  return build<Msg>("msg", fields);
}

/**
 * Builds an ack line.
 *
 * @example
 * ```ts
 * import { createAck } from "./messages.ts";
 * console.log(createAck({ id: "06", th: "t1", re: "05" }).re); // "05"
 * ```
 */
export function createAck(fields: MessageFields<Ack>): Ack {
  return build<Ack>("ack", fields);
}

/**
 * Builds a chunk line.
 *
 * @example
 * ```ts
 * import { createChunk } from "./messages.ts";
 * const c = createChunk({ id: "07", ref: "b1", n: 0, last: true, data: "aGk=" });
 * console.log(c.last); // true
 * ```
 */
export function createChunk(fields: MessageFields<Chunk>): Chunk {
  return build<Chunk>("chunk", fields);
}

/**
 * Builds a ping line.
 *
 * @example
 * ```ts
 * import { createPing } from "./messages.ts";
 * console.log(createPing({ id: "08" }).t); // "ping"
 * ```
 */
export function createPing(fields: MessageFields<Ping>): Ping {
  return build<Ping>("ping", fields);
}

/**
 * Builds a pong line answering the ping `re`.
 *
 * @example
 * ```ts
 * import { createPong } from "./messages.ts";
 * console.log(createPong({ id: "09", re: "08" }).re); // "08"
 * ```
 */
export function createPong(fields: MessageFields<Pong>): Pong {
  return build<Pong>("pong", fields);
}

/**
 * Builds a bye line.
 *
 * @example
 * ```ts
 * import { createBye } from "./messages.ts";
 * console.log(createBye({ id: "10", reason: "done" }).reason); // "done"
 * ```
 */
export function createBye(fields: MessageFields<Bye>): Bye {
  return build<Bye>("bye", fields);
}

/**
 * Builds an err line.
 *
 * @example
 * ```ts
 * import { createErr } from "./messages.ts";
 * console.log(createErr({ id: "11", code: "unsupported" }).code);
 * ```
 */
export function createErr(fields: MessageFields<Err>): Err {
  return build<Err>("err", fields);
}

/**
 * Builds a grant line carrying one grant object.
 *
 * @example
 * ```ts
 * import { createGrantMsg } from "./messages.ts";
 * const k = "ed25519:" + "A".repeat(43);
 * const grant = {
 *   iss: k, sub: k, caps: ["exec"], exp: "2030-01-01T00:00:00Z", nonce: "bg", sig: "cw",
 * };
 * console.log(createGrantMsg({ id: "12", grant }).t); // "grant"
 * ```
 */
export function createGrantMsg(fields: MessageFields<GrantMsg>): GrantMsg {
  return build<GrantMsg>("grant", fields);
}

/**
 * Builds an introduce line.
 *
 * @example
 * ```ts
 * import { createIntroduce } from "./messages.ts";
 * const peer = { key: "ed25519:" + "B".repeat(43), address: "tcp:10.0.0.2:7000" };
 * console.log(createIntroduce({ id: "13", peer }).peer.address);
 * ```
 */
export function createIntroduce(fields: MessageFields<Introduce>): Introduce {
  return build<Introduce>("introduce", fields);
}

/**
 * Builds a presence line (extension) around a signed document.
 *
 * @example
 * ```ts
 * import { createPresenceMsg } from "./messages.ts";
 * const doc = {
 *   origin: "ed25519:" + "C".repeat(43), seq: 1, ts: "2026-01-01T00:00:00Z", sig: "cw",
 * };
 * console.log(createPresenceMsg({ id: "14", doc, hops: 0 }).hops); // 0
 * ```
 */
export function createPresenceMsg(
  fields: MessageFields<PresenceMsg>,
): PresenceMsg {
  return build<PresenceMsg>("presence", fields);
}

/**
 * Builds a mirror line (extension).
 *
 * @example
 * ```ts
 * import { createMirror } from "./messages.ts";
 * const of = "ed25519:" + "D".repeat(43);
 * console.log(createMirror({ id: "15", th: "t1", of, withdraw: true }).withdraw);
 * ```
 */
export function createMirror(fields: MessageFields<Mirror>): Mirror {
  return build<Mirror>("mirror", fields);
}

/**
 * Builds a private line (extension).
 *
 * @example
 * ```ts
 * import { createPrivate } from "./messages.ts";
 * console.log(createPrivate({ id: "16", th: "t1" }).th); // "t1"
 * ```
 */
export function createPrivate(fields: MessageFields<Private>): Private {
  return build<Private>("private", fields);
}

/**
 * A text part.
 *
 * @example
 * ```ts
 * import { textPart } from "./messages.ts";
 * console.log(textPart("hello")); // { k: "text", text: "hello" }
 * ```
 */
export function textPart(text: string): TextPart {
  return { k: "text", text };
}

/**
 * A code part, with its language when known.
 *
 * @example
 * ```ts
 * import { codePart } from "./messages.ts";
 * console.log(codePart("x := 1", "go").lang); // "go"
 * ```
 */
export function codePart(text: string, lang?: string): CodePart {
  return lang === undefined ? { k: "code", text } : { k: "code", text, lang };
}

/**
 * A data part: inline JSON, with its media type when given.
 *
 * @example
 * ```ts
 * import { dataPart } from "./messages.ts";
 * console.log(dataPart({ a: 1 }, "application/json").mime);
 * ```
 */
export function dataPart(data: unknown, mime?: string): DataPart {
  return mime === undefined ? { k: "data", data } : { k: "data", data, mime };
}

/**
 * A blob part naming a blob sent in chunks.
 *
 * @example
 * ```ts
 * import { blobPart } from "./messages.ts";
 * console.log(blobPart({ ref: "b1", size: 3, name: "a.txt" }).k); // "blob"
 * ```
 */
export function blobPart(
  fields: { ref: string; size: number; name?: string; mime?: string },
): BlobPart {
  const part: BlobPart = { k: "blob", ref: fields.ref, size: fields.size };
  if (fields.name !== undefined) part.name = fields.name;
  if (fields.mime !== undefined) part.mime = fields.mime;
  return part;
}
