/**
 * The statechart of one AWP connection, as data (SPEC sections 7, 9.4-9.7).
 *
 * States are named after the protocol:
 * - `handshake.hello`: our hello is sent at once; we await theirs.
 * - `handshake.auth`: our auth is sent; we verify theirs.
 * - `resume`: our resume is sent; we await theirs.
 * - `open`: traffic flows; its states are its liveness: it pings after
 *   `pingInterval` without receiving anything and declares the connection
 *   dead after two missed pongs. A received line takes no step: a wait's
 *   timer asks the host whether one came meanwhile, and re-arms
 *   (actors/liveness.ts). (Not a parallel state with an empty `traffic`
 *   region beside `liveness`: entering and leaving one cost each connection
 *   ~20 % more chart work, measured, for a region that did nothing.)
 * - `closing`: our bye is sent, nothing else is; we close on their bye or
 *   after `byeTimeout`.
 * - `closed`: final.
 *
 * Every received line arrives as a `FRAME` event (parsed and checked once,
 * wire/read_frame.ts) and the chart routes it by its guards
 * (frame_routes.ts): the hello checks, resume, the traffic of an open
 * session, what is still taken while closing. Their auth is the one line
 * the host verifies before the chart hears of it: in a state tagged
 * `verifiesAuth` (`handshake.auth`) the host verifies it (reading waits
 * meanwhile) and tells the chart the verdict, `AUTH_OK` or `AUTH_REFUSED`:
 * one step per auth, not a `FRAME` step into a `verifying` state and a
 * verdict step out of it (each step of this chart allocates 10-25 KiB,
 * measured; an invoked promise actor per handshake cost more still).
 *
 * The machine does no I/O: every side effect is a named action calling the
 * `host` of its input (actors/connection.ts), one machine shared by every
 * connection, so the chart can be walked on its own with simulated time.
 *
 * @module
 */

import { assign, raise, setup } from "npm:xstate@^5.33.3";
import type {
  EventObject,
  MetaObject,
  NonReducibleUnknown,
  ProvidedActor,
  StateMachine,
  StateSchema,
} from "npm:xstate@^5.33.3";
import type { Frame } from "../wire/read_frame.ts";
import { CLOSING_ERROR_CODES, PROTOCOL_VERSION } from "../wire/types.ts";
import {
  field,
  frameGuards,
  frameOf,
  refuse,
  SCHEMA,
  SESSION_ROUTES,
  type SessionRoute,
  TRAFFIC,
} from "./frame_routes.ts";
import { heardWhileWaiting, type LivenessHost, pingDue } from "./liveness.ts";

/** The connection's timeouts, in milliseconds. */
export interface ConnectionTimeouts {
  /** From connect until both auths verified (SPEC does not fix it). */
  handshake: number;
  /** From sending our resume until theirs arrives. */
  resume: number;
  /** From sending bye until we close anyway (SPEC 9.6). */
  bye: number;
  /** Idle time before a ping, and the wait for each pong (SPEC 9.4); 0 disables pinging. */
  pingInterval: number;
}

/**
 * Default timeouts: handshake 20 s, resume 10 s, bye 5 s, ping every 30 s.
 *
 * @example
 * ```ts
 * import { DEFAULT_TIMEOUTS } from "./connection_machine.ts";
 * console.log(DEFAULT_TIMEOUTS.bye); // 5000
 * ```
 */
export const DEFAULT_TIMEOUTS: Readonly<ConnectionTimeouts> = Object.freeze({
  handshake: 20_000,
  resume: 10_000,
  bye: 5_000,
  pingInterval: 30_000,
});

/** What the connection tells its statechart. */
export type ConnectionEvent =
  /** A received line, parsed and checked once: the chart routes it. */
  | { type: "FRAME"; frame: Frame }
  /** Their hello is valid; send our auth. */
  | { type: "HELLO_OK" }
  /**
   * Their auth, read in a state tagged {@link VERIFIES_AUTH}, verified and
   * they are admitted; send our resume.
   */
  | { type: "AUTH_OK" }
  /**
   * Their auth failed to verify or they are refused (a failure while
   * verifying is `internal`): send this err, close.
   */
  | ({ type: "AUTH_REFUSED" } & SendErrParams)
  /** Their resume arrived; replay and open. */
  | { type: "RESUME" }
  | { type: "PONG" } // to our last ping: the wait for it ends at once
  /** They sent an err line. */
  | { type: "PEER_ERR"; code: string; detail?: string }
  /** They broke the protocol: send err `code` (if any) and close. */
  | { type: "FAIL"; code?: string; detail: string; re?: string }
  /** We say bye (graceful close). */
  | { type: "BYE"; reason?: string }
  /** They said bye. */
  | { type: "PEER_BYE"; reason?: string }
  /** The transport ended (EOF or read error). */
  | { type: "END"; reason: string }
  /** We close abruptly. */
  | { type: "CLOSE"; reason: string };

/**
 * What the chart's actions do, per connection: the machine is built once
 * and shared by every connection (a machine per connection, as
 * `.provide()` makes, costs each one its own state-node tree).
 */
export interface ConnectionHost extends LivenessHost {
  /** Their hello passed every check: remember it (before `sendAuth`). */
  acceptHello(frame: Frame): void;
  /**
   * While the session is up: the routes the host applies itself to
   * schema-valid lines (see `SESSION_ROUTES`); undefined: every line is a
   * `FRAME` event.
   */
  sessionRoutes(routes: ReadonlyMap<string, SessionRoute> | undefined): void;
  /** Their resume: what they have seen (before `replay`). */
  noteSeen(frame: Frame): void;
  /** A content line for the group commit (acked once durable). */
  stage(frame: Frame): void;
  /** An ack of ours. */
  takeAck(frame: Frame): void;
  /** Answer a ping. */
  answerPing(frame: Frame): void;
  /** A pong: the round trip, if it answers our last ping. */
  notePong(frame: Frame): void;
  /** Their bye, before the chart closes. */
  noteBye(frame: Frame): void;
  /** grant, presence and err lines after auth, for the layers above. */
  control(frame: Frame): void;
  sendHello(): void;
  sendAuth(): void;
  sendResume(): void;
  replay(): void;
  opened(): void;
  sendPing(): void;
  /** Our bye, with the reason of a `BYE` event. */
  sendBye(reason?: string): void;
  replyBye(): void;
  sendErr(params: SendErrParams): void;
  closeTransport(reason: string): void;
}

/** The statechart's context. */
export interface ConnectionContext {
  /** The effective timeouts (defaults merged with the input). */
  timeouts: ConnectionTimeouts;
  /** Our key: a hello that carries it is refused (NOTES item 5). */
  key?: string;
  /** Where the actions go; none: they do nothing (tests of the chart). */
  host?: ConnectionHost;
  /** Pings sent since anything was last received. */
  missed: number;
  /** Why the connection closed (set on the way to `closed`). */
  reason: string;
}

/** Input of {@link connectionMachine}. */
export interface ConnectionInput {
  /** Overrides of {@link DEFAULT_TIMEOUTS}, in milliseconds. */
  timeouts?: Partial<ConnectionTimeouts>;
  /** Our key (see {@link ConnectionContext.key}). */
  key?: string;
  /** The connection the actions act on. */
  host?: ConnectionHost;
}

/** The outcome of verifying their auth: admitted, or refused with an err. */
export type AuthVerdict = { ok: true } | ({ ok: false } & SendErrParams);

/** Parameters of the `sendErr` action. */
export interface SendErrParams {
  /** The error code to send. */
  code: string;
  /** A one-line explanation. */
  detail: string;
  /** The id of the offending line, when it had one. */
  re?: string;
}

/** The named actions of {@link connectionMachine}, with their parameters. */
export type ConnectionAction =
  | { type: "acceptHello"; params: unknown }
  | { type: "takeSessionRoutes"; params: unknown }
  | { type: "dropSessionRoutes"; params: unknown }
  | { type: "noteSeen"; params: unknown }
  | { type: "stage"; params: unknown }
  | { type: "takeAck"; params: unknown }
  | { type: "answerPing"; params: unknown }
  | { type: "notePong"; params: unknown }
  | { type: "noteBye"; params: unknown }
  | { type: "control"; params: unknown }
  | { type: "failFrame"; params: SendErrParams }
  | { type: "raisePeerErr"; params: unknown }
  | { type: "raisePeerBye"; params: { withReason: boolean } }
  | { type: "sendHello"; params: unknown }
  | { type: "sendAuth"; params: unknown }
  | { type: "sendResume"; params: unknown }
  | { type: "replay"; params: unknown }
  | { type: "opened"; params: unknown }
  | { type: "sendPing"; params: unknown }
  | { type: "sendBye"; params: unknown }
  | { type: "replyBye"; params: unknown }
  | { type: "sendErr"; params: SendErrParams }
  | { type: "closeTransport"; params: unknown }
  | { type: "countPing"; params: unknown }
  | { type: "startWait"; params: unknown }
  | { type: "resetMissed"; params: unknown }
  | { type: "setReason"; params: { reason: string } }
  | { type: "notePeerBye"; params: unknown };

/** The named guards of {@link connectionMachine}. */
export type ConnectionGuard =
  | { type: "isHello"; params: unknown }
  | { type: "isAuth"; params: unknown }
  | { type: "isResume"; params: unknown }
  | { type: "isAck"; params: unknown }
  | { type: "isPing"; params: unknown }
  | { type: "isPong"; params: unknown }
  | { type: "isBye"; params: unknown }
  | { type: "isErr"; params: unknown }
  | { type: "helloVersionBad"; params: unknown }
  | { type: "helloKeyBad"; params: unknown }
  | { type: "helloInvalid"; params: unknown }
  | { type: "helloOwnKey"; params: unknown }
  | { type: "forbiddenBeforeAuth"; params: unknown }
  | { type: "invalidCore"; params: unknown }
  | { type: "invalidOther"; params: unknown }
  | { type: "committed"; params: unknown }
  | { type: "controlLine"; params: unknown }
  | { type: "pingEnabled"; params: unknown }
  | { type: "resumePinging"; params: unknown }
  | { type: "twoMissed"; params: unknown }
  | { type: "heardWhileWaiting"; params: unknown }
  | { type: "closingCode"; params: unknown }
  | { type: "hasCode"; params: unknown };

/** The named delays of {@link connectionMachine}. */
export type ConnectionDelay =
  | "handshakeTimeout"
  | "resumeTimeout"
  | "byeTimeout"
  | "pingInterval"
  | "pingDue";

/** Every snapshot value {@link connectionMachine} can be in. */
export type ConnectionStateValue =
  | { handshake: "hello" | "auth" }
  | "resume"
  | { open: "off" | "idle" | "pinging" }
  | "closing"
  | "closed";

/**
 * The tag of the states where the host verifies their auth line (signature,
 * schema, admission) and sends the chart only the verdict, `AUTH_OK` or
 * `AUTH_REFUSED`.
 *
 * @example
 * ```ts
 * import { createActor } from "npm:xstate@^5.33.3";
 * import { connectionMachine, VERIFIES_AUTH } from "./connection_machine.ts";
 * const actor = createActor(connectionMachine, { input: {} }).start();
 * actor.send({ type: "HELLO_OK" });
 * console.log(actor.getSnapshot().hasTag(VERIFIES_AUTH)); // true
 * actor.stop();
 * ```
 */
export const VERIFIES_AUTH = "verifiesAuth";

/**
 * The type of {@link connectionMachine}, spelled out so the published API
 * does not depend on inference (JSR "no slow types").
 */
export type ConnectionMachine = StateMachine<
  ConnectionContext,
  ConnectionEvent,
  Record<string, never>,
  ProvidedActor,
  ConnectionAction,
  ConnectionGuard,
  ConnectionDelay,
  ConnectionStateValue,
  string,
  ConnectionInput,
  NonReducibleUnknown,
  EventObject,
  MetaObject,
  StateSchema
>;

/**
 * The connection statechart. Actions call the `host` of the input
 * (actors/connection.ts), or do nothing without one. Named delays: `handshakeTimeout`, `resumeTimeout`,
 * `byeTimeout`, `pingInterval`, read from `input.timeouts`; `pingDue`: liveness.ts.
 *
 * @example
 * ```ts
 * import { createActor } from "npm:xstate@^5.33.3";
 * import { connectionMachine } from "./connection_machine.ts";
 * const actor = createActor(connectionMachine, { input: {} }).start();
 * actor.send({ type: "HELLO_OK" });
 * console.log(actor.getSnapshot().value); // { handshake: "auth" }
 * actor.stop();
 * ```
 */
export const connectionMachine: ConnectionMachine = setup({
  types: {
    context: {} as ConnectionContext,
    events: {} as ConnectionEvent,
    input: {} as ConnectionInput,
  },
  actions: {
    acceptHello: ({ context, event }) =>
      context.host?.acceptHello(frameOf(event)),
    takeSessionRoutes: ({ context }) =>
      context.host?.sessionRoutes(SESSION_ROUTES),
    dropSessionRoutes: ({ context }) => context.host?.sessionRoutes(undefined),
    noteSeen: ({ context, event }) => context.host?.noteSeen(frameOf(event)),
    stage: ({ context, event }) => context.host?.stage(frameOf(event)),
    takeAck: ({ context, event }) => context.host?.takeAck(frameOf(event)),
    answerPing: ({ context, event }) =>
      context.host?.answerPing(frameOf(event)),
    notePong: ({ context, event }) => context.host?.notePong(frameOf(event)),
    noteBye: ({ context, event }) => context.host?.noteBye(frameOf(event)),
    control: ({ context, event }) => context.host?.control(frameOf(event)),
    /** Their line breaks the protocol: handled as a `FAIL`. */
    failFrame: raise((_, params: SendErrParams) => ({
      type: "FAIL" as const,
      ...params,
    })),
    /** Their err line, as a `PEER_ERR`. */
    raisePeerErr: raise(({ event }) => {
      const frame = frameOf(event);
      const detail = field(frame, "detail");
      return {
        type: "PEER_ERR" as const,
        code: String(field(frame, "code")),
        detail: typeof detail === "string" ? detail : undefined,
      };
    }),
    /** Their bye line, as a `PEER_BYE` (with its reason when asked). */
    raisePeerBye: raise(({ event }, params: { withReason: boolean }) => {
      const reason = field(frameOf(event), "reason");
      return params.withReason && typeof reason === "string"
        ? { type: "PEER_BYE" as const, reason }
        : { type: "PEER_BYE" as const };
    }),
    /** Write our hello (done before anything else). */
    sendHello: ({ context }) => context.host?.sendHello(),
    /** Sign the transcript and write our auth. */
    sendAuth: ({ context }) => context.host?.sendAuth(),
    /** Write our resume with what we have seen. */
    sendResume: ({ context }) => context.host?.sendResume(),
    /** Replay the outbox after their resume. */
    replay: ({ context }) => context.host?.replay(),
    /** The connection is established. */
    opened: ({ context }) => context.host?.opened(),
    /** Write a ping. */
    sendPing: ({ context }) => context.host?.sendPing(),
    /** Write our bye; nothing is written after it. */
    sendBye: ({ context, event }) =>
      context.host?.sendBye(event.type === "BYE" ? event.reason : undefined),
    /** Answer their bye with ours. */
    replyBye: ({ context }) => context.host?.replyBye(),
    /** Write an err line. */
    sendErr: ({ context }, params: SendErrParams) =>
      context.host?.sendErr(params),
    /** Flush what is queued (bounded) and close the transport. */
    closeTransport: ({ context }) =>
      context.host?.closeTransport(context.reason),
    countPing: assign({ missed: ({ context }) => context.missed + 1 }),
    startWait: ({ context }) => context.host?.startWait(),
    resetMissed: assign({ missed: 0 }),
    setReason: assign({
      reason: (_, params: { reason: string }) => params.reason,
    }),
    /** The close reason after the peer's bye, with its reason if it gave one. */
    notePeerBye: assign({
      reason: ({ event }) =>
        `peer said bye${
          event.type === "PEER_BYE" && event.reason ? `: ${event.reason}` : ""
        }`,
    }),
  },
  guards: {
    ...frameGuards,
    pingEnabled: ({ context }) => context.timeouts.pingInterval > 0,
    /** Their resume, on a connection that pings (open starts idle). */
    resumePinging: ({ context, event }) =>
      event.type === "FRAME" && event.frame.message.t === "resume" &&
      context.timeouts.pingInterval > 0,
    twoMissed: ({ context }) => context.missed >= 2,
    heardWhileWaiting,
    closingCode: ({ event }) =>
      event.type === "PEER_ERR" && CLOSING_ERROR_CODES.has(event.code),
    hasCode: ({ event }) => event.type === "FAIL" && event.code !== undefined,
  },
  delays: {
    handshakeTimeout: ({ context }) => context.timeouts.handshake,
    resumeTimeout: ({ context }) => context.timeouts.resume,
    byeTimeout: ({ context }) => context.timeouts.bye,
    pingInterval: ({ context }) => context.timeouts.pingInterval,
    pingDue,
  },
}).createMachine({
  id: "connection",
  context: ({ input }) => ({
    timeouts: { ...DEFAULT_TIMEOUTS, ...input.timeouts },
    ...(input.key !== undefined ? { key: input.key } : {}),
    ...(input.host ? { host: input.host } : {}),
    missed: 0,
    reason: "",
  }),
  initial: "handshake",
  // Valid in every non-final state unless a state overrides it.
  on: {
    END: {
      target: ".closed",
      actions: {
        type: "setReason",
        params: ({ event }) => ({ reason: event.reason }),
      },
    },
    CLOSE: {
      target: ".closed",
      actions: {
        type: "setReason",
        params: ({ event }) => ({ reason: event.reason }),
      },
    },
    FAIL: [
      {
        guard: "hasCode",
        target: ".closed",
        actions: [
          {
            type: "sendErr",
            params: ({ event }) => ({
              code: event.code ?? "internal",
              detail: event.detail,
              re: event.re,
            }),
          },
          {
            type: "setReason",
            params: ({ event }) => ({
              reason: `${event.code}: ${event.detail}`,
            }),
          },
        ],
      },
      {
        target: ".closed",
        actions: {
          type: "setReason",
          params: ({ event }) => ({ reason: event.detail }),
        },
      },
    ],
    PEER_ERR: {
      guard: "closingCode",
      target: ".closed",
      actions: {
        type: "setReason",
        params: ({ event }) => ({
          reason: `peer sent err ${event.code}${
            event.detail ? `: ${event.detail}` : ""
          }`,
        }),
      },
    },
  },
  states: {
    handshake: {
      initial: "hello",
      after: {
        handshakeTimeout: {
          target: "closed",
          actions: {
            type: "setReason",
            params: { reason: "handshake timeout" },
          },
        },
      },
      on: {
        // Lines no handshake state took: err and bye end it, a second
        // hello is a bad frame, session lines before auth are refused;
        // ping, pong, extensions and unknown types are ignored.
        FRAME: [
          { guard: "isErr", actions: "raisePeerErr" },
          {
            guard: "isBye",
            actions: { type: "raisePeerBye", params: { withReason: false } },
          },
          {
            guard: "isHello",
            actions: refuse("bad_frame", () => "a second hello"),
          },
          {
            guard: "forbiddenBeforeAuth",
            actions: refuse(
              "auth",
              (f) => `${f.message.t} before auth completed`,
            ),
          },
        ],
        // Before auth there is no session to close gracefully.
        BYE: {
          target: "closed",
          actions: {
            type: "setReason",
            params: ({ event }) => ({ reason: event.reason ?? "bye" }),
          },
        },
        PEER_BYE: {
          target: "closed",
          actions: {
            type: "setReason",
            params: ({ event }) => ({
              reason: `peer said bye during the handshake${
                event.reason ? `: ${event.reason}` : ""
              }`,
            }),
          },
        },
      },
      states: {
        hello: {
          entry: "sendHello",
          on: {
            HELLO_OK: { target: "auth", actions: "sendAuth" },
            // Their hello, checked in this order (SPEC 7, NOTES item 5).
            FRAME: [
              {
                guard: "helloVersionBad",
                actions: refuse(
                  "version",
                  () => `this peer speaks awp v${PROTOCOL_VERSION}`,
                ),
              },
              {
                guard: "helloKeyBad",
                actions: refuse(
                  "auth",
                  () => "hello key is not an ed25519 key",
                ),
              },
              {
                guard: "helloInvalid",
                actions: refuse(
                  "bad_frame",
                  (f) => `invalid hello: ${f.invalid}`,
                ),
              },
              {
                guard: "helloOwnKey",
                actions: refuse("auth", () => "hello carries our own key"),
              },
              {
                guard: "isHello",
                target: "auth",
                actions: ["acceptHello", "sendAuth"],
              },
            ],
          },
        },
        // Their auth is verified by the host before the chart hears it
        // (VERIFIES_AUTH); no line is read meanwhile (their resume may
        // follow at once). Only the verdict comes here.
        auth: {
          tags: [VERIFIES_AUTH],
          on: {
            AUTH_OK: { target: "#connection.resume", actions: "sendResume" },
            AUTH_REFUSED: {
              actions: {
                type: "failFrame",
                params: ({ event }) => {
                  const { type: _, ...refusal } = event;
                  return refusal;
                },
              },
            },
          },
        },
      },
    },
    resume: {
      entry: "takeSessionRoutes",
      exit: "dropSessionRoutes",
      after: {
        resumeTimeout: {
          target: "closed",
          actions: {
            type: "setReason",
            params: { reason: "no resume from the peer in time" },
          },
        },
      },
      // Straight into open's liveness state: idle when it pings, else off
      // (an eventless choice inside open cost every handshake a microstep).
      on: {
        RESUME: [
          { guard: "pingEnabled", target: "open.idle", actions: "replay" },
          { target: "open.off", actions: "replay" },
        ],
        FRAME: [
          ...SCHEMA,
          {
            guard: "resumePinging",
            target: "open.idle",
            actions: ["noteSeen", "replay"],
          },
          {
            guard: "isResume",
            target: "open.off",
            actions: ["noteSeen", "replay"],
          },
          ...TRAFFIC,
        ],
        BYE: "closing",
        PEER_BYE: { target: "closed", actions: ["replyBye", "notePeerBye"] },
      },
    },
    // Entered only from resume, which targets idle or off itself; `off`
    // as the default is the safe one (never a ping at interval 0).
    open: {
      initial: "off",
      entry: ["opened", "takeSessionRoutes"],
      exit: "dropSessionRoutes",
      on: {
        FRAME: [...SCHEMA, ...TRAFFIC],
        BYE: "closing",
        PEER_BYE: { target: "closed", actions: ["replyBye", "notePeerBye"] },
      },
      states: {
        off: {},
        idle: {
          entry: "startWait",
          after: {
            pingDue: [
              { guard: "heardWhileWaiting", target: "idle", reenter: true },
              { target: "pinging" },
            ],
          },
        },
        pinging: {
          entry: ["countPing", "sendPing", "startWait"],
          on: { PONG: { target: "idle", actions: "resetMissed" } },
          after: {
            pingInterval: [
              {
                guard: "heardWhileWaiting",
                target: "idle",
                actions: "resetMissed",
              },
              {
                guard: "twoMissed",
                target: "#connection.closed",
                actions: {
                  type: "setReason",
                  params: { reason: "dead: two pings without a pong" },
                },
              },
              { target: "pinging", reenter: true },
            ],
          },
        },
      },
    },
    closing: {
      entry: "sendBye",
      after: {
        byeTimeout: {
          target: "closed",
          actions: {
            type: "setReason",
            params: { reason: "bye: no answer in time" },
          },
        },
      },
      on: {
        PEER_BYE: {
          target: "closed",
          actions: { type: "setReason", params: { reason: "bye" } },
        },
        // After our bye we send nothing, so we take no content either:
        // unacked, it is replayed on the next connection.
        FRAME: [
          {
            guard: "isBye",
            actions: [
              "noteBye",
              { type: "raisePeerBye", params: { withReason: false } },
            ],
          },
          { guard: "isErr", actions: "raisePeerErr" },
        ],
        // After bye we send nothing else: no err either.
        FAIL: {
          target: "closed",
          actions: {
            type: "setReason",
            params: ({ event }) => ({ reason: event.detail }),
          },
        },
        BYE: {},
      },
    },
    closed: {
      type: "final",
      entry: "closeTransport",
    },
  },
});

/**
 * The protocol name of a snapshot value: the leaf state that matters
 * ("hello", "auth", "resume", "open", "closing" or "closed").
 *
 * @example
 * ```ts
 * import { stateName } from "./connection_machine.ts";
 * console.log(stateName({ handshake: "auth" })); // "auth"
 * console.log(stateName({ open: "idle" })); // "open"
 * ```
 */
export function stateName(value: unknown): string {
  if (typeof value === "string") return value;
  if (value !== null && typeof value === "object") {
    if ("handshake" in value) {
      const step = (value as { handshake: unknown }).handshake;
      return typeof step === "string" ? step : "auth";
    }
    if ("open" in value) return "open";
    const [first] = Object.keys(value);
    if (first !== undefined) return first;
  }
  return String(value);
}
