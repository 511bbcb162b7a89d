/**
 * The shapes the daemon answers control requests with, shared by the
 * daemon ({@link ./daemon.ts}) and the commands ({@link ./commands.ts}).
 *
 * @module
 */

import type { ProgressEvent } from "../peer/peer_events.ts";

/** One known peer as `peers` and `status` list it. */
export interface PeerSummary {
  key: string;
  name?: string;
  alias?: string;
  about?: string;
  connected: boolean;
  /** Not connected; the last dial hit a sleeping host's HTTP front (ws:/wss:). */
  waking?: boolean;
  addresses: string[];
  /** Unacked outbox lines. */
  queued: number;
  /** Threads not done, failed or closed. */
  openThreads: number;
  unread: number;
  /** Capabilities this peer holds on us (grants we issued it, unexpired). */
  caps: string[];
  /** While the daemon keeps failing to dial it: since when, and why. */
  unreachable?: { since: string; error?: string };
}

/** The daemon's `status`. */
export interface StatusResult {
  key: string;
  name?: string;
  home: string;
  pid: number;
  /** Addresses we listen on, to share. */
  addrs: string[];
  peers: PeerSummary[];
  unread: number;
  notices: number;
  queued: number;
  /** The live inspector's URL, when the daemon serves it. */
  inspector?: string;
  /** The dashboard's URL, when the daemon serves it. */
  web?: string;
}

/** What `send` and `state` answer. */
export interface SendResult {
  id: string;
  th: string;
  /** Same as `th` (the reference prints both). */
  thread: string;
  peer: string;
  acked: boolean;
  connected: boolean;
  /** A note about unread messages in the thread, if any. */
  note?: string;
  /** The blobs this send carries (for the progress bar). */
  blobs?: Array<{ ref: string; size: number; name?: string }>;
}

/**
 * One item of the inbox stream (tail, wait, listen, read): a message, a
 * state change, a notice (bye, grant, introduce, blob, error), a line we
 * sent (`dir: "out"`), or a connection event.
 */
export interface InboxItem {
  event: "message" | "state" | "notice" | "connected" | "disconnected";
  dir: "in" | "out";
  peer: string;
  peerName?: string;
  ts: string;
  id?: string;
  th?: string;
  subject?: string;
  re?: string;
  text?: string;
  parts?: unknown[];
  blobs?: unknown[];
  state?: string;
  note?: string;
  /** For notices: what kind (bye, grant, introduced, blob, error). */
  kind?: string;
  detail?: string;
}

/** What `wait` answers. */
export interface WaitResult {
  items: InboxItem[];
  timedOut: boolean;
  /** Under `--state`: whether the waited-for state was reached. */
  matched?: boolean;
  /** Under `--state`: the peer's state on the thread now. */
  state?: string;
}

/**
 * A blob transfer's progress, streamed to `send` (outgoing) and to `tail`
 * and `wait` (incoming) when they draw a progress bar.
 */
export type ProgressItem = Omit<ProgressEvent, "type"> & { event: "progress" };

/** What `request` answers: the result of an exec, fs:read or fs:write request. */
export interface RequestResult {
  /** The request msg's id. */
  id: string;
  th: string;
  peer: string;
  /** exec, fs:read or fs:write. */
  cap: string;
  /** True when a result came back without an error. */
  ok: boolean;
  /** The result part's data (exit, stdout, ... for exec). */
  result?: Record<string, unknown>;
  /** The reply msg as an inbox item (its blobs carry full output). */
  reply?: InboxItem;
  /** Why it failed: the result's error, or the remote's err (forbidden). */
  error?: string;
  /** No answer within the timeout (it may still come, in the thread). */
  timedOut?: boolean;
}

/** One thread as the `threads` op lists it. */
export interface ThreadRow {
  peer: string;
  peerName?: string;
  th: string;
  subject?: string;
  mine?: { state: string; ts: string };
  theirs?: { state: string; ts: string };
  unread: number;
  /** RFC 3339 local time of the last change. */
  updated: string;
  /** The peer refused a request in this thread (its `err`, e.g. "forbidden: ..."). */
  refused?: string;
}
