/**
 * {@link PeerOptions}, the options of `Peer.open`, and their checks: the
 * one-line TypeErrors for bad values, the default caps, and the
 * directories no served request may reach.
 *
 * @module
 */

import type { PeerConfig } from "../actors/peer_config.ts";
import type { InspectionHub } from "../inspector/inspection_hub.ts";
import type { PresenceInfo } from "../extensions/peer_extensions.ts";
import { SERVABLE_CAPS } from "../profile/profile.ts";
import { isKey } from "../wire/keys.ts";
import type { UnfinishedBlobLimits } from "./peer_blobs.ts";
import type { AdmissionMode } from "./policy.ts";

/**
 * Options of `Peer.open`: the {@link PeerConfig} every layer shares
 * (hello fields, timeouts, bounds, `admit`, which is asked after the
 * admission policy `accept` admitted a peer), and the peer's own.
 */
export interface PeerOptions extends PeerConfig {
  /** The awp home: store at `${home}/awp.kv`, `spool/` and `blobs/` beside it. */
  home?: string;
  /** Ephemeral: in-memory store, spool and blobs in a temp dir removed on close. */
  memory?: boolean;
  /**
   * A remote Deno KV (KV Connect URL, token in `DENO_KV_ACCESS_TOKEN`) to
   * hold the state instead of `${home}/awp.kv`; spool and blobs stay in
   * `home`.
   */
  url?: string;
  /** Most traffic-log entries the store keeps (default 100,000). */
  maxLogEntries?: number;
  /** Most traffic-log bytes the store keeps (default 256 MiB, `--max-log-bytes`). */
  maxLogBytes?: number;
  /**
   * Bounds on unfinished incoming blobs: bytes per peer and in total, and
   * how long one may sit without a chunk (README "Limits").
   */
  unfinishedBlobs?: UnfinishedBlobLimits;
  /** Largest blob we send or accept, in bytes (default 50 MiB). */
  maxBlobBytes?: number;
  /** Chunk payload size in bytes (default 256 KiB). */
  chunkSize?: number;
  /** Keys whose grants we honor as our own (`--trust KEY`). */
  trust?: string[];
  /**
   * Admission: "any" (default; every new key is reported) or "allowlist"
   * (allowed and trusted keys, keys we dialed, keys presenting a grant we
   * honor). A refusal is `err auth` with a detail, then close.
   */
  accept?: AdmissionMode;
  /** Keys admitted under the allowlist (`--allow KEY`). */
  allow?: string[];
  /**
   * Profile capabilities this peer performs itself for senders holding
   * them: exec, fs:read, fs:write (`--serve`). None by default.
   */
  serve?: string[];
  /**
   * The root exec and fs requests are confined to (`--root`). Required to
   * serve fs:read or fs:write; exec runs in the working directory without
   * it. The awp home is never served, whatever the root.
   */
  root?: string;
  /** Environment variables exec passes on beyond the minimal set (`--exec-env-pass`). */
  execEnvPass?: string[];
  /** Exec timeout override in ms (tests; requests say `timeout` in s). */
  execTimeoutMs?: number;
  /**
   * Served requests run at once (default 8); the rest wait, journaled in
   * the store, not in memory.
   */
  maxServing?: number;
  /** Publish a signed presence document (`--presence`, AWP_PRESENCE=1). */
  presence?: boolean;
  /** More fields for the presence document (version, harness, model, host). */
  presenceInfo?: PresenceInfo;
  /** Forward other agents' presence documents (default true; `--no-relay`). */
  relayPresence?: boolean;
  /** Presence timing in ms: settle after a change (2 s), heartbeat (60 s). */
  presenceTiming?: { settleMs?: number; heartbeatMs?: number };
  /**
   * Emit a `line` event (`LineEvent`) for every protocol line in and
   * out after the handshake (chunks without their data), or only for those
   * a filter accepts (by direction and type: the driver wants no event for
   * the msgs and acks it reports otherwise). Off by default.
   */
  lineEvents?: boolean | ((dir: "in" | "out", t: string) => boolean);
  /**
   * Shows the actors (supervisor, dialers, connections, threads, blob
   * transfers) in this hub. Off unless given: no observer is passed then.
   */
  inspect?: InspectionHub;
}

/** The caps we say in hello unless `PeerOptions.caps` says otherwise. */
export const DEFAULT_CAPS: readonly string[] = [
  "chat",
  "blob",
  "grant",
  "introduce",
  "presence",
  "mirror",
];

/**
 * Throws a one-line TypeError for options `Peer.open` cannot use: neither
 * home nor memory, a bad size, trust key, admission mode or served cap.
 *
 * @example
 * ```ts
 * import { checkPeerOptions } from "./peer_options.ts";
 * checkPeerOptions({ memory: true }); // fine
 * try {
 *   checkPeerOptions({ memory: true, chunkSize: -1 });
 * } catch (e) {
 *   console.log((e as Error).message); // Peer.open: chunkSize must be ...
 * }
 * ```
 */
export function checkPeerOptions(options: PeerOptions): void {
  if (!options.memory && !options.home) {
    throw new TypeError(
      "Peer.open: give { home: DIR } for a durable peer or { memory: true } for an ephemeral one",
    );
  }
  for (
    const [name, value] of [
      ["maxBlobBytes", options.maxBlobBytes],
      ["chunkSize", options.chunkSize],
    ] as const
  ) {
    if (value !== undefined && (!Number.isSafeInteger(value) || value < 0)) {
      throw new TypeError(
        `Peer.open: ${name} must be a non-negative integer, got ${value}`,
      );
    }
  }
  checkTrustOptions(options);
}

/** One-line TypeErrors for bad trust, admission and serving options. */
function checkTrustOptions(options: PeerOptions): void {
  if (
    options.accept !== undefined && options.accept !== "any" &&
    options.accept !== "allowlist"
  ) {
    throw new TypeError(
      `Peer.open: accept must be "any" or "allowlist", got ${
        JSON.stringify(options.accept)
      }`,
    );
  }
  for (const name of ["trust", "allow"] as const) {
    for (const key of options[name] ?? []) {
      if (!isKey(key)) {
        throw new TypeError(
          `Peer.open: ${name}: ${JSON.stringify(key)} is not an ed25519 key`,
        );
      }
    }
  }
  for (const cap of options.serve ?? []) {
    if (!(SERVABLE_CAPS as readonly string[]).includes(cap)) {
      throw new TypeError(
        `Peer.open: serve: unknown capability ${JSON.stringify(cap)} (use ${
          SERVABLE_CAPS.join(", ")
        })`,
      );
    }
    if (cap.startsWith("fs:") && !options.root) {
      // The working directory is too easy to get wrong (it may hold the home).
      throw new TypeError(
        `Peer.open: serving ${cap} needs root: the directory fs requests are confined to (--root DIR)`,
      );
    }
  }
}

/**
 * Directories no request may reach, whatever the root: this peer's home
 * or temp dir and the default homes (they hold identity keys).
 *
 * @example
 * ```ts
 * import { protectedDirs } from "./peer_options.ts";
 * console.log(protectedDirs({ home: "/srv/awp" })[0]); // "/srv/awp"
 * ```
 */
export function protectedDirs(options: PeerOptions, temp?: string): string[] {
  const env = (name: string) => {
    try {
      return Deno.env.get(name);
    } catch {
      return undefined; // no --allow-env
    }
  };
  const home = env("HOME");
  return [
    options.home,
    temp,
    env("AWP_HOME"),
    home ? `${home}/.awp` : undefined,
  ].filter((d): d is string => typeof d === "string" && d !== "");
}
