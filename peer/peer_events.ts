/**
 * The events a {@link Peer} reports, and the small async queue that hands
 * them to `for await` loops.
 *
 * Every event carries `peer` (the remote key it concerns) and `ts` (when it
 * happened here, RFC 3339).
 *
 * @module
 */

import type { Grant, Msg, Part, State } from "../wire/types.ts";
import type { RequestInfo } from "../profile/request_server.ts";
import type { ServeRecord } from "../profile/profile.ts";

export type { RequestInfo } from "../profile/request_server.ts";

/** Fields every event has. */
export interface PeerEventBase {
  /** The remote peer's key. */
  peer: string;
  /** When it happened here, RFC 3339 UTC with milliseconds. */
  ts: string;
}

/** A received blob as the msg naming it resolved it. */
export interface ReceivedBlob {
  /** The blob's ref (the sender's name for it). */
  ref: string;
  /** The file name the blob part gives. */
  name?: string;
  /** The mime type the blob part gives. */
  mime?: string;
  /** Size from the blob part. */
  size: number;
  /** complete: at `path`; refused: over our limit; failed/missing: not here. */
  status: "complete" | "refused" | "failed" | "missing";
  /** The received file, under the home's `blobs/` directory. */
  path?: string;
  /** Lowercase hex sha256 of the received file. */
  sha256?: string;
  /** Why it was refused or failed. */
  detail?: string;
}

/** A connection to `peer` is open (after its resume). */
export interface ConnectedEvent extends PeerEventBase {
  /** The event's kind. */
  type: "connected";
  /** The remote's hello.name. */
  name?: string;
  /** The remote's hello.about. */
  about?: string;
  /** The remote's hello.caps. */
  caps: string[];
  /** We dialed it. */
  dialed: boolean;
  /** The socket's remote address (`tcp:HOST:PORT` or `unix:PATH`). */
  remoteAddr: string;
}

/** A protocol line as a {@link LineEvent} carries it: a JSON object with `t`. */
export interface LineMessage {
  /** The message type. */
  t: string;
  /** The line's other fields, as on the wire. */
  [field: string]: unknown;
}

/**
 * A protocol line went out or came in after the handshake (only with
 * `Peer.open({ lineEvents: true })`): every line but hello, auth and
 * resume, exactly as on the wire (same id and ts), except that a chunk's
 * `data` is removed.
 */
export interface LineEvent extends PeerEventBase {
  /** The event's kind. */
  type: "line";
  /** `in`: received from `peer`; `out`: written to it. */
  dir: "in" | "out";
  /** The parsed line (a chunk without its data). */
  message: LineMessage;
}

/** The open connection to `peer` closed. */
export interface DisconnectedEvent extends PeerEventBase {
  /** The event's kind. */
  type: "disconnected";
  /** Why it closed (bye, timeout, error...). */
  reason: string;
}

/** A msg arrived (in thread order), its blobs resolved. */
export interface PeerMessageEvent extends PeerEventBase {
  /** The event's kind. */
  type: "message";
  /** The msg's id. */
  id: string;
  /** The thread it belongs to. */
  th: string;
  /** The thread's subject, when the msg gives one. */
  subject?: string;
  /** The id this msg answers. */
  re?: string;
  /** The text parts joined with newlines. */
  text: string;
  /** Every part, as received. */
  parts: Part[];
  /** One entry per blob part, in order. */
  blobs: ReceivedBlob[];
  /** The msg line as received. */
  message: Msg;
  /**
   * The coding-agent profile requests the msg carries (exec, fs:read,
   * fs:write, admin), each marked allowed (the sender holds the cap) and
   * served (this peer performs it and sends the result); absent when none
   * and on events replayed by `events({ after })` (never served twice).
   */
  requests?: RequestInfo[];
  /**
   * The traffic-log position the msg was committed under: strictly
   * increasing across received msgs and states, the cursor to give back as
   * `events({ after })` (0 only from a store that reports no seq).
   */
  seq: number;
}

/** The remote set its soft state of a thread. */
export interface StateEvent extends PeerEventBase {
  /** The event's kind. */
  type: "state";
  /** The state line's id. */
  id: string;
  /** The thread. */
  th: string;
  /** The remote's state word (open, working, waiting, done, failed, closed...). */
  state: string;
  /** The remote's note on it. */
  note?: string;
  /** The traffic-log position, as {@link PeerMessageEvent.seq}. */
  seq: number;
}

/** The remote acked one of our lines. */
export interface AckedEvent extends PeerEventBase {
  /** The event's kind. */
  type: "acked";
  /** The id of our line. */
  id: string;
  /** The thread of the acked line. */
  th?: string;
}

/** A blob finished: received (dir in) or refused by the remote (dir out). */
export interface BlobEvent extends PeerEventBase, ReceivedBlob {
  /** The event's kind. */
  type: "blob";
  /** `in`: we received it; `out`: ours, refused by the remote. */
  dir: "in" | "out";
  /** The thread it came with. */
  th?: string;
}

/** The remote sent us a grant. */
export interface GrantEvent extends PeerEventBase {
  /** The event's kind. */
  type: "grant";
  /** The grant as received. */
  grant: Grant;
  /** Signature, shape and expiry check, and `sub` is our key. */
  valid: boolean;
  /** Why it is not valid. */
  reason?: string;
}

/** The remote introduced another peer to us. */
export interface IntroducedEvent extends PeerEventBase {
  /** The event's kind. */
  type: "introduced";
  /** The introduced peer's key. */
  key: string;
  /** The introduced peer's name. */
  name?: string;
  /** Where the introduced peer can be reached. */
  address?: string;
  /** The grant that came with it, if any and valid. */
  grant?: Grant;
}

/** Something went wrong: an `err` from the remote, or locally. */
export interface PeerErrorEvent extends PeerEventBase {
  /** The event's kind. */
  type: "error";
  /** A protocol error code (from the remote) or a local kind (dial, handler, blob). */
  code: string;
  /** What went wrong, one line. */
  detail: string;
  /** True when the remote sent it. */
  remote: boolean;
  /** The blob ref it concerns. */
  ref?: string;
  /** The id of the line it answers. */
  re?: string;
}

/** The remote said bye. */
export interface ByeEvent extends PeerEventBase {
  /** The event's kind. */
  type: "bye";
  /** The reason the remote gave. */
  reason?: string;
}

/**
 * A blob transfer moved: emitted by its actor on every chunk and status
 * change, for progress bars and the inspector.
 */
export interface ProgressEvent extends PeerEventBase {
  /** The event's kind. */
  type: "progress";
  /** The blob's ref. */
  ref: string;
  /** `in` for a blob we receive, `out` for one we send. */
  dir: "in" | "out";
  /** Bytes received or sent so far. */
  bytes: number;
  /** Total size in bytes; -1 while unknown (chunks precede the msg). */
  total: number;
  /** Bytes per second over the current run of chunks; 0 when unknown. */
  rate: number;
  /** The transfer's state: queued, sending, awaitingAck, receiving, done, complete, refused or failed. */
  status: string;
  /** The thread of the transfer. */
  th?: string;
  /** The blob's file name. */
  name?: string;
}

/** A key authenticated and was admitted or refused (every decision). */
export interface AdmissionEvent extends PeerEventBase {
  /** The event's kind. */
  type: "admission";
  /** True when admitted. */
  admitted: boolean;
  /** any, allowed, trusted, dialed, grant, or refused. */
  why: string;
  /** Capabilities it holds from the grants it presented. */
  caps: string[];
  /** The refusal detail sent in `err auth`. */
  detail?: string;
}

/** A profile request from `peer` was performed here (the serve log). */
export interface ServedEvent extends PeerEventBase {
  /** The event's kind. */
  type: "served";
  /** The request msg's id. */
  re: string;
  /** The capability used (exec, fs:read, fs:write). */
  cap: string;
  /** The request data, abbreviated. */
  request: string;
  /** True when it succeeded. */
  ok: boolean;
  /** Why it failed. */
  error?: string;
  /** How long it took, in ms. */
  duration_ms: number;
}

/**
 * The presence table changed (`peer` is the document's origin): joined,
 * updated, left, dropped (with `detail`), or published (our own).
 */
export interface PresenceChangeEvent extends PeerEventBase {
  /** The event's kind. */
  type: "presence";
  /** What changed in the table. */
  kind: "joined" | "updated" | "left" | "dropped" | "published";
  /** The agent's name from its document. */
  name?: string;
  /** Why a document was dropped. */
  detail?: string;
}

/** A `mirror` line from sharer `peer` was handled (stored, withdrawn...). */
export interface MirrorEvent extends PeerEventBase {
  /** The event's kind. */
  type: "mirror";
  /** The mirrored thread. */
  th: string;
  /** What was done with the line (stored, withdrawn, refused...). */
  outcome: string;
}

/** Everything {@link Peer.events} yields. */
export type PeerEvent =
  | ConnectedEvent
  | DisconnectedEvent
  | PeerMessageEvent
  | StateEvent
  | AckedEvent
  | BlobEvent
  | GrantEvent
  | IntroducedEvent
  | PeerErrorEvent
  | ByeEvent
  | ProgressEvent
  | AdmissionEvent
  | ServedEvent
  | PresenceChangeEvent
  | MirrorEvent
  | LineEvent;

/**
 * Builds a {@link ServedEvent} from the profile's serve record.
 *
 * @example
 * ```ts
 * import { servedEvent } from "./peer_events.ts";
 * const e = servedEvent({ at: 0, peer: "ed25519:x", re: "m1", cap: "exec", request: "{}", ok: true, duration_ms: 3 }, "2026-01-01T00:00:00.000Z");
 * console.log(e.type, e.cap); // served exec
 * ```
 */
export function servedEvent(record: ServeRecord, ts: string): ServedEvent {
  return {
    type: "served",
    peer: record.peer ?? "",
    ts,
    re: record.re,
    cap: record.cap,
    request: record.request,
    ok: record.ok,
    ...(record.error !== undefined ? { error: record.error } : {}),
    duration_ms: record.duration_ms,
  };
}

/** The text parts of a msg, joined with newlines. */
function textOf(parts: Part[]): string {
  // Most msgs have one part: no arrays on the way.
  if (parts.length === 1) return parts[0].k === "text" ? parts[0].text : "";
  return parts
    .filter((p): p is Extract<Part, { k: "text" }> => p.k === "text")
    .map((p) => p.text)
    .join("\n");
}

/**
 * Builds the {@link PeerMessageEvent} of a received msg (live or replayed).
 *
 * @example
 * ```ts
 * import { messageEvent } from "./peer_events.ts";
 * const m = { t: "msg" as const, id: "m1", ts: "2026-01-01T00:00:00.000Z", th: "t1", parts: [{ k: "text" as const, text: "hi" }] };
 * const e = messageEvent("ed25519:x", m.ts, m, [], 7, []);
 * console.log(e.text, e.seq); // hi 7
 * ```
 */
export function messageEvent(
  peer: string,
  ts: string,
  m: Msg,
  blobs: ReceivedBlob[],
  seq: number,
  requests: RequestInfo[],
): PeerMessageEvent {
  return {
    type: "message",
    peer,
    ts,
    id: m.id,
    th: m.th,
    text: textOf(m.parts),
    parts: m.parts,
    blobs,
    message: m,
    ...(m.subject !== undefined ? { subject: m.subject } : {}),
    ...(m.re !== undefined ? { re: m.re } : {}),
    ...(requests.length > 0 ? { requests } : {}),
    seq,
  };
}

/**
 * Builds the {@link StateEvent} of a received state line (live or replayed).
 *
 * @example
 * ```ts
 * import { stateEvent } from "./peer_events.ts";
 * const m = { t: "state" as const, id: "s1", ts: "2026-01-01T00:00:00.000Z", th: "t1", state: "working" };
 * console.log(stateEvent("ed25519:x", m.ts, m, 8).state); // working
 * ```
 */
export function stateEvent(
  peer: string,
  ts: string,
  m: State,
  seq: number,
): StateEvent {
  return {
    type: "state",
    peer,
    ts,
    id: m.id,
    th: m.th,
    state: m.state,
    ...(m.note !== undefined ? { note: m.note } : {}),
    seq,
  };
}

/**
 * Options of `Peer.events`.
 *
 * @example
 * ```ts
 * import type { EventsOptions } from "./peer_events.ts";
 * const resume: EventsOptions = { after: 42 }; // the last seq handled
 * console.log(resume.after); // 42
 * ```
 */
export interface EventsOptions {
  /**
   * Replay first: every received msg and state the traffic log holds with
   * `seq` greater than this, in seq order, then the live events (none of
   * them twice). Give the `seq` of the last message/state event handled.
   */
  after?: number;
}

/** The `type` of a {@link PeerEvent}. */
export type PeerEventType = PeerEvent["type"];

/**
 * An unbounded async queue: `push` never blocks, `for await` takes items in
 * order and ends after `close` once drained.
 *
 * @example
 * ```ts
 * import { EventQueue } from "./peer_events.ts";
 * const q = new EventQueue<number>();
 * q.push(1);
 * q.push(2);
 * q.close();
 * const got: number[] = [];
 * for await (const n of q) got.push(n);
 * console.log(got); // [1, 2]
 * ```
 */
export class EventQueue<T> implements AsyncIterableIterator<T> {
  #items: T[] = [];
  #waiters: Array<(result: IteratorResult<T, undefined>) => void> = [];
  #closed = false;
  #onReturn?: () => void;

  /** `onReturn` runs once when the consumer stops or the queue closes. */
  constructor(onReturn?: () => void) {
    this.#onReturn = onReturn;
  }

  /** Items waiting to be taken. */
  get size(): number {
    return this.#items.length;
  }

  /** True once closed. */
  get closed(): boolean {
    return this.#closed;
  }

  /** Adds an item (dropped after close). */
  push(item: T): void {
    if (this.#closed) return;
    const waiter = this.#waiters.shift();
    if (waiter) waiter({ value: item, done: false });
    else this.#items.push(item);
  }

  /** Ends the queue: waiting consumers finish once the items are taken. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    for (const waiter of this.#waiters.splice(0)) {
      waiter({ value: undefined, done: true });
    }
    const onReturn = this.#onReturn;
    this.#onReturn = undefined;
    onReturn?.();
  }

  /** The next item; done after close once drained. */
  next(): Promise<IteratorResult<T, undefined>> {
    if (this.#items.length > 0) {
      return Promise.resolve({ value: this.#items.shift()!, done: false });
    }
    if (this.#closed) return Promise.resolve({ value: undefined, done: true });
    return new Promise((resolve) => this.#waiters.push(resolve));
  }

  /** Stops consuming (a `break` out of `for await`): closes and drops the rest. */
  return(): Promise<IteratorResult<T, undefined>> {
    this.#items = [];
    this.close();
    return Promise.resolve({ value: undefined, done: true });
  }

  /** The queue is its own iterator. */
  [Symbol.asyncIterator](): AsyncIterableIterator<T> {
    return this;
  }
}
