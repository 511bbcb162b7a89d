/**
 * How the connection chart routes a received frame: the guards that read
 * it (its type, its schema verdict, the hello checks) and the transition
 * lists shared by the states where the session is up. The chart itself is
 * in connection_machine.ts.
 *
 * @module
 */

import { isKey } from "../wire/keys.ts";
import type { Frame } from "../wire/read_frame.ts";
import {
  CONTENT_TYPES,
  MESSAGE_TYPES,
  PRE_AUTH_FORBIDDEN,
  PROTOCOL_VERSION,
} from "../wire/types.ts";
import type {
  ConnectionContext,
  ConnectionEvent,
  SendErrParams,
} from "./connection_machine.ts";

/** Lines committed with store.receive (dedup, seen): content and private. */
export const COMMITTED: ReadonlySet<string> = new Set([
  ...CONTENT_TYPES,
  "private",
]);
/** Extension types: a schema failure drops the line instead of closing. */
const EXTENSIONS: ReadonlySet<string> = new Set([
  "presence",
  "mirror",
  "private",
]);
/** Known types other than err that the host hands on as they are. */
const CONTROL: ReadonlySet<string> = new Set(["grant", "presence"]);
const KNOWN: ReadonlySet<string> = new Set<string>(MESSAGE_TYPES);

/** Types read on without waiting for the content before them to commit. */
export const FLOWING: ReadonlySet<string> = new Set([
  ...COMMITTED,
  "ack",
  "ping",
  "pong",
  "grant",
  "presence",
]);

/** What a guard of the chart is given. */
interface GuardArgs {
  context: ConnectionContext;
  event: ConnectionEvent;
}

/** The frame of a `FRAME` event (frame actions run only on those). */
export function frameOf(event: ConnectionEvent): Frame {
  return (event as { frame: Frame }).frame;
}

/** The type of the line of a `FRAME` event, else undefined. */
export function tOf(event: ConnectionEvent): string | undefined {
  return event.type === "FRAME" ? event.frame.message.t : undefined;
}

/** A field of the frame's line, as received. */
export function field(frame: Frame, name: string): unknown {
  return (frame.message as unknown as Record<string, unknown>)[name];
}

function idOf(frame: Frame): string | undefined {
  const id = field(frame, "id");
  return typeof id === "string" ? id : undefined;
}

/** Refuse the frame: err `code` (unless closing) and close. */
export function refuse(code: string, detail: (frame: Frame) => string) {
  return {
    type: "failFrame" as const,
    params: ({ event }: { event: ConnectionEvent }): SendErrParams => {
      const frame = frameOf(event);
      return { code, detail: detail(frame), re: idOf(frame) };
    },
  };
}

/**
 * How a received line is routed while the session is up (resume and open):
 * a core line that fails its schema closes with bad_frame; an extension or
 * unknown one is dropped (NOTES: presence); hello and auth again, and
 * unknown types, are ignored (SPEC 5).
 */
export const TRAFFIC = [
  {
    guard: "committed",
    actions: "stage",
  },
  { guard: "isAck", actions: "takeAck" },
  { guard: "isPing", actions: "answerPing" },
  { guard: "isPong", actions: "notePong" },
  {
    guard: "isBye",
    actions: [
      "noteBye",
      { type: "raisePeerBye", params: { withReason: true } },
    ],
  },
  { guard: "isErr", actions: ["control", "raisePeerErr"] },
  { guard: "controlLine", actions: "control" },
] as const;

/** A host action that a session route ends in, and nothing else. */
export type SessionRoute =
  | "stage"
  | "takeAck"
  | "answerPing"
  | "notePong"
  | "control";

/** Checked first in resume and open: lines that fail their schema. */
export const SCHEMA = [
  {
    guard: "invalidCore",
    actions: refuse(
      "bad_frame",
      (f) => `invalid ${f.message.t}: ${f.invalid}`,
    ),
  },
  // An extension or unknown type that fails its schema: dropped.
  { guard: "invalidOther" },
] as const;

/**
 * The guards that read a `FRAME` event (all false for other events).
 *
 * @example
 * ```ts
 * import { frameGuards } from "./frame_routes.ts";
 * console.log(Object.keys(frameGuards).includes("helloOwnKey")); // true
 * ```
 */
export const frameGuards = {
  isHello: ({ event }: GuardArgs) => tOf(event) === "hello",
  isAuth: ({ event }: GuardArgs) => tOf(event) === "auth",
  isResume: ({ event }: GuardArgs) => tOf(event) === "resume",
  isAck: ({ event }: GuardArgs) => tOf(event) === "ack",
  isPing: ({ event }: GuardArgs) => tOf(event) === "ping",
  isPong: ({ event }: GuardArgs) => tOf(event) === "pong",
  isBye: ({ event }: GuardArgs) => tOf(event) === "bye",
  isErr: ({ event }: GuardArgs) => tOf(event) === "err",
  helloVersionBad: ({ event }: GuardArgs) => {
    if (tOf(event) !== "hello") return false;
    const v = field(frameOf(event), "v");
    return v !== PROTOCOL_VERSION && v !== undefined;
  },
  helloKeyBad: ({ event }: GuardArgs) => {
    if (tOf(event) !== "hello") return false;
    const key = field(frameOf(event), "key");
    return typeof key === "string" && !isKey(key);
  },
  helloInvalid: ({ event }: GuardArgs) =>
    tOf(event) === "hello" && frameOf(event).invalid !== undefined,
  helloOwnKey: ({ context, event }: GuardArgs) =>
    tOf(event) === "hello" && context.key !== undefined &&
    field(frameOf(event), "key") === context.key,
  forbiddenBeforeAuth: ({ event }: GuardArgs) => {
    const t = tOf(event);
    return t === "auth" || PRE_AUTH_FORBIDDEN.has(t ?? "");
  },
  invalidCore: ({ event }: GuardArgs) => {
    const t = tOf(event);
    return t !== undefined && frameOf(event).invalid !== undefined &&
      KNOWN.has(t) && !EXTENSIONS.has(t);
  },
  invalidOther: ({ event }: GuardArgs) =>
    event.type === "FRAME" && event.frame.invalid !== undefined,
  committed: ({ event }: GuardArgs) => COMMITTED.has(tOf(event) ?? ""),
  controlLine: ({ event }: GuardArgs) => CONTROL.has(tOf(event) ?? ""),
};

const SESSION_ACTIONS: ReadonlySet<string> = new Set<SessionRoute>([
  "stage",
  "takeAck",
  "answerPing",
  "notePong",
  "control",
]);

/**
 * The routes of {@link TRAFFIC} that end in one host action, by type:
 * derived from TRAFFIC itself (its first matching guard for a line of each
 * known type), so the two cannot disagree. While the session is up the
 * chart hands this table to the host (entry and exit actions of resume and
 * open), which applies it to schema-valid lines without a chart step each:
 * a macrostep costs ~20 µs, and every message would pay two (its line and
 * its ack). Every other line is still a `FRAME` event.
 */
export const SESSION_ROUTES: ReadonlyMap<string, SessionRoute> = new Map(
  MESSAGE_TYPES.flatMap((t): Array<[string, SessionRoute]> => {
    const event = { type: "FRAME", frame: { message: { t } } };
    const args = { context: {}, event } as unknown as GuardArgs;
    const route = TRAFFIC.find((r) => frameGuards[r.guard](args));
    const action = route?.actions;
    return typeof action === "string" && SESSION_ACTIONS.has(action)
      ? [[t, action as SessionRoute]]
      : [];
  }),
);
