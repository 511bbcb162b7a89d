/**
 * The inspector: every actor's statechart, live, in a local web page.
 *
 * Give a {@link InspectionHub} to `Peer.open({ inspect })`, then serve it
 * with {@link serveInspector}. Kept apart from the main entry so that the
 * library does not load Graphviz unless asked.
 *
 * @example
 * ```ts ignore
 * import { Peer } from "jsr:@awp/peer";
 * import { InspectionHub, serveInspector } from "jsr:@awp/peer/inspector";
 * const hub = new InspectionHub();
 * const peer = await Peer.open({ memory: true, inspect: hub });
 * const server = await serveInspector(hub);
 * console.log(`inspector at ${server.url}`);
 * ```
 *
 * @module
 */

export {
  type ActorInfo,
  type ActorStatus,
  type HubEmittedEvent,
  type HubEvent,
  type HubEventEvent,
  type HubSnapshotEvent,
  type InspectableActor,
  type InspectedEvent,
  InspectionHub,
  type InspectionHubOptions,
  type InspectObserver,
  type LogEntry,
  type Progress,
  type RegisterOptions,
} from "./inspection_hub.ts";
export {
  type InspectorServer,
  type InspectorServerOptions,
  serveInspector,
} from "./server.ts";
export type { JsonValue } from "./to_json_safe.ts";
