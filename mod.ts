/**
 * @awp/peer: an Agent Wire Protocol (draft 1, protocol v0) peer for Deno.
 *
 * The library API is {@link Peer}; the wire types, constructors and
 * constants are exported for building and reading lines by hand.
 *
 * @example
 * ```ts
 * import { Peer } from "jsr:@awp/peer";
 * const a = await Peer.open({ memory: true });
 * const b = await Peer.open({ memory: true });
 * await b.connect(await a.listen("tcp:127.0.0.1:0"));
 * const { id } = await b.send(a.key, "hello");
 * await b.waitAck(id, { timeoutMs: 5000 });
 * await b.close();
 * await a.close();
 * ```
 *
 * @module
 */

export {
  type ConnectOptions,
  type GrantOptions,
  type IntroduceOptions,
  Peer,
  type PeerInfo,
  type PeerOptions,
  type SendFile,
  type SendOptions,
  type Sent,
} from "./peer/peer.ts";
export type {
  Direction,
  GrantKind,
  GrantRecord,
  LogEntry,
  LogQuery,
  PeerRecord,
  SideState,
  Store,
  ThreadPatch,
  ThreadRecord,
} from "./storage/store.ts";
export type {
  BlobRecord,
  OutboxDraft,
  OutboxEntry,
  OutboxRecords,
  Queued,
} from "./storage/store.ts";
export type {
  ChunkSource,
  IncomingLine,
  ReceiveOutcome,
} from "./storage/store.ts";
export type { RemoteHello } from "./actors/connection.ts";
export type { PeerConfig } from "./actors/peer_config.ts";
export type {
  ReceivedRecords,
  ReceiveExtras,
  RequestRecord,
} from "./storage/store.ts";
export type { ConnectionLimits } from "./net/connection_gate.ts";
export type { UnfinishedBlobLimits } from "./peer/peer_blobs.ts";
export type { ConnectionTimeouts } from "./actors/connection_machine.ts";
export type { DialerTiming } from "./actors/dialer_machine.ts";
export type { AdmissionMode } from "./peer/policy.ts";
export type { ProfileCap, ServeRecord } from "./profile/profile.ts";
export type { PresenceInfo } from "./extensions/peer_extensions.ts";
export type { PresenceRecord } from "./extensions/presence_gossip.ts";
export type { MirroredLine, MirroredThread } from "./extensions/mirror.ts";
export type { SignedPresence } from "./wire/presence.ts";
// Types only: the SAMVAD module (ajv, jose) loads on the first peer.samvad().
export type {
  ForwardRequest,
  SamvadAgent,
  SamvadOptions,
} from "./samvad/samvad_agent.ts";
export type {
  BridgeOptions,
  BridgePeer,
  SamvadBridge,
} from "./samvad/bridge.ts";
export type { BridgeConfig } from "./samvad/bridge_config.ts";
export type { AgentCard, CardKey, SkillDef } from "./samvad/card.ts";
export type { CallOptions, StreamEvent, TaskRecord } from "./samvad/client.ts";
export type { DelegationOptions } from "./samvad/delegation.ts";
export type { RateLimit } from "./samvad/rate_limiter.ts";
export type {
  ERROR_STATUS,
  RequestEnvelope,
  ResponseEnvelope,
  SamvadError,
  SamvadErrorBody,
  SamvadErrorCode,
  SamvadMode,
} from "./samvad/envelope.ts";
export type {
  ActorInfo,
  ActorStatus,
  HubEmittedEvent,
  HubEvent,
  HubEventEvent,
  HubSnapshotEvent,
  InspectableActor,
  InspectedEvent,
  InspectionHub,
  InspectObserver,
  LogEntry as InspectorLogEntry,
  Progress,
  RegisterOptions,
} from "./inspector/inspection_hub.ts";
export type { JsonValue } from "./inspector/to_json_safe.ts";
export * from "./peer/peer_events.ts";
export * from "./wire/types.ts";
export * from "./wire/messages.ts";
export { parseLine, type ParseResult } from "./wire/parse.ts";
export { validateMessage, type ValidationResult } from "./wire/validate.ts";
export { encodeLine, LineTooLargeError, MAX_LINE_BYTES } from "./wire/frame.ts";
export {
  grantHash,
  type GrantVerdict,
  mintGrant,
  verifyGrant,
} from "./wire/grant.ts";
export { isKey, KEY_PREFIX, Signer, verify } from "./wire/keys.ts";
export {
  type Address,
  AddressError,
  formatAddress,
  parseAddress,
  type WebSocketAddress,
} from "./wire/address.ts";
export { timestamp } from "./wire/time.ts";
export { bind, BoundSocket } from "./net/transport.ts";
export {
  HomeNotDirectoryError,
  StoreDamagedError,
  StorePermissionsError,
  StoreUnavailableError,
} from "./storage/open_store.ts";
export {
  BlobSourceError,
  BlobTooLargeError,
  DEFAULT_MAX_BLOB_BYTES,
} from "./storage/spool.ts";

// ---- CLI: `deno run -A mod.ts` runs cli/main.ts (loaded only when run, so
// importing the library does not pull in the CLI) ----
if (import.meta.main) {
  const { main } = await import("./cli/main.ts");
  Deno.exit(await main(Deno.args));
}
