/**
 * The shapes the dashboard's server sends its page: the snapshot, the live
 * events and the conversation. Shared by the server ({@link ./dashboard_feed.ts})
 * and the page (`web/app/`), which imports them as types only.
 *
 * @module
 */

import type { ThreadRow } from "../cli/protocol.ts";

/** This peer. */
export interface SelfInfo {
  key: string;
  name?: string;
  /** Addresses it listens on. */
  addrs: string[];
}

/** A known peer as the Network view draws it. */
export interface NetPeer {
  key: string;
  name?: string;
  alias?: string;
  about?: string;
  connected: boolean;
  addresses: string[];
  /** Capabilities the peer announced in its hello. */
  caps: string[];
  /** Capabilities it holds on us (grants we issued, unexpired). */
  granted: string[];
  /** Last round trip, ms, while connected. */
  rtt?: number;
  queued: number;
  unread: number;
  openThreads: number;
  /** ms since the epoch. */
  lastSeen: number;
}

/** A presence document heard through gossip. */
export interface PresenceDoc {
  origin: string;
  name?: string;
  about?: string;
  harness?: string;
  model?: string;
  host?: string;
  hops: number;
  /** The peer it came through. */
  via: string;
  unread?: number;
  outbox?: number;
  waiting?: boolean;
  /** Its own peers, for edges of the graph. */
  peers: Array<{ key: string; name?: string; up?: boolean }>;
  /** ms since it arrived. */
  age_ms: number;
}

/** One thread as the Threads view lists it (as the daemon's `threads` op). */
export type { ThreadRow };

/** A blob transfer, in flight or finished. */
export interface Transfer {
  peer: string;
  peerName?: string;
  dir: "in" | "out";
  ref: string;
  name?: string;
  th?: string;
  bytes: number;
  /** -1 while unknown. */
  total: number;
  /** Bytes per second over the current run; 0 when unknown or finished. */
  rate: number;
  /** queued, sending, awaitingAck, receiving, active, done, complete, refused, failed. */
  status: string;
  /** ms since the epoch. */
  updated: number;
}

/** One traffic-log line. */
export interface ActivityLine {
  /** ms since the epoch. */
  at: number;
  peer: string;
  dir: "in" | "out";
  t: string;
  id?: string;
  th?: string;
  /** The line as on the wire (chunk data elided), clipped. */
  line: string;
}

/** Everything the page needs to draw, sent first on each stream. */
export interface Snapshot {
  self: SelfInfo;
  /** The page may send, set states and grant (`--write`). */
  write: boolean;
  peers: NetPeer[];
  presence: PresenceDoc[];
  threads: ThreadRow[];
  transfers: Transfer[];
  /** Newest last. */
  activity: ActivityLine[];
}

/** A thread changed: a page showing it fetches it again. */
export interface ThreadTouch {
  peer: string;
  th: string;
}

/** The live events, by SSE event name. */
export interface DashboardEvents {
  snapshot: Snapshot;
  peers: NetPeer[];
  presence: PresenceDoc[];
  threads: ThreadRow[];
  transfer: Transfer;
  line: ActivityLine;
  touch: ThreadTouch;
}

/** A blob a msg carries, with where it stands here. */
export interface ConversationBlob {
  ref: string;
  name?: string;
  mime?: string;
  size: number;
  /** active, complete, refused, failed, or missing. */
  status: string;
  /** Set when the bytes can be downloaded from the dashboard. */
  download?: string;
}

/** One msg or state line of a conversation. */
export interface ConversationItem {
  kind: "msg" | "state";
  dir: "in" | "out";
  id: string;
  ts: string;
  re?: string;
  subject?: string;
  parts?: Array<Record<string, unknown>>;
  blobs?: ConversationBlob[];
  state?: string;
  note?: string;
  /** Ours only: in the outbox and not written yet, written, or acked. */
  delivery?: "queued" | "sent" | "acked";
}

/** `/api/conversation`'s answer. */
export interface Conversation {
  peer: string;
  peerName?: string;
  th: string;
  subject?: string;
  items: ConversationItem[];
}
