/**
 * TypeScript shapes of every AWP v0 line (seed 000, SPEC.md sections 6-10,
 * and the presence/mirror/private extensions of NOTES.md), plus the
 * protocol constants other modules dispatch on.
 *
 * Lines on the wire are open objects: receivers ignore fields they do not
 * know. These types list the known fields only; parsed lines may carry more.
 *
 * @module
 */

import type { Grant } from "./grant.ts";

export type { Grant };

/** The protocol major version this package speaks (hello `v`). */
export const PROTOCOL_VERSION = 0;

/**
 * The sixteen message types, in the order of the schema reference.
 *
 * @example
 * ```ts
 * import { MESSAGE_TYPES } from "./types.ts";
 * console.log(MESSAGE_TYPES.includes("msg")); // true
 * ```
 */
export const MESSAGE_TYPES = [
  "hello",
  "auth",
  "resume",
  "state",
  "msg",
  "ack",
  "chunk",
  "ping",
  "pong",
  "bye",
  "err",
  "grant",
  "introduce",
  "presence",
  "mirror",
  "private",
] as const;

/** One of the `t` values of {@linkcode MESSAGE_TYPES}. */
export type MessageType = typeof MESSAGE_TYPES[number];

/**
 * The error codes of SPEC section 9.7.
 *
 * @example
 * ```ts
 * import { ERROR_CODES } from "./types.ts";
 * console.log(ERROR_CODES.length); // 8
 * ```
 */
export const ERROR_CODES = [
  "bad_frame",
  "version",
  "auth",
  "unsupported",
  "forbidden",
  "blob_refused",
  "too_large",
  "internal",
] as const;

/** One of {@linkcode ERROR_CODES}. */
export type ErrorCode = typeof ERROR_CODES[number];

/**
 * Error codes after which the sender closes the connection (section 9.7;
 * too_large per NOTES.md item 9).
 *
 * @example
 * ```ts
 * import { CLOSING_ERROR_CODES } from "./types.ts";
 * console.log(CLOSING_ERROR_CODES.has("forbidden")); // false
 * ```
 */
export const CLOSING_ERROR_CODES: ReadonlySet<string> = new Set<string>([
  "bad_frame",
  "version",
  "auth",
  "too_large",
]);

/**
 * Content lines: they go through the outbox and count as seen in resume
 * (NOTES.md item 2, plus mirror, which is reliable like msg).
 *
 * @example
 * ```ts
 * import { CONTENT_TYPES } from "./types.ts";
 * console.log(CONTENT_TYPES.has("ack")); // false
 * ```
 */
export const CONTENT_TYPES: ReadonlySet<string> = new Set<string>([
  "msg",
  "state",
  "chunk",
  "introduce",
  "mirror",
]);

/**
 * Types a peer must not send or accept before both auth lines verified.
 *
 * @example
 * ```ts
 * import { PRE_AUTH_FORBIDDEN } from "./types.ts";
 * console.log(PRE_AUTH_FORBIDDEN.has("ping")); // false
 * ```
 */
export const PRE_AUTH_FORBIDDEN: ReadonlySet<string> = new Set<string>([
  "msg",
  "state",
  "ack",
  "chunk",
  "resume",
  "grant",
  "introduce",
]);

/**
 * Fields every line carries (section 6).
 *
 * @example
 * ```ts
 * import type { Envelope } from "./types.ts";
 * const e: Envelope = { t: "ping", id: "01J9", ts: "2026-01-01T00:00:00.000Z" };
 * console.log(e.t);
 * ```
 */
export interface Envelope {
  /** Message type. */
  t: string;
  /** Unique per sender, increasing in send order. */
  id: string;
  /** RFC 3339 UTC timestamp. */
  ts: string;
  /** Thread id; required for msg, state, ack, mirror, private. */
  th?: string;
  /** Id of the message this one answers. */
  re?: string;
}

/** First line of each side (section 7.1). */
export interface Hello extends Envelope {
  /** Message type, always "hello". */
  t: "hello";
  /** Protocol major version. */
  v: number;
  /** `ed25519:` + 43 base64url chars. */
  key: string;
  /** 32 random bytes, base64url. */
  nonce: string;
  /** "harness@host" by convention. */
  name?: string;
  /** Families beyond chat and resume: blob, grant, introduce, extensions. */
  caps?: string[];
  /** Free text, unauthenticated until auth. */
  about?: string;
  /** Extension: where the sender can be reached again. */
  addr?: string;
  /** Extension: keys of hosts this agent mirrors to. */
  shares?: string[];
}

/** Proof of key possession (section 7.2). */
export interface Auth extends Envelope {
  /** Message type, always "auth". */
  t: "auth";
  /** Ed25519 signature over the auth transcript, base64url. */
  sig: string;
  /** Grants the sender presents. */
  grants?: Grant[];
}

/** What the sender has seen, per thread (section 9.5). */
export interface Resume extends Envelope {
  /** Message type, always "resume". */
  t: "resume";
  /** Thread id → last content id durably received. */
  seen: Record<string, string>;
}

/** A thread's soft state (section 8.1). */
export interface State extends Envelope {
  /** Message type, always "state". */
  t: "state";
  /** Thread id. */
  th: string;
  /** open, working, waiting, done, failed, closed, or others. */
  state: string;
  /** Why, for example why it failed. */
  note?: string;
}

/** Text, markdown by convention. */
export interface TextPart {
  /** Part kind. */
  k: "text";
  /** The text. */
  text: string;
}

/** Code without the fence. */
export interface CodePart {
  /** Part kind. */
  k: "code";
  /** The text. */
  text: string;
  /** Language, as after a code fence. */
  lang?: string;
}

/** Inline JSON. */
export interface DataPart {
  /** Part kind. */
  k: "data";
  /** Any JSON value. */
  data: unknown;
  /** Media type. */
  mime?: string;
}

/** Reference to a blob carried by chunks with the same ref. */
export interface BlobPart {
  /** Part kind. */
  k: "blob";
  /** Blob name, as its chunks carry it. */
  ref: string;
  /** Bytes before encoding. */
  size: number;
  /** Name. */
  name?: string;
  /** Media type. */
  mime?: string;
}

/**
 * One piece of a msg, selected by `k`.
 *
 * @example
 * ```ts
 * import type { Part } from "./types.ts";
 * const p: Part = { k: "text", text: "hi" };
 * console.log(p.k);
 * ```
 */
export type Part = TextPart | CodePart | DataPart | BlobPart;

/** One turn in a thread (section 9.1). */
export interface Msg extends Envelope {
  /** Message type, always "msg". */
  t: "msg";
  /** Thread id. */
  th: string;
  /** The thread's title, on its first message. */
  subject?: string;
  /** The pieces, in order. */
  parts: Part[];
}

/** Durable receipt of the msg or state named by `re` (section 9.2). */
export interface Ack extends Envelope {
  /** Message type, always "ack". */
  t: "ack";
  /** Thread id. */
  th: string;
  /** Id of the message this one answers. */
  re: string;
}

/** Part of a blob (section 9.3). */
export interface Chunk extends Envelope {
  /** Message type, always "chunk". */
  t: "chunk";
  /** The blob's name. */
  ref: string;
  /** Index from 0. */
  n: number;
  /** True on the final chunk. */
  last: boolean;
  /** Standard base64. */
  data: string;
}

/** Liveness probe (section 9.4). */
export interface Ping extends Envelope {
  /** Message type, always "ping". */
  t: "ping";
}

/** Answer to the ping named by `re`. */
export interface Pong extends Envelope {
  /** Message type, always "pong". */
  t: "pong";
  /** Id of the message this one answers. */
  re: string;
}

/** Graceful close (section 9.6). */
export interface Bye extends Envelope {
  /** Message type, always "bye". */
  t: "bye";
  /** Why, for the log. */
  reason?: string;
}

/** Problem report (section 9.7). */
export interface Err extends Envelope {
  /** Message type, always "err". */
  t: "err";
  /** Error code. */
  code: ErrorCode;
  /** Human readable detail. */
  detail?: string;
  /** The blob a blob_refused is about. */
  ref?: string;
}

/** A grant delivered after the handshake (section 10.3). */
export interface GrantMsg extends Envelope {
  /** Message type, always "grant". */
  t: "grant";
  /** The grant object. */
  grant: Grant;
}

/** The peer an introduce is about (section 10.4). */
export interface IntroPeer {
  /** `ed25519:` + 43 base64url chars. */
  key: string;
  /** Name. */
  name?: string;
  /** Where it listens; a hint, the key is the identity. */
  address?: string;
}

/** Introduces another peer, with a grant from the introducer (10.4). */
export interface Introduce extends Envelope {
  /** Message type, always "introduce". */
  t: "introduce";
  /** The introduced peer. */
  peer: IntroPeer;
  /** The grant object. */
  grant?: Grant;
}

/** One peer listed in a presence document. */
export interface PresencePeer {
  /** `ed25519:` + 43 base64url chars. */
  key: string;
  /** Name. */
  name?: string;
  /** Connected right now. */
  up?: boolean;
  /** Last round trip in ms, 0 if unknown. */
  rtt?: number;
}

/** One thread listed in a presence document. */
export interface PresenceThread {
  /** Thread id. */
  th: string;
  /** The other party's key. */
  peer: string;
  /** Thread subject. */
  subject?: string;
  /** The origin's state. */
  mine?: string;
  /** The peer's state, as last heard. */
  theirs?: string;
  /** RFC 3339. */
  updated?: string;
  /** Unread messages. */
  unread?: number;
}

/** A signed presence document (extension, NOTES.md "Presence gossip"). */
export interface Presence {
  /** Key of the agent described and signer. */
  origin: string;
  /** Name. */
  name?: string;
  /** About text, as in hello. */
  about?: string;
  /** Implementation version. */
  version?: string;
  /** Agent harness. */
  harness?: string;
  /** Model, as reported. */
  model?: string;
  /** Hostname. */
  host?: string;
  /** Keys of hosts it mirrors to. */
  shares?: string[];
  /** RFC 3339, to 30 seconds. */
  active?: string;
  /** Blocked waiting for a message. */
  waiting?: boolean;
  /** Increases with every document the origin signs. */
  seq: number;
  /** When signed, RFC 3339. */
  ts: string;
  /** The origin's peers. */
  peers?: PresencePeer[];
  /** The origin's threads. */
  threads?: PresenceThread[];
  /** Queued, unacked messages. */
  outbox?: number;
  /** Unread messages. */
  unread?: number;
  /** The origin's signature, base64url. */
  sig: string;
}

/** Extension: carries one presence document, per hop. */
export interface PresenceMsg extends Envelope {
  /** Message type, always "presence". */
  t: "presence";
  /** The signed document, verbatim. */
  doc: Presence;
  /** Relays passed through. */
  hops: number;
}

/** Extension: one mirrored line of thread `th`, or a withdraw. */
export interface Mirror extends Envelope {
  /** Message type, always "mirror". */
  t: "mirror";
  /** Thread id. */
  th: string;
  /** The other party's key. */
  of: string;
  /** The other party's name. */
  of_name?: string;
  /** Thread subject. */
  subject?: string;
  /** "out": the sender wrote `line`; "in": the other party did. */
  dir?: "out" | "in";
  /** The original line, verbatim. */
  line?: Msg | State;
  /** Forget the mirrored thread. */
  withdraw?: boolean;
}

/** Extension: keep thread `th` out of what is shared with hosts. */
export interface Private extends Envelope {
  /** Message type, always "private". */
  t: "private";
  /** Thread id. */
  th: string;
}

/**
 * Any known AWP line, discriminated by `t`.
 *
 * @example
 * ```ts
 * import type { Message } from "./types.ts";
 * function threadOf(m: Message): string | undefined {
 *   return m.t === "msg" ? m.th : m.th;
 * }
 * console.log(threadOf({ t: "ping", id: "1", ts: "2026-01-01T00:00:00Z" }));
 * ```
 */
export type Message =
  | Hello
  | Auth
  | Resume
  | State
  | Msg
  | Ack
  | Chunk
  | Ping
  | Pong
  | Bye
  | Err
  | GrantMsg
  | Introduce
  | PresenceMsg
  | Mirror
  | Private;
