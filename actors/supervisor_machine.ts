/**
 * The supervisor's own statechart: lifecycle (running, stopping, stopped)
 * and counts only; and the events the supervisor reports. Connections are not its children (see
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

/** Counts the supervisor's chart keeps. */
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

/** Events of {@link supervisorMachine}. */
export type SupervisorMachineEvent =
  | { type: "CONNECTION_STARTED" }
  | { type: "CONNECTION_ENDED" }
  | { type: "ACTIVATED" }
  | { type: "DEACTIVATED" }
  | { type: "LISTENING" }
  | { type: "LISTENER_CLOSED" }
  | { type: "FAILURE" }
  | { type: "STOP" }
  | { type: "STOPPED" };

/**
 * The supervisor's own chart: lifecycle and counts only (see actors/supervisor.ts
 * for why connections are not its children).
 *
 * @example
 * ```ts
 * import { createActor } from "npm:xstate@^5.33.3";
 * import { supervisorMachine } from "./supervisor_machine.ts";
 * const a = createActor(supervisorMachine).start();
 * a.send({ type: "CONNECTION_STARTED" });
 * console.assert(a.getSnapshot().context.connections === 1);
 * a.stop();
 * ```
 */
export const supervisorMachine = setup({
  types: {
    context: {} as SupervisorCounts,
    events: {} as
      | SupervisorMachineEvent
      | { type: `xstate.error.actor.${string}`; error: unknown },
  },
  actions: {
    countFailure: assign({ failures: ({ context }) => context.failures + 1 }),
  },
}).createMachine({
  id: "supervisor",
  context: { connections: 0, active: 0, listeners: 0, failures: 0 },
  initial: "running",
  on: {
    CONNECTION_STARTED: {
      actions: assign({
        connections: ({ context }) => context.connections + 1,
      }),
    },
    CONNECTION_ENDED: {
      actions: assign({
        connections: ({ context }) => context.connections - 1,
      }),
    },
    ACTIVATED: {
      actions: assign({ active: ({ context }) => context.active + 1 }),
    },
    DEACTIVATED: {
      actions: assign({ active: ({ context }) => context.active - 1 }),
    },
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
    running: { on: { STOP: "stopping" } },
    stopping: { on: { STOPPED: "stopped" } },
    stopped: { type: "final" },
  },
});
