/**
 * The statecharts of blob transfers (SPEC 9.3), one actor per (peer, ref):
 *
 * - outgoing: `queued → sending → awaitingAck → done | refused | failed`.
 *   Chunks sit in the outbox before the msg naming the blob (NOTES item 1);
 *   the connection reports each chunk it writes, and the ack of that msg
 *   ends the transfer. An `err blob_refused` with the ref stops it.
 * - incoming: `receiving → complete | refused | failed`, fed from
 *   {@linkcode BlobSink} results.
 *
 * Both keep progress (bytes done, total, rate in bytes/s) in the context
 * and emit it as a `progress` event, for a CLI progress bar or the
 * inspector: on every state change, for chunks sent at most every
 * {@linkcode PROGRESS_EVERY_MS}, for chunks received once per synced batch
 * (the caller sends the batch's last chunk). Side effects are named no-op actions the caller
 * supplies with `.provide()`: `stopSending` (skip the ref's remaining
 * chunks), `releaseSpool` (drop the spooled copy) and `discardPartial`.
 *
 * @module
 */

import { assign, emit, setup } from "npm:xstate@^5.33.3";
import type {
  MetaObject,
  NonReducibleUnknown,
  StateMachine,
  StateSchema,
} from "npm:xstate@^5.33.3";
import type { ChunkResult } from "../storage/blob_sink.ts";
import type { OutboxEntry } from "../storage/store.ts";

/** The status a progress event reports (a state of either chart). */
export type BlobTransferStatus =
  | "queued"
  | "sending"
  | "awaitingAck"
  | "receiving"
  | "done"
  | "complete"
  | "refused"
  | "failed";

/** The progress both charts emit (`actor.on("progress", fn)`). */
export interface BlobProgress {
  /** Always `progress` (the emitted event's type). */
  type: "progress";
  /** `in` for a blob we receive, `out` for one we send. */
  dir: "in" | "out";
  /** The remote peer's key. */
  peer: string;
  /** The blob's ref. */
  ref: string;
  /** The thread of the msg that names the blob, when known. */
  th?: string;
  /** The blob's file name, when known. */
  name?: string;
  /** The chart state this event reports. */
  status: BlobTransferStatus;
  /** Bytes sent (out) or received (in). */
  bytes: number;
  /** Total size, -1 while unknown (incoming chunks come before the msg). */
  total: number;
  /** Bytes per second since this run of chunks started; 0 when unknown. */
  rate: number;
  /** Why it was refused or failed. */
  detail?: string;
}

/** Progress fields shared by both contexts. */
export interface BlobProgressContext {
  /** The remote peer's key. */
  peer: string;
  /** The blob's ref. */
  ref: string;
  /** The thread of the msg that names the blob, when known. */
  th?: string;
  /** The blob's file name, when known. */
  name?: string;
  /** Bytes sent (out) or received (in) so far. */
  bytes: number;
  /** Total size in bytes, -1 while unknown. */
  total: number;
  /** Bytes per second over the current run; 0 when unknown. */
  rate: number;
  /** When the current run of chunks started (ms), and the bytes then. */
  runStart?: number;
  /** `bytes` when the current run started. */
  runBytes: number;
  /** When a chunk's progress was last reported (ms). */
  reportedAt?: number;
  /** Why the transfer was refused or failed. */
  detail?: string;
}

function rate(
  context: BlobProgressContext,
  bytes: number,
  at: number,
): Partial<BlobProgressContext> {
  // A run starts at the first chunk after (re)connecting; a replay may
  // restart from an earlier offset, so the baseline moves with it.
  if (context.runStart === undefined || bytes < context.runBytes) {
    return { runStart: at, runBytes: bytes, rate: 0 };
  }
  const seconds = (at - context.runStart) / 1000;
  return {
    rate: seconds > 0
      ? Math.round((bytes - context.runBytes) / seconds)
      : context.rate,
  };
}

function progress(
  context: BlobProgressContext,
  dir: "in" | "out",
  status: BlobTransferStatus,
): BlobProgress {
  const event: BlobProgress = {
    type: "progress",
    dir,
    peer: context.peer,
    ref: context.ref,
    status,
    bytes: context.bytes,
    total: context.total,
    rate: context.rate,
  };
  if (context.th !== undefined) event.th = context.th;
  if (context.name !== undefined) event.name = context.name;
  if (context.detail !== undefined) event.detail = context.detail;
  return event;
}

const noop = () => {};

/**
 * Progress of chunks is reported at most this often (ms); state changes
 * (queued, awaiting the ack, done...) always are.
 */
export const PROGRESS_EVERY_MS = 100;

/** When a chunk event happened (its `at`, else now). */
function chunkTime(event: { at?: number }): number {
  return event.at ?? Date.now();
}

/** Whether a chunk at `event.at` is due a progress report. */
function progressDue(
  context: BlobProgressContext,
  event: { at?: number },
): boolean {
  const last = context.reportedAt;
  const at = chunkTime(event);
  return last === undefined || at < last || at - last >= PROGRESS_EVERY_MS;
}

// ---------------------------------------------------------------- outgoing

/** Input of {@linkcode outgoingBlobMachine}. */
export interface OutgoingBlobInput {
  /** The receiving peer's key. */
  peer: string;
  /** The blob's ref. */
  ref: string;
  /** The thread of the msg that names the blob. */
  th?: string;
  /** The blob's file name. */
  name?: string;
  /** Size of the spooled copy in bytes. */
  size: number;
}

/** What the connection tells an outgoing transfer. */
export type OutgoingBlobEvent =
  /** The connection is up and starts (or restarts) writing the chunks. */
  | { type: "START" }
  /** Chunk `n` (bytes `offset` to `offset + length`) was written. */
  | {
    type: "CHUNK_SENT";
    n: number;
    offset: number;
    length: number;
    last: boolean;
    at?: number;
  }
  /** The msg naming the blob was acked: the peer has everything. */
  | { type: "ACKED" }
  /** The peer sent `err blob_refused` with this ref. */
  | { type: "REFUSED"; detail?: string }
  /** The transfer cannot go on (spool gone, outbox expired, ...). */
  | { type: "FAILED"; detail: string }
  /** The connection dropped: chunks wait for the next resume. */
  | { type: "DISCONNECTED" };

/** The outgoing chart's context. */
export type OutgoingBlobContext = BlobProgressContext;

/**
 * The `CHUNK_SENT` event for an outboxed chunk entry that was just written.
 * Returns undefined for an entry that is not a chunk.
 *
 * @example
 * ```ts
 * import { chunkSentEvent } from "./blob_machine.ts";
 * const e = chunkSentEvent({
 *   peer: "p", id: "01", ts: "2026-01-01T00:00:00.000Z", t: "chunk", queuedAt: 0,
 *   fields: { t: "chunk", ref: "b1", n: 0, last: true },
 *   chunk: { path: "/spool/b1", offset: 0, length: 5 },
 * });
 * console.log(e?.length); // 5
 * ```
 */
export function chunkSentEvent(
  entry: OutboxEntry,
  at?: number,
): Extract<OutgoingBlobEvent, { type: "CHUNK_SENT" }> | undefined {
  if (entry.t !== "chunk" || !entry.chunk) return undefined;
  return {
    type: "CHUNK_SENT",
    n: Number(entry.fields.n),
    offset: entry.chunk.offset,
    length: entry.chunk.length,
    last: entry.fields.last === true,
    ...(at === undefined ? {} : { at }),
  };
}

/** The named actions of {@linkcode outgoingBlobMachine}, with their parameters. */
export type OutgoingBlobAction =
  | { type: "countChunk"; params: unknown }
  | { type: "endRun"; params: unknown }
  | { type: "setDetail"; params: unknown }
  | { type: "completeBytes"; params: unknown }
  | { type: "reportStatus"; params: { status: BlobTransferStatus } }
  | { type: "stopSending"; params: unknown }
  | { type: "releaseSpool"; params: unknown }
  | { type: "markReported"; params: unknown };

/**
 * The type of {@linkcode outgoingBlobMachine}, spelled out so the published
 * API does not depend on inference (JSR "no slow types").
 */
export type OutgoingBlobMachine = StateMachine<
  OutgoingBlobContext,
  OutgoingBlobEvent,
  Record<string, never>,
  never,
  OutgoingBlobAction,
  { type: "isLast"; params: unknown } | {
    type: "progressDue";
    params: unknown;
  },
  never,
  "queued" | "sending" | "awaitingAck" | "done" | "refused" | "failed",
  string,
  OutgoingBlobInput,
  NonReducibleUnknown,
  BlobProgress,
  MetaObject,
  StateSchema
>;

/**
 * The outgoing transfer chart. Provide `stopSending` (on refusal: skip the
 * ref's remaining chunks) and `releaseSpool` (on done or refused).
 *
 * @example
 * ```ts
 * import { createActor } from "npm:xstate@^5.33.3";
 * import { outgoingBlobMachine } from "./blob_machine.ts";
 * const actor = createActor(outgoingBlobMachine, { input: { peer: "p", ref: "b1", size: 5 } });
 * actor.on("progress", (p) => console.log(p.status, p.bytes, p.total));
 * actor.start();
 * actor.send({ type: "CHUNK_SENT", n: 0, offset: 0, length: 5, last: true });
 * actor.send({ type: "ACKED" });
 * console.log(actor.getSnapshot().value); // "done"
 * ```
 */
export const outgoingBlobMachine: OutgoingBlobMachine = setup({
  types: {
    context: {} as OutgoingBlobContext,
    events: {} as OutgoingBlobEvent,
    input: {} as OutgoingBlobInput,
    emitted: {} as BlobProgress,
  },
  guards: {
    isLast: ({ event }) => event.type === "CHUNK_SENT" && event.last,
    progressDue: ({ context, event }) =>
      event.type === "CHUNK_SENT" && progressDue(context, event),
  },
  actions: {
    countChunk: assign(({ context, event }) => {
      if (event.type !== "CHUNK_SENT") return {};
      const bytes = event.offset + event.length;
      return { ...rate(context, bytes, event.at ?? Date.now()), bytes };
    }),
    endRun: assign({ runStart: undefined, rate: 0 }),
    setDetail: assign(({ event }) => {
      if (event.type === "REFUSED") {
        return { detail: event.detail ?? "refused by the peer" };
      }
      if (event.type === "FAILED") return { detail: event.detail };
      return {};
    }),
    completeBytes: assign(({ context }) => ({ bytes: context.total })),
    markReported: assign(({ event }) => ({
      reportedAt: chunkTime(event as { at?: number }),
    })),
    reportStatus: emit(({ context }, params: { status: BlobTransferStatus }) =>
      progress(context, "out", params.status)
    ),
    stopSending: noop,
    releaseSpool: noop,
  },
}).createMachine({
  id: "outgoingBlob",
  initial: "queued",
  context: ({ input }) => ({
    peer: input.peer,
    ref: input.ref,
    th: input.th,
    name: input.name,
    bytes: 0,
    total: input.size,
    rate: 0,
    runBytes: 0,
  }),
  on: {
    REFUSED: { target: ".refused", actions: "setDetail" },
    FAILED: { target: ".failed", actions: "setDetail" },
  },
  states: {
    queued: {
      entry: [{ type: "reportStatus", params: { status: "queued" } }],
      on: {
        START: { target: "sending", actions: "endRun" },
        CHUNK_SENT: [
          { guard: "isLast", target: "awaitingAck", actions: "countChunk" },
          { target: "sending", actions: "countChunk" },
        ],
        // Acked before we saw it sent: it went out on an earlier run.
        ACKED: "done",
      },
    },
    sending: {
      entry: [{ type: "reportStatus", params: { status: "sending" } }],
      on: {
        CHUNK_SENT: [
          { guard: "isLast", target: "awaitingAck", actions: "countChunk" },
          {
            guard: "progressDue",
            actions: ["countChunk", "markReported", {
              type: "reportStatus",
              params: { status: "sending" },
            }],
          },
          { actions: "countChunk" },
        ],
        ACKED: "done",
        DISCONNECTED: { target: "queued", actions: "endRun" },
      },
    },
    awaitingAck: {
      entry: [{ type: "reportStatus", params: { status: "awaitingAck" } }],
      on: {
        ACKED: "done",
        DISCONNECTED: { target: "queued", actions: "endRun" },
        // A replay after resume writes the chunks again.
        CHUNK_SENT: {
          target: "sending",
          actions: "countChunk",
        },
      },
    },
    done: {
      type: "final",
      entry: [
        "completeBytes",
        "endRun",
        { type: "reportStatus", params: { status: "done" } },
        "releaseSpool",
      ],
    },
    refused: {
      type: "final",
      entry: [
        "endRun",
        { type: "reportStatus", params: { status: "refused" } },
        "stopSending",
        "releaseSpool",
      ],
    },
    failed: {
      type: "final",
      entry: [
        "endRun",
        { type: "reportStatus", params: { status: "failed" } },
        "stopSending",
      ],
    },
  },
});

// ---------------------------------------------------------------- incoming

/** Input of {@linkcode incomingBlobMachine}. */
export interface IncomingBlobInput {
  /** The sending peer's key. */
  peer: string;
  /** The blob's ref, as the sender chose it. */
  ref: string;
  /** The thread of the msg that names the blob, when known. */
  th?: string;
  /** The blob's file name, when known. */
  name?: string;
  /** Expected size when the blob part is known, else -1 (the default). */
  total?: number;
  /** Bytes already received (resuming a transfer). */
  bytes?: number;
}

/** What the connection tells an incoming transfer. */
export type IncomingBlobEvent =
  /** A chunk was stored; `bytes` is the total received so far. */
  | { type: "CHUNK"; bytes: number; total?: number; at?: number }
  /** The blob part was seen: its size, and maybe its name. */
  | { type: "DESCRIBED"; total: number; name?: string }
  /** The last chunk was stored and the file is in place. */
  | {
    type: "COMPLETE";
    bytes: number;
    path: string;
    sha256: string;
    at?: number;
  }
  /** Over the limit: we sent `err blob_refused`. */
  | { type: "REFUSED"; detail: string }
  /** The transfer is dead (bad data, size mismatch, I/O). */
  | { type: "FAILED"; detail: string }
  /** The connection dropped; the next chunk starts a new run. */
  | { type: "DISCONNECTED" };

/** The incoming chart's context. */
export interface IncomingBlobContext extends BlobProgressContext {
  /** The final file, once complete. */
  path?: string;
  /** Lowercase hex sha256 of the file, once complete. */
  sha256?: string;
}

/**
 * The incoming event for a {@linkcode ChunkResult} of the ref's sink, or
 * undefined for a result that changes nothing (an out-of-order, gap or
 * after-complete chunk is reported to the peer, not to the chart).
 *
 * @example
 * ```ts
 * import { sinkEvent } from "./blob_machine.ts";
 * console.log(sinkEvent({ kind: "accepted", ref: "b1", n: 0, bytes: 10 })); // { type: "CHUNK", bytes: 10 }
 * ```
 */
export function sinkEvent(
  result: ChunkResult,
  at?: number,
): IncomingBlobEvent | undefined {
  const when = at === undefined ? {} : { at };
  switch (result.kind) {
    case "accepted":
      return {
        type: "CHUNK",
        bytes: result.bytes,
        ...(result.size === undefined ? {} : { total: result.size }),
        ...when,
      };
    case "complete":
      return {
        type: "COMPLETE",
        bytes: result.bytes,
        path: result.path,
        sha256: result.sha256,
        ...when,
      };
    case "refused":
      return { type: "REFUSED", detail: result.detail };
    case "error":
      return result.failed
        ? { type: "FAILED", detail: result.detail }
        : undefined;
  }
}

/** The named actions of {@linkcode incomingBlobMachine}, with their parameters. */
export type IncomingBlobAction =
  | { type: "countChunk"; params: unknown }
  | { type: "describe"; params: unknown }
  | { type: "endRun"; params: unknown }
  | { type: "setDetail"; params: unknown }
  | { type: "reportStatus"; params: { status: BlobTransferStatus } }
  | { type: "discardPartial"; params: unknown };

/**
 * The type of {@linkcode incomingBlobMachine}, spelled out so the published
 * API does not depend on inference (JSR "no slow types").
 */
export type IncomingBlobMachine = StateMachine<
  IncomingBlobContext,
  IncomingBlobEvent,
  Record<string, never>,
  never,
  IncomingBlobAction,
  never,
  never,
  "receiving" | "complete" | "refused" | "failed",
  string,
  IncomingBlobInput,
  NonReducibleUnknown,
  BlobProgress,
  MetaObject,
  StateSchema
>;

/**
 * The incoming transfer chart. Provide `discardPartial` (on failure) if the
 * temp file should go.
 *
 * @example
 * ```ts
 * import { createActor } from "npm:xstate@^5.33.3";
 * import { incomingBlobMachine } from "./blob_machine.ts";
 * const actor = createActor(incomingBlobMachine, { input: { peer: "p", ref: "b1" } }).start();
 * actor.send({ type: "CHUNK", bytes: 4 });
 * actor.send({ type: "COMPLETE", bytes: 6, path: "/tmp/b1", sha256: "00" });
 * console.log(actor.getSnapshot().value, actor.getSnapshot().context.total); // complete 6
 * ```
 */
export const incomingBlobMachine: IncomingBlobMachine = setup({
  types: {
    context: {} as IncomingBlobContext,
    events: {} as IncomingBlobEvent,
    input: {} as IncomingBlobInput,
    emitted: {} as BlobProgress,
  },
  actions: {
    countChunk: assign(({ context, event }) => {
      if (event.type !== "CHUNK" && event.type !== "COMPLETE") return {};
      const update: Partial<IncomingBlobContext> = {
        ...rate(context, event.bytes, event.at ?? Date.now()),
        bytes: event.bytes,
      };
      if (event.type === "CHUNK" && event.total !== undefined) {
        update.total = event.total;
      }
      if (event.type === "COMPLETE") {
        update.total = event.bytes;
        update.path = event.path;
        update.sha256 = event.sha256;
      }
      return update;
    }),
    describe: assign(({ event }) => {
      if (event.type !== "DESCRIBED") return {};
      return event.name === undefined
        ? { total: event.total }
        : { total: event.total, name: event.name };
    }),
    endRun: assign({ runStart: undefined, rate: 0 }),
    setDetail: assign(({ event }) => {
      if (event.type === "REFUSED" || event.type === "FAILED") {
        return { detail: event.detail };
      }
      return {};
    }),
    reportStatus: emit(({ context }, params: { status: BlobTransferStatus }) =>
      progress(context, "in", params.status)
    ),
    discardPartial: noop,
  },
}).createMachine({
  id: "incomingBlob",
  initial: "receiving",
  context: ({ input }) => ({
    peer: input.peer,
    ref: input.ref,
    th: input.th,
    name: input.name,
    bytes: input.bytes ?? 0,
    total: input.total ?? -1,
    rate: 0,
    runBytes: input.bytes ?? 0,
  }),
  states: {
    receiving: {
      on: {
        // One per synced batch of chunks (the receiver's own pace).
        CHUNK: {
          actions: ["countChunk", {
            type: "reportStatus",
            params: { status: "receiving" },
          }],
        },
        DESCRIBED: {
          actions: ["describe", {
            type: "reportStatus",
            params: { status: "receiving" },
          }],
        },
        COMPLETE: { target: "complete", actions: "countChunk" },
        REFUSED: { target: "refused", actions: "setDetail" },
        FAILED: { target: "failed", actions: "setDetail" },
        DISCONNECTED: { actions: "endRun" },
      },
    },
    complete: {
      type: "final",
      entry: [{ type: "reportStatus", params: { status: "complete" } }],
    },
    refused: {
      type: "final",
      entry: ["endRun", {
        type: "reportStatus",
        params: { status: "refused" },
      }],
    },
    failed: {
      type: "final",
      entry: [
        "endRun",
        { type: "reportStatus", params: { status: "failed" } },
        "discardPartial",
      ],
    },
  },
});
