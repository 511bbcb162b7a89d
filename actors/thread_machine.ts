/**
 * The statechart of one thread with one remote peer (SPEC 8; NOTES item 12).
 *
 * One actor per (peer, th). The first msg with a new `th` creates it and
 * gives it its subject. It keeps both sides' soft states in two parallel
 * regions, `mine` and `theirs`, whose states are the conventional words
 * (open, working, waiting, done, failed, closed) plus `other` for any other
 * word (the word itself is in the context). Received msgs are counted
 * unread until the application reports them read; a redelivered line is
 * dropped.
 *
 * The machine does no I/O and emits nothing: the caller feeds it lines that
 * are already durable (received and committed, or enqueued). The stored
 * record has one writer, the store, in the commit of the line that changes
 * it (a received line in `receive`, so its unread count and state are
 * durable before the ack; our side through `patchThread`, asked only by the
 * Peer's threads, peer/peer_threads.ts). The record in the actor's context
 * is a view of it for the chart and the inspector: `STORED` puts the
 * store's record in (the Peer sends it after each of its own writes, and
 * after each received line while the actor is inspected). A side's state time is the line's `ts`; the
 * record's `updated` is local time, so the retention window does not
 * depend on the remote's clock.
 *
 * @module
 */

import { assign, setup } from "npm:xstate@^5.33.3";
import type {
  EventObject,
  MetaObject,
  NonReducibleUnknown,
  StateMachine,
  StateSchema,
} from "npm:xstate@^5.33.3";
import { timestamp } from "../wire/time.ts";
import type { Msg, State } from "../wire/types.ts";
import type { SideState, ThreadRecord } from "../storage/store.ts";

/** The conventional soft-state words (SPEC 8.1), in table order. */
export const SOFT_STATES = [
  "open",
  "working",
  "waiting",
  "done",
  "failed",
  "closed",
] as const;

/** One of the conventional soft-state words. */
export type SoftState = typeof SOFT_STATES[number];

/** Words that end a thread for the reconnect rule (NOTES item 12). */
export const ENDING_STATES: ReadonlySet<string> = new Set([
  "done",
  "failed",
  "closed",
]);

/** Options of {@linkcode isThreadOpen}. */
export interface ThreadOpenOptions {
  /** Also require activity within this many ms (the retention window). */
  retentionMs?: number;
  /** The current time in ms since the epoch; `Date.now()` by default. */
  now?: number;
}

/**
 * Whether a thread is still open for the reconnect rule: until either side
 * reports done, failed or closed (NOTES item 12). With `retentionMs`, also
 * only if it was updated within that window.
 *
 * @example
 * ```ts
 * import { isThreadOpen } from "./thread_machine.ts";
 * const base = { peer: "p", th: "t1", created: "2026-01-01T00:00:00Z", updated: "2026-01-01T00:00:00Z", unread: 0 };
 * console.log(isThreadOpen(base)); // true
 * console.log(isThreadOpen({ ...base, theirs: { state: "done", ts: base.created } })); // false
 * ```
 */
export function isThreadOpen(
  record: ThreadRecord,
  options: ThreadOpenOptions = {},
): boolean {
  if (record.mine && ENDING_STATES.has(record.mine.state)) return false;
  if (record.theirs && ENDING_STATES.has(record.theirs.state)) return false;
  if (options.retentionMs !== undefined) {
    const updated = Date.parse(record.updated);
    const now = options.now ?? Date.now();
    if (!Number.isFinite(updated) || now - updated > options.retentionMs) {
      return false;
    }
  }
  return true;
}

/** Input of {@linkcode threadMachine}. */
export interface ThreadInput {
  /** The remote peer's key. */
  peer: string;
  /** The thread id. */
  th: string;
  /** The stored record, when the thread already exists. */
  record?: ThreadRecord;
  /** Creation time of a new thread; now by default. */
  created?: string;
}

/** What the caller tells a thread actor. */
export type ThreadEvent =
  /** A msg from the remote, already committed. */
  | { type: "MSG_IN"; message: Msg }
  /**
   * Msgs from the remote committed together, in order: one step for the
   * run (a burst is not a macrostep per msg).
   */
  | { type: "MSGS_IN"; messages: Msg[] }
  /** A state from the remote, already committed. */
  | { type: "STATE_IN"; message: State }
  /** A msg of ours, already enqueued. */
  | { type: "MSG_OUT"; message: Msg }
  /** A state of ours, already enqueued. */
  | { type: "STATE_OUT"; message: State }
  /** The application read `count` messages (all when absent). */
  | { type: "READ"; count?: number }
  /**
   * The record as the store wrote it (the store is its one writer): it
   * replaces the actor's own, and both regions resolve their words again.
   */
  | { type: "STORED"; record: ThreadRecord };

/**
 * Maps a msg or state line and its direction to the thread event.
 *
 * @example
 * ```ts
 * import { threadEvent } from "./thread_machine.ts";
 * const e = threadEvent("in", { t: "state", id: "1", ts: "2026-01-01T00:00:00Z", th: "t", state: "working" });
 * console.log(e.type); // "STATE_IN"
 * ```
 */
export function threadEvent(
  dir: "in" | "out",
  message: Msg | State,
): ThreadEvent {
  if (message.t === "msg") {
    return dir === "in"
      ? { type: "MSG_IN", message }
      : { type: "MSG_OUT", message };
  }
  return dir === "in"
    ? { type: "STATE_IN", message }
    : { type: "STATE_OUT", message };
}

/** The thread actor's context. */
export interface ThreadContext {
  /** The thread's record as it would be persisted. */
  record: ThreadRecord;
  /** Msgs this actor has seen (the first one names the subject). */
  msgs: number;
  /** Ids of the last few received lines, to drop a redelivered one. */
  recent: string[];
}

/** The named actions of {@linkcode threadMachine}, with their parameters. */
export type ThreadAction =
  | { type: "remember"; params: NonReducibleUnknown }
  | { type: "takeMsg"; params: NonReducibleUnknown }
  | { type: "setSide"; params: { side: "mine" | "theirs" } }
  | { type: "markRead"; params: NonReducibleUnknown }
  | { type: "takeStored"; params: NonReducibleUnknown };

/** The named guards of {@linkcode threadMachine}, with their parameters. */
export type ThreadGuard =
  | { type: "sideIs"; params: { side: "mine" | "theirs"; word: string } }
  | { type: "sideUnset"; params: { side: "mine" | "theirs" } }
  | { type: "isRedelivery"; params: unknown };

/** The chart state of one side: a conventional word, `other`, or `resolving`. */
export type ThreadSideValue = SoftState | "other" | "resolving";

/**
 * The type of {@linkcode threadMachine}, spelled out so the published API
 * does not depend on inference (JSR "no slow types").
 */
export type ThreadMachine = StateMachine<
  ThreadContext,
  ThreadEvent,
  Record<string, never>,
  never,
  ThreadAction,
  ThreadGuard,
  never,
  { mine: ThreadSideValue; theirs: ThreadSideValue },
  string,
  ThreadInput,
  NonReducibleUnknown,
  EventObject,
  MetaObject,
  StateSchema
>;

const RECENT = 64;

function sideState(message: State): SideState {
  const side: SideState = { state: message.state, ts: message.ts };
  if (message.note !== undefined) side.note = message.note;
  return side;
}

// Each region resolves its word to a chart state through a transient
// `resolving` state, both at start (from a stored record) and on change.
function resolving(side: "mine" | "theirs") {
  return {
    always: [
      ...SOFT_STATES.map((word) => ({
        guard: { type: "sideIs" as const, params: { side, word } },
        target: word,
      })),
      {
        guard: { type: "sideUnset" as const, params: { side } },
        target: "open",
      },
      { target: "other" },
    ],
  };
}

const WORD_STATES = {
  open: {},
  working: {},
  waiting: {},
  done: {},
  failed: {},
  closed: {},
  /** Any word outside the convention; `context.record[side].state` has it. */
  other: {},
};

/**
 * The thread statechart: parallel regions `mine` and `theirs`.
 *
 * @example
 * ```ts
 * import { createActor } from "npm:xstate@^5.33.3";
 * import { threadMachine } from "./thread_machine.ts";
 * const actor = createActor(threadMachine, { input: { peer: "ed25519:x", th: "t1" } });
 * actor.start();
 * actor.send({ type: "MSG_IN", message: { t: "msg", id: "01", ts: "2026-01-01T00:00:00Z", th: "t1", subject: "Hi", parts: [] } });
 * actor.send({ type: "STATE_IN", message: { t: "state", id: "02", ts: "2026-01-01T00:00:01Z", th: "t1", state: "working" } });
 * console.log(actor.getSnapshot().value); // { mine: "open", theirs: "working" }
 * console.log(actor.getSnapshot().context.record.unread); // 1
 * actor.stop();
 * ```
 */
export const threadMachine: ThreadMachine = setup({
  types: {
    context: {} as ThreadContext,
    events: {} as ThreadEvent,
    input: {} as ThreadInput,
  },
  guards: {
    sideIs: ({ context }, params: { side: "mine" | "theirs"; word: string }) =>
      context.record[params.side]?.state === params.word,
    sideUnset: ({ context }, params: { side: "mine" | "theirs" }) =>
      context.record[params.side] === undefined,
    isRedelivery: ({ context, event }) =>
      (event.type === "MSG_IN" || event.type === "STATE_IN") &&
      context.recent.includes(event.message.id),
  },
  actions: {
    remember: assign(({ context, event }) => {
      if (event.type !== "MSG_IN" && event.type !== "STATE_IN") return {};
      return { recent: [...context.recent, event.message.id].slice(-RECENT) };
    }),
    takeMsg: assign(({ context, event }) => {
      if (event.type !== "MSG_IN" && event.type !== "MSG_OUT") return {};
      const message = event.message;
      const record: ThreadRecord = {
        ...context.record,
        updated: timestamp(),
      };
      // SPEC 9.1: subject is only meaningful on the first message.
      if (
        context.msgs === 0 && record.subject === undefined &&
        message.subject !== undefined
      ) {
        record.subject = message.subject;
      }
      if (event.type === "MSG_IN") record.unread = context.record.unread + 1;
      return { record, msgs: context.msgs + 1 };
    }),
    setSide: assign(
      ({ context, event }, params: { side: "mine" | "theirs" }) => {
        if (event.type !== "STATE_IN" && event.type !== "STATE_OUT") return {};
        return {
          record: {
            ...context.record,
            [params.side]: sideState(event.message),
            updated: timestamp(),
          },
        };
      },
    ),
    takeStored: assign(({ event }) => {
      if (event.type !== "STORED") return {};
      return { record: { ...event.record } };
    }),
    takeMsgs: assign(({ context, event }) => {
      if (event.type !== "MSGS_IN") return {};
      const recent = [...context.recent];
      let record: ThreadRecord | undefined;
      let msgs = context.msgs;
      for (const message of event.messages) {
        if (recent.includes(message.id)) continue; // a redelivered line
        recent.push(message.id);
        record ??= { ...context.record };
        // SPEC 9.1: subject is only meaningful on the first message.
        if (
          msgs === 0 && record.subject === undefined &&
          message.subject !== undefined
        ) {
          record.subject = message.subject;
        }
        record.unread += 1;
        msgs += 1;
      }
      if (record === undefined) return {};
      record.updated = timestamp();
      return { record, msgs, recent: recent.slice(-RECENT) };
    }),
    markRead: assign(({ context, event }) => {
      if (event.type !== "READ") return {};
      const unread = event.count === undefined ? 0 : Math.max(
        0,
        context.record.unread - Math.max(0, Math.floor(event.count)),
      );
      return { record: { ...context.record, unread } };
    }),
  },
}).createMachine({
  id: "thread",
  type: "parallel",
  context: ({ input }) => {
    const created = input.created ?? timestamp();
    const record: ThreadRecord = input.record ? { ...input.record } : {
      peer: input.peer,
      th: input.th,
      created,
      updated: created,
      unread: 0,
    };
    // A stored thread already had its first message.
    return { record, msgs: input.record ? 1 : 0, recent: [] };
  },
  on: {
    MSG_IN: [
      { guard: "isRedelivery" },
      { actions: ["remember", "takeMsg"] },
    ],
    MSGS_IN: { actions: ["takeMsgs"] },
    MSG_OUT: { actions: ["takeMsg"] },
    READ: { actions: ["markRead"] },
    STORED: {
      actions: ["takeStored"],
      target: [".mine.resolving", ".theirs.resolving"],
    },
  },
  states: {
    mine: {
      initial: "resolving",
      on: {
        STATE_OUT: {
          target: ".resolving",
          actions: [
            { type: "setSide", params: { side: "mine" } },
          ],
        },
      },
      states: { resolving: resolving("mine"), ...WORD_STATES },
    },
    theirs: {
      initial: "resolving",
      on: {
        STATE_IN: [
          { guard: "isRedelivery" },
          {
            target: ".resolving",
            actions: [
              "remember",
              { type: "setSide", params: { side: "theirs" } },
            ],
          },
        ],
      },
      states: { resolving: resolving("theirs"), ...WORD_STATES },
    },
  },
});
