/**
 * Converts the hub's events to the message shapes of `@statelyai/inspect`
 * (what its `createWebSocketInspector` sends over its WebSocket), so Stately's
 * inspector can show our actors.
 *
 * @module
 */

import type { ActorInfo, HubEvent, InspectionHub } from "./inspection_hub.ts";
import type { JsonValue } from "./to_json_safe.ts";

/** The `@statelyai/inspect` version whose message shapes these follow. */
export const STATELY_PROTOCOL_VERSION = "0.7.0";

/** Fields every Stately inspection event carries. */
export interface StatelyBase {
  /** Session id of the actor the event is about. */
  sessionId: string;
  /** Session id of the root actor of its system. */
  rootId: string | undefined;
  /** Milliseconds since the epoch, as a string (their format). */
  createdAt: string;
  /** A unique id for this event. */
  id: string;
  /** The inspection protocol version. */
  _version: string;
}

/** An actor came to life (`@xstate.actor`). */
export interface StatelyActorEvent extends StatelyBase {
  /** Always `@xstate.actor`. */
  type: "@xstate.actor";
  /** The actor's id. */
  name: string;
  /** Session id of the parent actor, if any. */
  parentId: string | undefined;
  /** The machine config as a JSON string. */
  definition: string | undefined;
  /** The actor's first snapshot, made JSON-safe. */
  snapshot: { [key: string]: JsonValue };
}

/** An actor received an event (`@xstate.event`). */
export interface StatelyEventEvent extends StatelyBase {
  /** Always `@xstate.event`. */
  type: "@xstate.event";
  /** The event, made JSON-safe. */
  event: JsonValue;
  /** Session id of the sender, when known. */
  sourceId: string | undefined;
}

/** An actor has a new snapshot (`@xstate.snapshot`). */
export interface StatelySnapshotEvent extends StatelyBase {
  /** Always `@xstate.snapshot`. */
  type: "@xstate.snapshot";
  /** The event that caused the snapshot. */
  event: JsonValue;
  /** The new snapshot, made JSON-safe. */
  snapshot: { [key: string]: JsonValue };
}

/** Any message of the Stately WebSocket inspector. */
export type StatelyInspectionEvent =
  | StatelyActorEvent
  | StatelyEventEvent
  | StatelySnapshotEvent;

/**
 * The Stately message for one hub event, or `undefined` for events Stately
 * has no shape for (emitted events, removals).
 *
 * @example
 * ```ts
 * import { createActor, createMachine } from "npm:xstate@^5.33.3";
 * import { InspectionHub } from "./inspection_hub.ts";
 * import { toStatelyEvent } from "./to_stately_event.ts";
 * const hub = new InspectionHub();
 * const seen: string[] = [];
 * hub.subscribe((e) => {
 *   const s = toStatelyEvent(hub, e);
 *   if (s) seen.push(s.type);
 * });
 * createActor(createMachine({ id: "m" }), { inspect: hub.observer }).start();
 * console.log(seen); // ["@xstate.actor", "@xstate.event", "@xstate.snapshot"]
 * ```
 */
export function toStatelyEvent(
  hub: InspectionHub,
  event: HubEvent,
): StatelyInspectionEvent | undefined {
  switch (event.type) {
    case "actor":
      return statelyActor(hub, event.actor);
    case "event":
      return {
        type: "@xstate.event",
        event: event.event,
        sourceId: event.source,
        ...base(hub, event.id, event.t),
      };
    case "snapshot": {
      const snapshot: { [key: string]: JsonValue } = { status: event.status };
      if (event.value !== undefined) snapshot.value = event.value;
      if (event.context !== undefined) snapshot.context = event.context;
      return {
        type: "@xstate.snapshot",
        event: event.event,
        snapshot,
        ...base(hub, event.id, event.t),
      };
    }
    default:
      return undefined;
  }
}

/**
 * The `@xstate.actor` message for an actor as it is now, used to replay the
 * actor tree to a newly connected Stately client.
 *
 * @example
 * ```ts
 * import { InspectionHub } from "./inspection_hub.ts";
 * import { statelyActor } from "./to_stately_event.ts";
 * const hub = new InspectionHub();
 * console.log(hub.actors().map((a) => statelyActor(hub, a))); // []
 * ```
 */
export function statelyActor(
  hub: InspectionHub,
  actor: ActorInfo,
): StatelyActorEvent {
  const snapshot: { [key: string]: JsonValue } = { status: actor.status };
  if (actor.value !== undefined) snapshot.value = actor.value;
  const definition = actor.machine
    ? hub.machineConfig(actor.machine)
    : JSON.stringify({ id: actor.name });
  return {
    type: "@xstate.actor",
    name: actor.label,
    parentId: actor.parentId,
    definition,
    snapshot,
    ...base(hub, actor.id, actor.updatedAt),
  };
}

function base(hub: InspectionHub, sessionId: string, t: number): StatelyBase {
  const actor = hub.actor(sessionId);
  return {
    sessionId,
    rootId: actor?.rootId ?? sessionId,
    createdAt: String(t),
    id: crypto.randomUUID(),
    _version: STATELY_PROTOCOL_VERSION,
  };
}
