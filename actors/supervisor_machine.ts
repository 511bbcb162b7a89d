/**
 * The supervisor's own statechart: lifecycle (running, stopping, stopped),
 * counts, and which connection to a key is kept when a second one
 * authenticates (the smaller-key rule of NOTES item 4); and the events the
 * supervisor reports. Connections are not its children (see
 * actors/supervisor.ts for why), so its snapshot stays O(1).
 *
 * @module
 */

import {
  type AnyActorRef,
  assign,
  type InspectionEvent,
  type Observer,
  setup,
} from "npm:xstate@^5.33.3";

/** What the supervisor reports. */
export type SupervisorEvent =
  | { type: "listening"; addr: string }
  | {
    type: "connected";
    peer: string;
    name?: string;
    /** The remote's hello.about. */
    about?: string;
    /** The remote's hello.caps. */
    caps: string[];
    dialed: boolean;
    remoteAddr: string;
  }
  | { type: "disconnected"; peer: string; reason: string }
  | { type: "replaced"; peer: string }
  | { type: "duplicate"; peer: string; kept: "dialed" | "accepted" }
  | { type: "closed"; peer?: string; remoteAddr: string; reason: string }
  | {
    type: "dial_failed";
    peer: string;
    address: string;
    attempt: number;
    error: string;
  }
  | { type: "dialer"; peer: string; state: string; attempt: number }
  | { type: "handler_error"; peer: string; t: string; error: string }
  | { type: "connection_failed"; peer?: string; error: string };

/**
 * Where actors are shown when inspection is on: `InspectionHub` from
 * inspector/inspection_hub.ts fits (structural, so actors/ need not import
 * the inspector).
 */
export interface ActorInspection {
  /** Passed as `createActor(logic, { inspect })`. */
  readonly observer: Observer<InspectionEvent>;
  /** Names an actor and its logical parent in the tree. */
  register(
    actor: AnyActorRef,
    options?: { kind?: string; label?: string; parentId?: string },
  ): void;
}

/**
 * The supervisor's counts: the chart keeps all but `connections` (the
 * supervisor's own set of them: a chart step per connection opened and
 * closed cost more than the count is worth).
 */
export interface SupervisorCounts {
  /** Connections alive (any state). */
  connections: number;
  /** Peers with an active (authenticated) connection. */
  active: number;
  /** Listeners open. */
  listeners: number;
  /** Child failures survived (actor errors, throwing handlers). */
  failures: number;
}

/** A connection to `peer` as the chart weighs it: who dialed it, since when active. */
export interface Contender<C> {
  conn: C;
  /** The key of the side that dialed it. */
  dialedBy: string;
  /** When it became the peer's active connection (ms since the epoch). */
  since?: number;
}

/**
 * A connection authenticated: `other` is the peer's active connection, if
 * another one is. Within `windowMs` of `other` becoming active, the one
 * dialed by the smaller key stays (a simultaneous open, NOTES item 4);
 * later, the new one replaces it (the remote reconnected).
 */
export interface Authenticated<C> {
  type: "AUTHENTICATED";
  peer: string;
  conn: Contender<C>;
  other?: Contender<C>;
  at: number;
  windowMs: number;
}

/** What the chart's actions ask of the supervisor. */
export interface SupervisorHost<C> {
  /** `conn` is now the peer's active connection. */
  activate(peer: string, conn: C, at: number): void;
  /** `conn` loses to the peer's active one (simultaneous open): closed. */
  closeDuplicate(peer: string, conn: C, kept: C): void;
  /** The peer's active `conn` is replaced by a newer one: closed. */
  closeReplaced(peer: string, conn: C): void;
  /** We are stopping: `conn` is closed. */
  refuse(conn: C): void;
}

/** Events of {@link supervisorMachine}. */
export type SupervisorMachineEvent =
  | Authenticated<unknown>
  | { type: "LISTENING" }
  | { type: "LISTENER_CLOSED" }
  | { type: "FAILURE" }
  | { type: "STOP" }
  | { type: "STOPPED" };

/**
 * The supervisor's own chart: lifecycle, one active connection per key,
 * listeners, failures (see actors/supervisor.ts for why connections are not
 * its children). Open connections and active peers are counted by the
 * supervisor's own set and map, not here: a chart step per connection
 * closed cost each handshake ~10 KiB of garbage and a step, measured.
 *
 * @example
 * ```ts
 * import { createActor } from "npm:xstate@^5.33.3";
 * import { supervisorMachine } from "./supervisor_machine.ts";
 * const a = createActor(supervisorMachine).start();
 * a.send({ type: "LISTENING" });
 * console.assert(a.getSnapshot().context.listeners === 1);
 * a.stop();
 * ```
 */
export const supervisorMachine = setup({
  types: {
    context: {} as
      & Omit<SupervisorCounts, "connections" | "active">
      & { host?: SupervisorHost<unknown> },
    input: {} as { host?: SupervisorHost<unknown> } | undefined,
    events: {} as
      | SupervisorMachineEvent
      | { type: `xstate.error.actor.${string}`; error: unknown },
  },
  guards: {
    /** Simultaneous open: the other one is recent and dialed by the smaller key. */
    otherKeptBySmallerKey: ({ event }) => {
      const e = event as Authenticated<unknown>;
      return e.other !== undefined && e.other.since !== undefined &&
        e.at - e.other.since < e.windowMs &&
        e.other.dialedBy < e.conn.dialedBy;
    },
    /** Another connection to the peer is active: the new one replaces it. */
    replacesOther: ({ event }) =>
      (event as Authenticated<unknown>).other !== undefined,
  },
  actions: {
    countFailure: assign({ failures: ({ context }) => context.failures + 1 }),
    closeDuplicate: ({ context, event }) => {
      const e = event as Authenticated<unknown>;
      context.host?.closeDuplicate(e.peer, e.conn.conn, e.other!.conn);
    },
    closeReplaced: ({ context, event }) => {
      const e = event as Authenticated<unknown>;
      context.host?.closeReplaced(e.peer, e.other!.conn);
    },
    activate: ({ context, event }) => {
      const e = event as Authenticated<unknown>;
      context.host?.activate(e.peer, e.conn.conn, e.at);
    },
    refuse: ({ context, event }) => {
      context.host?.refuse((event as Authenticated<unknown>).conn.conn);
    },
  },
}).createMachine({
  id: "supervisor",
  context: ({ input }) => ({
    listeners: 0,
    failures: 0,
    host: input?.host,
  }),
  initial: "running",
  on: {
    LISTENING: {
      actions: assign({ listeners: ({ context }) => context.listeners + 1 }),
    },
    LISTENER_CLOSED: {
      actions: assign({ listeners: ({ context }) => context.listeners - 1 }),
    },
    FAILURE: { actions: "countFailure" },
    // A failing child never takes the supervisor down.
    "xstate.error.actor.*": { actions: "countFailure" },
  },
  states: {
    running: {
      on: {
        STOP: "stopping",
        // One active connection per key.
        AUTHENTICATED: [
          { guard: "otherKeptBySmallerKey", actions: "closeDuplicate" },
          {
            guard: "replacesOther",
            actions: ["closeReplaced", "activate"],
          },
          { actions: "activate" },
        ],
      },
    },
    stopping: {
      on: { STOPPED: "stopped", AUTHENTICATED: { actions: "refuse" } },
    },
    stopped: { type: "final" },
  },
});

/**
 * Whether the chart, in `snapshot`, answers `event` with its last
 * AUTHENTICATED branch alone (running, no other active connection to the
 * peer: `activate`). The supervisor then calls `activate` itself instead
 * of a chart step (~7 KiB of garbage and a step per handshake, measured);
 * every contended or late AUTHENTICATED still goes through the chart.
 * tests/actors/supervisor_machine_test.ts checks this against the chart in
 * each of its states.
 *
 * @example
 * ```ts
 * import { createActor } from "npm:xstate@^5.33.3";
 * import { activatesWithoutStep, supervisorMachine } from "./supervisor_machine.ts";
 * const a = createActor(supervisorMachine).start();
 * const event = {
 *   type: "AUTHENTICATED" as const,
 *   peer: "P",
 *   conn: { conn: 1, dialedBy: "A" },
 *   at: 0,
 *   windowMs: 5_000,
 * };
 * console.log(activatesWithoutStep(a.getSnapshot(), event)); // true
 * a.stop();
 * ```
 */
export function activatesWithoutStep(
  snapshot: { status: string; value: unknown },
  event: Authenticated<unknown>,
): boolean {
  return snapshot.status === "active" && snapshot.value === "running" &&
    event.other === undefined;
}
