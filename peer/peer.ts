/**
 * The library API: one AWP peer with its identity, store, listeners,
 * connections and a stream of typed events.
 *
 * A Peer is a thin owner around the {@link Supervisor}: it keeps the
 * durable side (identity seed, outbox, threads, grants, blobs) in a
 * {@link Store}, turns user calls into outbox drafts, and turns what the
 * connections deliver into {@link PeerEvent}s. Sending never fails because
 * the remote is away: `send` resolves once the lines are durable in the
 * outbox, and they go out on the next resume (SPEC 9.5).
 *
 * Layout of a home directory: `awp.kv` (the store), `spool/` (snapshots of
 * files being sent), `blobs/<peer>/` (received files).
 *
 * @module
 */

import {
  type Delivery,
  Supervisor,
  type SupervisorEvent,
} from "../actors/supervisor.ts";
import type {
  Connection,
  ReceivedLine,
  RemoteHello,
} from "../actors/connection.ts";
import { PeerThreads } from "./peer_threads.ts";
import { randomHex } from "../storage/sha256.ts";
import {
  DEFAULT_UNFINISHED,
  PeerBlobs,
  type UnfinishedBlobLimits,
} from "./peer_blobs.ts";
import { InspectionHub } from "../inspector/inspection_hub.ts";
import type { PeerConfig } from "../actors/peer_config.ts";
import {
  EventQueue,
  type EventsOptions,
  type LineEvent,
  type LineMessage,
  type PeerEvent,
  servedEvent,
} from "./peer_events.ts";
import { PeerTrust } from "./peer_trust.ts";
import type { AdmissionMode } from "./policy.ts";
import { hasRequests, RequestServer } from "../profile/request_server.ts";
import {
  PeerExtensions,
  type PresenceInfo,
} from "../extensions/peer_extensions.ts";
import type { PresenceRecord } from "../extensions/presence_gossip.ts";
import { MirrorSharer } from "../extensions/mirror.ts";
import type { MirroredLine, MirroredThread } from "../extensions/mirror.ts";
import type { Attachment } from "../profile/fs_access.ts";
import { type ResultReply, SERVABLE_CAPS } from "../profile/profile.ts";
import type { SignedPresence } from "../wire/presence.ts";
import { openStore } from "../storage/open_store.ts";
import type {
  GrantRecord,
  LogEntry,
  LogQuery,
  OutboxDraft,
  OutboxEntry,
  PeerRecord,
  ReceiveExtras,
  Store,
  ThreadPatch,
  ThreadRecord,
} from "../storage/store.ts";
import {
  chunkDrafts,
  DEFAULT_CHUNK_SIZE,
  DEFAULT_MAX_BLOB_BYTES,
  discardSpooled,
  snapshotToSpool,
  type SpooledBlob,
} from "../storage/spool.ts";
import { isKey, KEY_PREFIX, Signer } from "../wire/keys.ts";
import { grantHash, mintGrant, verifyGrant } from "../wire/grant.ts";
import { blobPart, textPart } from "../wire/messages.ts";
import { timestamp } from "../wire/time.ts";
import {
  ENVELOPE_HEADROOM_BYTES,
  fitsLine,
  MAX_LINE_BYTES,
} from "../wire/frame.ts";
import { validateMessage } from "../wire/validate.ts";
import type { SamvadAgent, SamvadOptions } from "../samvad/samvad_agent.ts";
import { CONTENT_TYPES, MESSAGE_TYPES } from "../wire/types.ts";
import type {
  Err,
  Grant,
  GrantMsg,
  Introduce,
  IntroPeer,
  Msg,
  Part,
  Private,
  State,
} from "../wire/types.ts";

/**
 * Options of {@link Peer.open}: the {@link PeerConfig} every layer shares
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
   * Emit a `line` event ({@link LineEvent}) for every protocol line in and
   * out after the handshake (chunks without their data). Off by default:
   * nothing is parsed for it then.
   */
  lineEvents?: boolean;
  /**
   * Shows the actors (supervisor, dialers, connections, threads, blob
   * transfers) in this hub. Off unless given: no observer is passed then.
   */
  inspect?: InspectionHub;
}

/** Options of {@link Peer.send}. */
export interface SendOptions {
  /** The thread; a new one when absent. */
  thread?: string;
  /** Subject (meaningful on a thread's first msg). */
  subject?: string;
  /** The id this msg answers. */
  re?: string;
  /** Extra parts after the text part. */
  parts?: Part[];
  /**
   * Files to send as blobs (snapshotted into the spool first): a path, or
   * a path with the name and mime type the blob part gives.
   */
  files?: Array<string | SendFile>;
}

/** A file for {@link SendOptions.files} with its blob name and type. */
export interface SendFile {
  /** The file to send. */
  path: string;
  /** The blob's name (default the file's base name). */
  name?: string;
  /** The blob's mime type (default guessed from the name's extension). */
  mime?: string;
}

/** Options of {@link Peer.connect}. */
export interface ConnectOptions {
  /**
   * Grants to present in auth besides those chosen automatically (held
   * grants meant for the remote: its `aud`, or issued by it).
   */
  present?: Grant[];
  /**
   * Keep dialing while nothing answers at the address (each failure is an
   * `error` event with code `dial`), on the dialer's schedule, instead of
   * rejecting on the first failure. Resolves once connected; rejects only
   * when `signal` aborts or the peer closes. Not awaiting it is "return
   * and keep dialing".
   */
  retry?: boolean;
  /**
   * Stay connected: redial after every drop even with nothing to deliver,
   * until {@link Peer.bye}. Without it, a peer is redialed only while we
   * have unacked lines or open threads for it (SPEC 4.3).
   */
  keep?: boolean;
  /** Stops a `retry` dial in progress. */
  signal?: AbortSignal;
}

/** What {@link Peer.send}, {@link Peer.setState} and {@link Peer.introduce} queued. */
export interface Sent {
  /** The id of the line (the msg, for send). */
  id: string;
  /** The thread it went in. */
  th: string;
}

/** A known peer and whether it is connected now. */
export interface PeerInfo extends PeerRecord {
  /** True while a connection to it is open. */
  connected: boolean;
  /**
   * Not connected, and the last dial reached an HTTP front that refused the
   * WebSocket upgrade (a sleeping host): still retried with backoff.
   * Always set by {@link Peer.peers}.
   */
  waking?: boolean;
  /** While we keep failing to dial it: since when (ISO time), and why. */
  unreachable?: { since: string; error?: string };
}

/** Options of {@link Peer.grant}. */
export interface GrantOptions {
  /** Lifetime in ms (24 h by default). */
  ttlMs?: number;
  /** Audience: the only key meant to honor it (NOTES item 7). */
  aud?: string;
}

/** Options of {@link Peer.introduce}. */
export interface IntroduceOptions {
  /** Caps of the audience-bound grant sent along (none: no grant). */
  grantCaps?: string[];
  /** Lifetime of that grant in ms. */
  ttlMs?: number;
  /** Thread to carry the introduce line (a new one by default). */
  thread?: string;
}

const DEFAULT_CAPS = [
  "chat",
  "blob",
  "grant",
  "introduce",
  "presence",
  "mirror",
];
/** The types this peer understands; others are ignored (and not logged). */
const KNOWN_TYPES: ReadonlySet<string> = new Set(MESSAGE_TYPES);

/** Received lines store.receive logs itself (content, and private). */
const LOGGED_BY_RECEIVE: ReadonlySet<string> = new Set([
  ...CONTENT_TYPES,
  "private",
]);
/** Handshake lines: no `line` event (they come before the peer is known, or are the resume). */
const HANDSHAKE: ReadonlySet<string> = new Set(["hello", "auth", "resume"]);
/**
 * Liveness lines: not written to the traffic log (a ping per connection
 * every 30 s would otherwise be a KV commit each; 10,000 idle connections
 * made a busy store). Nor is the resume: a commit on every handshake.
 */
const LIVENESS: ReadonlySet<string> = new Set(["ping", "pong"]);
const LOG_BATCH = 256;
const EARLY_EVENTS = 10_000;
const ACKED_MEMORY = 10_000;
/** A thread's record is rewritten at most this often by sends alone. */
const TOUCH_EVERY_MS = 1_000;

const MIME: Record<string, string> = {
  txt: "text/plain",
  log: "text/plain",
  md: "text/markdown",
  json: "application/json",
  html: "text/html",
  csv: "text/csv",
  png: "image/png",
  jpg: "image/jpeg",
  jpeg: "image/jpeg",
  gif: "image/gif",
  pdf: "application/pdf",
  zip: "application/zip",
  gz: "application/gzip",
  tar: "application/x-tar",
  diff: "text/x-diff",
  patch: "text/x-diff",
};

function baseName(path: string): string {
  return path.replace(/[\\/]+$/, "").split(/[\\/]/).pop() || path;
}

function mimeOf(name: string): string | undefined {
  const dot = name.lastIndexOf(".");
  return dot > 0 ? MIME[name.slice(dot + 1).toLowerCase()] : undefined;
}

function oneLine(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  return text.split("\n")[0];
}

function newThreadId(): string {
  return `thr_${randomHex(8)}`;
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
 */
function protectedDirs(options: PeerOptions, temp?: string): string[] {
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

interface PendingSpool {
  peer: string;
  refs: string[];
  paths: string[];
}

/**
 * One AWP peer. Open with {@link Peer.open}, then `listen` and/or
 * `connect`, `send`, and read {@link Peer.events}.
 *
 * @example
 * ```ts
 * import { Peer } from "./peer.ts";
 * const a = await Peer.open({ memory: true, name: "a" });
 * const b = await Peer.open({ memory: true, name: "b" });
 * const addr = await a.listen("tcp:127.0.0.1:0");
 * const events = a.events();
 * await b.connect(addr);
 * const { id } = await b.send(a.key, "hello", { subject: "Hi" });
 * await b.waitAck(id, { timeoutMs: 5000 });
 * for await (const e of events) if (e.type === "message") break;
 * await b.close();
 * await a.close();
 * ```
 */
export class Peer {
  #signer: Signer;
  #store: Store;
  #sup: Supervisor;
  /** The inspection hub, when inspection is on. */
  #hub: InspectionHub | undefined;
  #o: PeerOptions;
  #spoolDir: string;
  #tempRoot: string | undefined;
  /** The retention timer (expireOutbox soon after open, then hourly). */
  #retention: ReturnType<typeof setTimeout> | undefined;
  /** The timer of {@link Peer.#expireBlobs}. */
  #blobExpiry: ReturnType<typeof setTimeout> | undefined;
  #maxBlob: number;
  #subs = new Set<EventQueue<PeerEvent>>();
  #early: PeerEvent[] | undefined = [];
  #sendTurn: Promise<void> = Promise.resolve();
  /** Served results, queued one at a time (see {@link Peer.#reply}). */
  #replyTurn: Promise<void> = Promise.resolve();
  #acked = new Set<string>();
  /** When each thread record was last written by {@link #touchThread}. */
  #threadTouched = new Map<string, number>();
  #ackWaiters = new Map<string, Set<() => void>>();
  #sentTo = new Map<string, string>();
  #spoolByMsg = new Map<string, PendingSpool>();
  /** Thread actors and the seq-ordered message/state events. */
  #threads: PeerThreads;
  /** Blob transfers, sinks and their actors. */
  #blobs: PeerBlobs;
  #logBuffer: Omit<LogEntry, "seq">[] = [];
  #logFlush: Promise<void> | undefined;
  #inflight = new Set<Promise<unknown>>();
  #closing: Promise<void> | undefined;
  #trust: PeerTrust;
  #requests: RequestServer;
  #ext: PeerExtensions;
  #samvad: Promise<SamvadAgent> | undefined;

  private constructor(
    signer: Signer,
    store: Store,
    options: PeerOptions,
    dirs: { spool: string; blobs: string; temp?: string },
    hosts: string[],
  ) {
    this.#signer = signer;
    this.#store = store;
    this.#o = options;
    this.#hub = options.inspect;
    this.#spoolDir = dirs.spool;
    this.#tempRoot = dirs.temp;
    this.#maxBlob = options.maxBlobBytes ?? DEFAULT_MAX_BLOB_BYTES;
    this.#blobs = new PeerBlobs({
      store,
      blobsDir: dirs.blobs,
      maxBlobBytes: this.#maxBlob,
      ...(options.unfinishedBlobs
        ? { unfinished: options.unfinishedBlobs }
        : {}),
      ...(options.inspect ? { inspect: options.inspect } : {}),
      parentId: (peer) => this.#parentId(peer),
      emit: (event) => this.#emit(event),
      localError: (peer, code, detail, ref) =>
        this.#localError(peer, code, detail, ref),
      closing: () => this.#closing !== undefined,
    });
    this.#threads = new PeerThreads({
      store,
      ...(options.inspect ? { inspect: options.inspect } : {}),
      parentId: (peer) => this.#parentId(peer),
      emit: (event) => this.#emit(event),
      closing: () => this.#closing !== undefined,
      onLine: (peer, m) => this.#ext.onLine(peer, "in", m),
      resolveBlob: (peer, part, conn) => this.#blobs.resolve(peer, part, conn),
      replayBlob: (peer, part) => this.#blobs.replay(peer, part),
      requests: (peer, m, conn) =>
        this.#requests.handle(peer, m, conn.remote?.grants ?? []),
    });
    const track = <T>(p: Promise<T>): Promise<T> => {
      this.#inflight.add(p);
      void p.finally(() => this.#inflight.delete(p)).catch(() => {});
      return p;
    };
    this.#trust = new PeerTrust(store, {
      ownKey: signer.key,
      trust: options.trust,
      accept: options.accept,
      allow: options.allow,
      onDecision: (d) =>
        this.#emit({
          type: "admission",
          peer: d.key,
          ts: timestamp(),
          admitted: d.admitted,
          why: d.why,
          caps: d.caps,
          ...(d.detail !== undefined ? { detail: d.detail } : {}),
        }),
    });
    this.#requests = new RequestServer({
      serve: options.serve,
      root: options.root,
      protect: protectedDirs(options, dirs.temp),
      execEnvPass: options.execEnvPass,
      spoolDir: `${dirs.spool}/served`,
      execTimeoutMs: options.execTimeoutMs,
      capsOf: (peer, presented) => this.#trust.capsOf(peer, presented),
      store,
      maxServing: options.maxServing,
      // Outboxed like a reply: a dropped connection does not lose it. Never
      // acked, it leaves the outbox with a later ack from the peer.
      forbid: async (peer, err) => {
        await this.#sup.send(peer, [{ fields: { t: "err", ...err } }]);
      },
      reply: (peer, reply, files) => this.#reply(peer, reply, files),
      onServed: (record) => this.#emit(servedEvent(record, timestamp())),
      onError: (peer, detail) => this.#localError(peer, "serve", detail),
    });
    this.#ext = new PeerExtensions({
      signer,
      store,
      name: options.name,
      about: options.about,
      presence: options.presence,
      presenceInfo: options.presenceInfo,
      relay: options.relayPresence,
      presenceDelayMs: options.presenceTiming?.settleMs,
      presenceHeartbeatMs: options.presenceTiming?.heartbeatMs,
      hosts,
      connections: () =>
        this.#sup.peers.map((k) => this.#sup.connection(k)!).filter(Boolean),
      deliver: (peer, entries) => track(this.#deliverQueued(peer, entries)),
      onPresence: (e) =>
        this.#emit({
          type: "presence",
          peer: e.origin,
          ts: timestamp(),
          kind: e.kind,
          ...(e.name !== undefined ? { name: e.name } : {}),
          ...(e.detail !== undefined ? { detail: e.detail } : {}),
        }),
      onMirror: (sharer, outcome, th) =>
        this.#emit({
          type: "mirror",
          peer: sharer,
          ts: timestamp(),
          th,
          outcome,
        }),
    });
    this.#sup = new Supervisor({
      signer,
      store,
      name: options.name,
      about: options.about,
      caps: options.caps ?? DEFAULT_CAPS,
      timeouts: options.timeouts,
      maxUnsentBytes: options.maxUnsentBytes,
      dialer: options.dialer,
      allowPublic: options.allowPublic,
      caCerts: options.caCerts,
      tls: options.tls,
      addr: options.addr,
      limits: options.limits,
      admit: (remote, context) => this.#admit(remote, context),
      grants: (remote) => this.#trust.toPresent(remote.key),
      shares: () => this.#ext.hosts,
      retentionMs: options.retentionMs,
      routes: {
        thread: () => (d) => track(this.#threads.deliver(d)),
        // Chunks are written in beforeCommit; nothing is left to do after.
        blob: () => () => {},
        grant: (d) => track(this.#onGrant(d)),
        introduce: (d) => track(this.#onIntroduce(d)),
        err: (d) => track(this.#onErr(d)),
        presence: (d) =>
          void track(
            this.#ext.onPresence(
              d.peer,
              d.message as unknown as Record<string, unknown>,
              d.raw,
            ),
          ),
        mirror: (d) =>
          track(
            this.#ext.onMirror(
              d.peer,
              d.message as unknown as Record<string, unknown>,
            ),
          ).then(() => {}),
        private: (d) =>
          track(this.#ext.onPrivate(d.peer, (d.message as Private).th)),
      },
      onEvent: (e) => this.#onSupervisorEvent(e),
      onLine: (peer, dir, raw, message) =>
        this.#logLine(peer, dir, raw, message),
      beforeCommit: (peer, conn, lines) =>
        this.#beforeCommit(peer, conn, lines),
      // A chunk's bytes go to its file as it arrives; the batch syncs.
      onChunk: (peer, _conn, line) => this.#blobs.arrive(peer, line),
      // Requests are journaled before their msg commits: not on the fast path.
      needsBeforeCommit: (_peer, message) =>
        message.t === "msg" && hasRequests(message as Msg),
      // Each fresh msg/state holds its event's turn: events leave in seq order.
      afterCommit: (_peer, lines) => this.#threads.afterCommit(lines),
      onAck: (peer, ack) => this.#noteAck(peer, ack.re, ack.th),
      onBye: (peer, reason) =>
        this.#emit({
          type: "bye",
          peer,
          ts: timestamp(),
          ...(reason !== undefined ? { reason } : {}),
        }),
      onSent: (peer, entry) => {
        if (entry.t === "chunk") track(this.#blobs.chunkSent(peer, entry));
      },
      ...(options.inspect ? { inspect: options.inspect } : {}),
    });
  }

  /**
   * Opens a peer: loads (or creates) the identity and store under `home`,
   * or runs ephemeral with `memory: true`. Known peers we dialed that still
   * have unacked lines or open threads are dialed again (not those held
   * by a bye, see {@link Peer.bye}).
   *
   * @example
   * ```ts
   * import { Peer } from "./peer.ts";
   * const home = await Deno.makeTempDir();
   * const p = await Peer.open({ home });
   * const key = p.key;
   * await p.close();
   * const again = await Peer.open({ home });
   * console.log(again.key === key); // true
   * await again.close();
   * await Deno.remove(home, { recursive: true });
   * ```
   */
  static async open(options: PeerOptions): Promise<Peer> {
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
    const store = await openStore({
      ...(options.memory
        ? { memory: true }
        : options.url !== undefined
        ? { url: options.url }
        : { home: options.home }),
      ...(options.maxLogEntries !== undefined
        ? { maxLogEntries: options.maxLogEntries }
        : {}),
      ...(options.maxLogBytes !== undefined
        ? { maxLogBytes: options.maxLogBytes }
        : {}),
    });
    try {
      const seed = await store.identity(() =>
        crypto.getRandomValues(new Uint8Array(32))
      );
      const signer = await Signer.fromSeed(seed);
      let dirs: { spool: string; blobs: string; temp?: string };
      if (options.memory) {
        const temp = await Deno.makeTempDir({ prefix: "awp-peer-" });
        dirs = { spool: `${temp}/spool`, blobs: `${temp}/blobs`, temp };
      } else {
        dirs = {
          spool: `${options.home}/spool`,
          blobs: `${options.home}/blobs`,
        };
      }
      // Private, like the store: they hold what the peers exchange.
      await Deno.mkdir(dirs.spool, { recursive: true, mode: 0o700 });
      await Deno.mkdir(dirs.blobs, { recursive: true, mode: 0o700 });
      const hosts = await MirrorSharer.savedHosts(store);
      const peer = new Peer(signer, store, options, dirs, hosts);
      peer.#sup.start();
      peer.#retain(5_000, options.retentionMs ?? 7 * 86_400_000);
      peer.#expireBlobs();
      await peer.#sup.loadQuiet();
      await peer.#redialKnown();
      // Requests acked before a crash: served now, or answered interrupted.
      const recovering = peer.#requests.recover();
      peer.#inflight.add(recovering);
      void recovering.finally(() => peer.#inflight.delete(recovering));
      return peer;
    } catch (error) {
      store.close();
      throw error;
    }
  }

  /** Our key, `ed25519:` + base64url. */
  get key(): string {
    return this.#signer.key;
  }

  /** The store (for inspection; the Peer owns it). */
  get store(): Store {
    return this.#store;
  }

  /** The hub the actors are shown in, once inspection is on. */
  get inspection(): InspectionHub | undefined {
    return this.#hub;
  }

  /**
   * Turns inspection on at run time (or returns the hub already in use):
   * the supervisor, dialers, connections, threads and transfers that exist
   * are registered in `hub` at once, and actors created later get its
   * observer. Until called (without `PeerOptions.inspect`), nothing records.
   *
   * @example
   * ```ts
   * import { Peer } from "./peer.ts";
   * const p = await Peer.open({ memory: true });
   * const hub = p.inspect();
   * console.log(hub.actors().map((a) => a.kind)); // ["supervisor"]
   * await p.close();
   * ```
   */
  inspect(hub?: InspectionHub): InspectionHub {
    if (this.#hub && (hub === undefined || hub === this.#hub)) return this.#hub;
    if (this.#hub) {
      throw new Error("inspection is already on with another hub");
    }
    const h = hub ?? new InspectionHub();
    this.#hub = h;
    // Parents first, so children find their connection's id registered.
    this.#sup.attach(h);
    this.#threads.attach(h);
    this.#blobs.attach(h);
    return h;
  }

  /**
   * Listens on `addr` (`tcp:HOST:PORT`, port 0 for any, or `unix:/path`)
   * and resolves with the real address.
   *
   * @example
   * ```ts
   * import { Peer } from "./peer.ts";
   * const p = await Peer.open({ memory: true });
   * console.log(await p.listen("tcp:127.0.0.1:0")); // tcp:127.0.0.1:PORT
   * await p.close();
   * ```
   */
  async listen(addr: string): Promise<string> {
    this.#open("listen");
    const listener = await this.#sup.listen(addr);
    return listener.addr;
  }

  /**
   * Dials `addr`, runs the handshake and resolves with the remote key. The
   * address is remembered: while there is something to deliver or an open
   * thread (always, with `keep`), the peer keeps reconnecting to it. With
   * `retry`, a peer that does not answer yet is dialed until it does,
   * instead of rejecting.
   *
   * @example
   * ```ts
   * import { Peer } from "./peer.ts";
   * const a = await Peer.open({ memory: true });
   * const b = await Peer.open({ memory: true });
   * const key = await b.connect(await a.listen("tcp:127.0.0.1:0"));
   * console.log(key === a.key); // true
   * await b.close();
   * await a.close();
   * ```
   */
  async connect(addr: string, options: ConnectOptions = {}): Promise<string> {
    this.#open("connect");
    const how = {
      ...(options.present?.length ? { present: options.present } : {}),
      ...(options.signal ? { signal: options.signal } : {}),
    };
    const remote = options.retry
      ? await this.#sup.connectUntilUp(addr, how)
      : await this.#sup.connect(addr, how);
    // Remember it now (the supervisor's own bookkeeping is asynchronous).
    await this.#remember(remote, addr);
    if (options.keep) this.#sup.keep(remote.key);
    this.#sup.reach(remote.key, [addr]);
    return remote.key;
  }

  /**
   * Queues a msg (and the chunks of `files`, before it) to `to`: a key, a
   * unique key prefix of 4+ characters, a name or an alias of a known peer.
   * Resolves once durable in the outbox; it does not wait for the peer.
   * A file over `maxBlobBytes` is refused before anything is queued.
   *
   * @example
   * ```ts ignore
   * const { id, th } = await peer.send("alice", "see attached", {
   *   subject: "Logs",
   *   files: ["./test.log"],
   * });
   * await peer.waitAck(id);
   * ```
   */
  async send(
    to: string,
    text: string,
    options: SendOptions = {},
  ): Promise<Sent> {
    this.#open("send");
    const turn = this.#takeTurn();
    try {
      await turn.ready;
      return await this.#sendTo(
        await this.#resolve(to),
        text,
        options,
        turn.release,
      );
    } finally {
      turn.release();
    }
  }

  /**
   * Sends keep the order they were called in (ids are allocated when the
   * store is asked to enqueue): each waits for the previous one to have
   * asked, not for its commit, so concurrent sends share group commits.
   */
  #takeTurn(): { ready: Promise<void>; release: () => void } {
    const ready = this.#sendTurn;
    let release!: () => void;
    this.#sendTurn = new Promise<void>((resolve) => release = resolve);
    return { ready, release };
  }

  /** send, once `to` is resolved (also how served results go back). */
  async #sendTo(
    key: string,
    text: string,
    options: SendOptions,
    asked?: () => void,
  ): Promise<Sent> {
    const th = options.thread ?? newThreadId();
    if (typeof th !== "string" || th === "") {
      throw new TypeError("send: thread must be a non-empty string");
    }
    const parts: Part[] = [];
    if (typeof text === "string" && text !== "") parts.push(textPart(text));
    if (options.parts) parts.push(...options.parts);
    const spooled: Array<{ blob: SpooledBlob; name: string; mime?: string }> =
      [];
    const release = () =>
      Promise.all(
        spooled.map((s) => discardSpooled(s.blob.path).catch(() => {})),
      );
    try {
      for (const file of options.files ?? []) {
        const f: SendFile = typeof file === "string" ? { path: file } : file;
        if (!f || typeof f.path !== "string" || f.path === "") {
          throw new TypeError(
            "a file must be a path or { path, name?, mime? }",
          );
        }
        const blob = await snapshotToSpool(this.#spoolDir, f.path, {
          maxBytes: this.#maxBlob,
        });
        spooled.push({ blob, name: f.name ?? baseName(f.path), mime: f.mime });
      }
    } catch (error) {
      await release();
      throw new Error(`send: ${oneLine(error)}`);
    }
    for (const { blob, name, mime: given } of spooled) {
      const mime = given ?? mimeOf(name);
      parts.push(
        blobPart({
          ref: blob.ref,
          size: blob.size,
          name,
          ...(mime ? { mime } : {}),
        }),
      );
    }
    if (parts.length === 0) {
      throw new TypeError("send: nothing to send: give text, parts or files");
    }
    const fields: OutboxDraft["fields"] = { t: "msg", th, parts };
    if (options.subject !== undefined) fields.subject = options.subject;
    if (options.re !== undefined) fields.re = options.re;
    const invalid = this.#invalid(fields);
    if (invalid) {
      await release();
      throw new TypeError(`send: invalid msg: ${invalid}`);
    }
    // The outbox adds id and ts: see ENVELOPE_HEADROOM_BYTES.
    if (!fitsLine(fields, MAX_LINE_BYTES - ENVELOPE_HEADROOM_BYTES)) {
      await release();
      throw new Error(
        `send: the msg line would exceed ${MAX_LINE_BYTES} bytes; send big content as files`,
      );
    }
    const drafts: OutboxDraft[] = [];
    for (const { blob } of spooled) {
      drafts.push(
        ...chunkDrafts(blob, {
          th,
          chunkSize: this.#o.chunkSize ?? DEFAULT_CHUNK_SIZE,
        }),
      );
    }
    drafts.push({ fields });
    let entries;
    // Asked together with the enqueue, so both share one group commit.
    let touched: Promise<void> | undefined;
    try {
      // One enqueue: chunk ids come before the msg's (NOTES item 1).
      const enqueued = this.#sup.send(key, drafts);
      touched = this.#touchThread(key, th, { subject: options.subject });
      touched.catch(() => {}); // awaited below, once the enqueue is durable
      asked?.();
      entries = await enqueued;
    } catch (error) {
      await release();
      throw new Error(`send: ${oneLine(error)}`);
    }
    const id = entries[entries.length - 1].id;
    this.#noteSent(id, key);
    if (spooled.length > 0) {
      this.#spoolByMsg.set(id, {
        peer: key,
        refs: spooled.map((s) => s.blob.ref),
        paths: spooled.map((s) => s.blob.path),
      });
      const now = Date.now();
      for (const { blob, name, mime: given } of spooled) {
        const mime = given ?? mimeOf(name);
        await this.#store.putBlob({
          peer: key,
          ref: blob.ref,
          dir: "out",
          th,
          name,
          ...(mime ? { mime } : {}),
          size: blob.size,
          bytes: 0,
          next: 0,
          status: "active",
          path: blob.path,
          sha256: blob.sha256,
          updated: now,
        });
        this.#blobs.outgoing(key, blob.ref, { th, name, size: blob.size });
      }
    }
    await touched;
    const sent = { ...fields, id, ts: entries[entries.length - 1].ts } as Msg;
    await this.#threads.feed(key, th, { type: "MSG_OUT", message: sent });
    await this.#ext.onLine(key, "out", { ...sent });
    await this.#ensureReach(key);
    return { id, th };
  }

  /**
   * Resolves when the line `id` has been acked; rejects after `timeoutMs`
   * (default 30 s) with one line. An id no longer in the outbox (acked
   * before, e.g. in an earlier run) resolves at once.
   *
   * @example
   * ```ts ignore
   * const { id } = await peer.send(bob, "ping?");
   * await peer.waitAck(id, { timeoutMs: 10_000 });
   * ```
   */
  async waitAck(
    id: string,
    options: { timeoutMs?: number } = {},
  ): Promise<void> {
    if (this.#acked.has(id)) return;
    const timeoutMs = options.timeoutMs ?? 30_000;
    let resolve!: () => void;
    const done = new Promise<void>((r) => resolve = r);
    let waiters = this.#ackWaiters.get(id);
    if (!waiters) this.#ackWaiters.set(id, waiters = new Set());
    waiters.add(resolve);
    try {
      // Registered first, so an ack arriving meanwhile is not missed.
      if (!(await this.#inOutbox(id))) return;
      let timer: ReturnType<typeof setTimeout> | undefined;
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(
          () =>
            reject(
              new Error(`waitAck: no ack for ${id} within ${timeoutMs} ms`),
            ),
          timeoutMs,
        );
      });
      try {
        await Promise.race([done, timeout]);
      } finally {
        clearTimeout(timer);
      }
    } finally {
      waiters.delete(resolve);
      if (waiters.size === 0) this.#ackWaiters.delete(id);
    }
  }

  /**
   * Sets our soft state of thread `th` with `to` (open, working, waiting,
   * done, failed, closed or any word) and queues the state line.
   *
   * @example
   * ```ts ignore
   * await peer.setState(bob, th, "working", "running the tests");
   * ```
   */
  async setState(
    to: string,
    th: string,
    state: string,
    note?: string,
  ): Promise<Sent> {
    this.#open("setState");
    const turn = this.#takeTurn();
    let entry: OutboxEntry;
    let key: string;
    const fields: OutboxDraft["fields"] = { t: "state", th, state };
    try {
      await turn.ready;
      key = await this.#resolve(to);
      if (typeof th !== "string" || th === "") {
        throw new TypeError("setState: th must be a non-empty string");
      }
      if (typeof state !== "string" || state === "") {
        throw new TypeError("setState: state must be a non-empty string");
      }
      if (note !== undefined) fields.note = note;
      const invalid = this.#invalid(fields);
      if (invalid) throw new TypeError(`setState: invalid state: ${invalid}`);
      const enqueued = this.#sup.send(key, [{ fields }]);
      turn.release();
      [entry] = await enqueued;
    } finally {
      turn.release();
    }
    this.#noteSent(entry.id, key);
    await this.#touchThread(key, th, {
      mine: { state, ts: entry.ts, ...(note !== undefined ? { note } : {}) },
    });
    const line = { ...fields, id: entry.id, ts: entry.ts } as State;
    await this.#threads.feed(key, th, { type: "STATE_OUT", message: line });
    await this.#ext.onLine(key, "out", { ...line });
    await this.#ensureReach(key);
    return { id: entry.id, th };
  }

  /**
   * Mints a grant for `to` with `caps`, stores it as issued and sends it in
   * a `grant` line: at once if connected, else on the next connection.
   *
   * @example
   * ```ts ignore
   * const grant = await peer.grant(bob, ["exec"], { ttlMs: 3_600_000 });
   * console.log(grant.exp);
   * ```
   */
  async grant(
    to: string,
    caps: string[],
    options: GrantOptions = {},
  ): Promise<Grant> {
    this.#open("grant");
    const key = await this.#resolve(to);
    const grant = await mintGrant(this.#signer, {
      sub: key,
      caps,
      ttlMs: options.ttlMs,
      aud: options.aud,
    });
    await this.#store.putGrant({
      kind: "issued",
      hash: await grantHash(grant),
      grant,
      storedAt: Date.now(),
    });
    // Outboxed like content; never acked, it leaves the outbox when a later
    // line to this peer is acked (Store.acked).
    await this.#sup.send(key, [{ fields: { t: "grant", grant } }]);
    await this.#ensureReach(key);
    return grant;
  }

  /**
   * Introduces the known peer `peerKey` to `to`: an `introduce` line with
   * its key, name and address, and (with `grantCaps`) a grant for `to`
   * bound to the audience `peerKey` (NOTES item 7).
   *
   * @example
   * ```ts ignore
   * await alice.introduce(bob, carol.key, { grantCaps: ["chat"], ttlMs: 600_000 });
   * ```
   */
  async introduce(
    to: string,
    peerKey: string,
    options: IntroduceOptions = {},
  ): Promise<Sent & { grant?: Grant }> {
    this.#open("introduce");
    const key = await this.#resolve(to);
    const other = await this.#resolve(peerKey);
    const record = await this.#store.peer(other);
    if (!record) {
      throw new Error(`introduce: ${other} is not a known peer`);
    }
    const intro: IntroPeer = { key: other };
    if (record.name !== undefined) intro.name = record.name;
    if (record.addresses[0] !== undefined) intro.address = record.addresses[0];
    const th = options.thread ?? newThreadId();
    const fields: OutboxDraft["fields"] = { t: "introduce", th, peer: intro };
    let grant: Grant | undefined;
    if (options.grantCaps && options.grantCaps.length > 0) {
      grant = await mintGrant(this.#signer, {
        sub: key,
        caps: options.grantCaps,
        ttlMs: options.ttlMs,
        aud: other,
      });
      await this.#store.putGrant({
        kind: "issued",
        hash: await grantHash(grant),
        grant,
        storedAt: Date.now(),
      });
      fields.grant = grant;
    }
    const [entry] = await this.#sup.send(key, [{ fields }]);
    await this.#ensureReach(key);
    return { id: entry.id, th, ...(grant ? { grant } : {}) };
  }

  /**
   * Says bye to `to` and waits for the connection to close (when
   * connected). The peer is not redialed until something new is sent to
   * it (`send`, `setState`, `grant`, `introduce`...) or `connect` is
   * called, as the reference does after `awp bye`. The hold is stored, so
   * it outlasts a restart; a peer that says bye to us is held the same way.
   *
   * @example
   * ```ts ignore
   * await peer.bye(bob, "done for today");
   * ```
   */
  async bye(to: string, reason?: string): Promise<void> {
    const key = await this.#resolve(to);
    await this.#sup.bye(key, reason);
  }

  /**
   * Known peers (from the store), each with whether it is connected now.
   *
   * @example
   * ```ts ignore
   * for (const p of await peer.peers()) console.log(p.name, p.connected);
   * ```
   */
  async peers(): Promise<PeerInfo[]> {
    const up = new Set(this.#sup.peers);
    return (await this.#store.peers()).map((p) => {
      const down = this.#sup.unreachable(p.key);
      return {
        ...p,
        connected: up.has(p.key),
        waking: !up.has(p.key) && this.#sup.isWaking(p.key),
        ...(down
          ? {
            unreachable: {
              since: new Date(down.since).toISOString(),
              ...(down.error ? { error: down.error } : {}),
            },
          }
          : {}),
      };
    });
  }

  /**
   * Every thread record: subject, both sides' states, unread count.
   *
   * @example
   * ```ts ignore
   * for (const t of await peer.threads()) console.log(t.th, t.subject, t.theirs?.state);
   * ```
   */
  threads(): Promise<ThreadRecord[]> {
    return this.#store.threads();
  }

  /**
   * The traffic log: every line in and out after the handshake (chunk data
   * elided), oldest first, filtered by `query` (peer, th, after, limit).
   * Lines still being batched are written first.
   *
   * @example
   * ```ts ignore
   * for (const e of await peer.log({ th, after: lastSeq })) console.log(e.dir, e.line);
   * ```
   */
  async log(query: LogQuery = {}): Promise<LogEntry[]> {
    await this.#flushLog();
    return await this.#store.readLog(query);
  }

  /**
   * Marks every received msg of thread `th` with `peer` as read (the
   * thread's unread count drops to 0).
   *
   * @example
   * ```ts ignore
   * await peer.markRead(bob, th);
   * ```
   */
  async markRead(peer: string, th: string): Promise<void> {
    this.#open("markRead");
    const key = await this.#resolve(peer);
    if (typeof th !== "string" || th === "") {
      throw new TypeError("markRead: th must be a non-empty string");
    }
    if (!(await this.#store.thread(key, th))) {
      throw new Error(`markRead: no thread ${th} with ${key}`);
    }
    await this.#touchThread(key, th, { read: true });
    await this.#threads.read(key, th);
  }

  /**
   * A stream of events from now on (the first stream also gets those that
   * happened since open). Ends when the peer closes, or on `break`.
   *
   * Exactly-once delivery across crashes: every `message` and `state` event
   * carries `seq`, its position in the traffic log, and they come out in
   * seq order. Store the seq of the last event handled atomically with the
   * effect of handling it (same transaction, same fsynced line), and give
   * it back as `after` on restart: the stream then first replays, from the
   * log, every received msg and state with a greater seq (a msg is acked
   * once committed, so one may have been committed but never handled),
   * then goes on live, with no gap and nothing twice. Replayed msgs carry
   * their blobs as stored (completed now if all their bytes are there) and
   * no `requests` (a request is never served twice). Lines the log no
   * longer holds (retention) cannot be replayed.
   *
   * @example
   * ```ts ignore
   * const after = await loadCursor(); // the seq stored with the last effect
   * for await (const e of peer.events({ after })) {
   *   if (e.type !== "message") continue;
   *   await applyAndSaveCursor(e.text, e.seq); // one atomic write
   * }
   * ```
   */
  events(options: EventsOptions = {}): AsyncIterableIterator<PeerEvent> {
    const after = options?.after;
    if (after !== undefined && !(Number.isInteger(after) && after >= 0)) {
      throw new TypeError(
        `events: after must be the seq (an integer >= 0) of a message or state event, got ${after}`,
      );
    }
    const queue: EventQueue<PeerEvent> = new EventQueue(() =>
      this.#subs.delete(queue)
    );
    if (this.#early) {
      for (const e of this.#early) queue.push(e);
      this.#early = undefined;
    }
    if (this.#closing) queue.close();
    else this.#subs.add(queue);
    if (after === undefined || this.#closing) return queue;
    return this.#threads.replayThenLive(queue, after);
  }

  /**
   * Mirrors this agent's conversations to `hosts` (keys, names, aliases or
   * key prefixes of known peers): every msg and state line of every thread
   * from now on goes to each host as a reliable `mirror` line. The list is
   * remembered and sent as hello.shares; an empty list stops sharing.
   *
   * @example
   * ```ts ignore
   * await peer.share(["supervisor-host"]);
   * ```
   */
  async share(hosts: string[]): Promise<string[]> {
    this.#open("share");
    if (!Array.isArray(hosts)) {
      throw new TypeError("share: give a list of host keys (empty stops)");
    }
    const keys: string[] = [];
    for (const h of hosts) keys.push(await this.#resolve(h));
    await this.#ext.share(keys);
    for (const key of keys) {
      await this.#sup.refreshWanted(key);
      await this.#ensureReach(key);
    }
    return this.#ext.hosts;
  }

  /** The hosts this agent mirrors its conversations to. */
  get sharing(): string[] {
    return this.#ext.hosts;
  }

  /**
   * Keeps thread `th` with `peer` out of what is shared: withdrawn from our
   * hosts, and a reliable `private` line asks `peer` to do the same.
   *
   * @example
   * ```ts ignore
   * await peer.private("bob", th);
   * ```
   */
  async private(peer: string, th: string): Promise<Sent> {
    this.#open("private");
    const key = await this.#resolve(peer);
    if (typeof th !== "string" || th === "") {
      throw new TypeError("private: th must be a non-empty string");
    }
    const entry = await this.#ext.markPrivate(key, th);
    return { id: entry.id, th };
  }

  /**
   * Threads other agents mirror to us (kept apart from our own threads),
   * optionally of one sharer; `mirroredLines` gives a thread's lines.
   *
   * @example
   * ```ts ignore
   * for (const t of await host.mirrored()) console.log(t.sharer, t.th, t.count);
   * ```
   */
  mirrored(sharer?: string): Promise<MirroredThread[]> {
    return this.#ext.mirrored(sharer);
  }

  /**
   * The mirrored lines of thread `th`, in order (optionally of one sharer
   * or other party).
   *
   * @example
   * ```ts ignore
   * const lines = await host.mirroredLines(th, { sharer: alice.key });
   * ```
   */
  mirroredLines(
    th: string,
    where: { sharer?: string; of?: string } = {},
  ): Promise<MirroredLine[]> {
    return this.#ext.mirroredLines(th, where);
  }

  /**
   * The presence documents held (other agents', newest first).
   *
   * @example
   * ```ts ignore
   * for (const r of peer.presence()) console.log(r.doc.name, r.hops);
   * ```
   */
  presence(): PresenceRecord[] {
    return this.#ext.documents();
  }

  /**
   * Signs and sends our presence document now to every connected peer
   * that speaks presence (the timer does this when `presence` is on).
   *
   * @example
   * ```ts ignore
   * const { doc } = await peer.publishPresence();
   * ```
   */
  publishPresence(): Promise<SignedPresence> {
    this.#open("publishPresence");
    return this.#ext.publish();
  }

  /**
   * Turns presence publishing or relaying on or off at run time.
   *
   * @example
   * ```ts ignore
   * peer.setPresence({ publish: true, relay: false });
   * ```
   */
  setPresence(change: { publish?: boolean; relay?: boolean }): void {
    if (change.relay !== undefined) this.#ext.gossip.setRelay(change.relay);
    if (change.publish !== undefined) {
      this.#ext.gossip.setPublish(change.publish);
    }
  }

  /**
   * Honors `key`'s grants as our own from now on (`trust KEY`; not
   * persisted: pass `trust` to open for that).
   *
   * @example
   * ```ts ignore
   * peer.trust("ed25519:...");
   * ```
   */
  trust(key: string): void {
    if (!isKey(key)) throw new TypeError(`trust: ${key} is not an ed25519 key`);
    this.#trust.trust(key);
  }

  /**
   * Admits `key` under the allowlist from now on (`allow KEY`).
   *
   * @example
   * ```ts ignore
   * peer.allow("ed25519:...");
   * ```
   */
  allow(key: string): void {
    if (!isKey(key)) throw new TypeError(`allow: ${key} is not an ed25519 key`);
    this.#trust.allow(key);
  }

  /**
   * Stops honoring the grant with this hash (or unique prefix of 8+ hex
   * characters) here. Resolves with the full hash.
   *
   * @example
   * ```ts ignore
   * await peer.revoke("3f2a9c01");
   * ```
   */
  revoke(hash: string): Promise<string> {
    this.#open("revoke");
    return this.#trust.revoke(hash);
  }

  /**
   * Stored grants (issued, held, presented), each with whether revoked.
   *
   * @example
   * ```ts ignore
   * for (const g of await peer.grants("held")) console.log(g.hash, g.grant.caps);
   * ```
   */
  grants(
    kind?: "issued" | "held" | "presented",
  ): Promise<Array<GrantRecord & { revoked: boolean }>> {
    return this.#trust.grants(kind);
  }

  /**
   * The capabilities `peer` holds here: every grant naming it that we
   * honor (issued by us, by a trusted key, or delegated one level).
   *
   * @example
   * ```ts ignore
   * console.log([...await peer.capsOf("bob")]); // ["exec"]
   * ```
   */
  async capsOf(peer: string): Promise<string[]> {
    const key = await this.#resolve(peer);
    const presented = this.#sup.connection(key)?.remote?.grants ?? [];
    return [...await this.#trust.capsOf(key, presented)].sort();
  }

  /**
   * The last round trip to `peer` over its open connection, in ms
   * (undefined while away or before the first pong).
   *
   * @example
   * ```ts ignore
   * console.log(peer.rtt(bob)); // 3
   * ```
   */
  rtt(peer: string): number | undefined {
    return this.#sup.connection(peer)?.rtt;
  }

  /**
   * Turns `line` events on from now on, as `PeerOptions.lineEvents` does
   * at open (a live traffic view attached to a running peer).
   *
   * @example
   * ```ts ignore
   * peer.emitLines();
   * for await (const e of peer.events()) if (e.type === "line") console.log(e.message.t);
   * ```
   */
  emitLines(): void {
    this.#o = { ...this.#o, lineEvents: true };
  }

  /** The profile capabilities this peer performs itself (`serve`). */
  get serving(): string[] {
    return this.#requests.serving;
  }

  /**
   * Stops listening and dialing, says bye on every connection, waits for
   * work in flight, closes the store and ends the event streams. An
   * ephemeral peer's temp dir (spool and received blobs) is removed.
   *
   * @example
   * ```ts
   * import { Peer } from "./peer.ts";
   * const p = await Peer.open({ memory: true });
   * await p.close();
   * ```
   */
  close(): Promise<void> {
    this.#closing ??= this.#close();
    return this.#closing;
  }

  /**
   * This peer as a SAMVAD agent (its Ed25519 key is its SAMVAD key): call
   * SAMVAD agents, serve the bridge. The first call loads the SAMVAD
   * module (ajv, jose); later calls return the same agent (their options
   * are ignored).
   *
   * @example
   * ```ts ignore
   * const samvad = await peer.samvad();
   * const result = await samvad.call("agent://them.example", "echo", { text: "hi" });
   * ```
   */
  samvad(options: SamvadOptions = {}): Promise<SamvadAgent> {
    this.#open("samvad");
    this.#samvad ??= import("../samvad/samvad_agent.ts").then((m) =>
      new m.SamvadAgent(this, this.#signer, options)
    );
    return this.#samvad;
  }

  // ---- internals ----

  /** Drops unfinished incoming blobs past their TTL, now and then. */
  #expireBlobs(): void {
    const ttl = this.#o.unfinishedBlobs?.ttlMs ?? DEFAULT_UNFINISHED.ttlMs;
    const every = Math.max(1_000, Math.min(ttl / 2, 600_000));
    const timer = setTimeout(() => {
      this.#expireBlobs();
      this.#blobs.expireUnfinished().catch(() => {});
    }, every);
    Deno.unrefTimer(timer);
    this.#blobExpiry = timer;
  }

  /** Runs store retention after `delayMs`, then hourly, until close. */
  #retain(delayMs: number, retentionMs: number): void {
    const timer = setTimeout(() => {
      this.#retain(3_600_000, retentionMs);
      this.#store.expireOutbox(Date.now() - retentionMs).catch(() => {});
    }, delayMs);
    Deno.unrefTimer(timer);
    this.#retention = timer;
  }

  async #close(): Promise<void> {
    clearTimeout(this.#retention);
    await (await this.#samvad?.catch(() => undefined))?.close();
    clearTimeout(this.#blobExpiry);
    this.#ext.close();
    // Running commands are killed; their journal records stay "running",
    // so the next start answers them once, as interrupted.
    await this.#requests.close();
    await this.#sup.stop();
    while (this.#inflight.size > 0) {
      await Promise.allSettled([...this.#inflight]);
    }
    await this.#flushLog().catch(() => {});
    await this.#threads.stop();
    await this.#blobs.stop();
    this.#store.close();
    for (const q of [...this.#subs]) q.close();
    this.#subs.clear();
    if (this.#tempRoot) {
      await Deno.remove(this.#tempRoot, { recursive: true }).catch(() => {});
    }
  }

  /** The first schema error of a line we are about to queue, if any. */
  #invalid(fields: OutboxDraft["fields"]): string | undefined {
    const result = validateMessage({
      ...fields,
      id: this.#store.nextId(),
      ts: timestamp(),
    });
    return result.ok ? undefined : (result.errors[0] ?? "schema");
  }

  #open(what: string): void {
    if (this.#closing) throw new Error(`${what}: the peer is closed`);
  }

  /** The admission policy, then the application's own `admit`, if any. */
  async #admit(
    remote: RemoteHello,
    context: { dialed: boolean },
  ): Promise<string | undefined> {
    const refusal = await this.#trust.admit(remote, context);
    if (refusal !== undefined) return refusal;
    return await this.#o.admit?.(remote, context);
  }

  /** A served request's result: a msg re the request, files as blobs. */
  #reply(
    peer: string,
    reply: ResultReply,
    files: Attachment[],
  ): Promise<void> {
    // One at a time: each checks the spool after the one before queued.
    const turn = this.#replyTurn.then(() => this.#replyNow(peer, reply, files));
    this.#replyTurn = turn.catch(() => {});
    return turn;
  }

  async #replyNow(
    peer: string,
    reply: ResultReply,
    files: Attachment[],
  ): Promise<void> {
    const full = files.length > 0
      ? await this.#blobs.outgoingOver(
        peer,
        files.reduce((n, f) => n + f.size, 0),
      )
      : undefined;
    if (full !== undefined) {
      // A remote's requests must not fill our disk: the result says so.
      reply = {
        ...reply,
        parts: [
          { k: "text", text: `result not sent: ${full}` },
          {
            k: "data",
            mime: reply.parts.find((p) => p.k === "data")?.mime ??
              "application/json",
            data: { error: full },
          } as Part,
        ],
      };
      files = [];
    }
    await this.#sendTo(peer, "", {
      thread: reply.th,
      re: reply.re,
      parts: reply.parts,
      files: files.map((f) => ({
        path: f.path,
        name: f.name,
        ...(f.mime !== undefined ? { mime: f.mime } : {}),
      })),
    });
  }

  /** Lines the sharer queued itself: out now, or the host gets reached. */
  async #deliverQueued(peer: string, entries: OutboxEntry[]): Promise<void> {
    const conn = this.#sup.connection(peer);
    if (conn) {
      conn.sendEntries(entries);
      return;
    }
    if (this.#closing) return;
    await this.#sup.refreshWanted(peer);
    await this.#ensureReach(peer);
    // New lines for it: a peer we said bye to is dialed again.
    await this.#sup.resumeDialing(peer);
  }

  #emit(event: PeerEvent): void {
    if (this.#early) {
      if (this.#early.length < EARLY_EVENTS) this.#early.push(event);
      return;
    }
    for (const q of this.#subs) q.push(event);
  }

  /** The last `to` found to be a well-formed key. */
  #lastKey: string | undefined;

  /** Resolves `to` to a key: key, alias, name, or unique key prefix. */
  async #resolve(to: string): Promise<string> {
    if (typeof to !== "string" || to === "") {
      throw new TypeError(
        "peer: give a key, a unique key prefix (4+ chars), a name or an alias",
      );
    }
    // A burst names the same key each time: check its form once.
    if (to === this.#lastKey) return to;
    if (isKey(to)) {
      this.#lastKey = to;
      return to;
    }
    const records = await this.#store.peers();
    const byAlias = records.filter((p) => p.alias === to);
    if (byAlias.length === 1) return byAlias[0].key;
    const byName = records.filter((p) => p.name === to);
    if (byName.length === 1) return byName[0].key;
    if (byName.length > 1) {
      throw new Error(
        `peer "${to}" is ambiguous: ${byName.length} peers have that name; use a key`,
      );
    }
    if (to.length >= 4) {
      const keys = new Set([...records.map((p) => p.key), ...this.#sup.peers]);
      const hits = [...keys].filter((k) =>
        k.startsWith(to) || k.slice(KEY_PREFIX.length).startsWith(to)
      );
      if (hits.length === 1) return hits[0];
      if (hits.length > 1) {
        throw new Error(
          `peer "${to}" is ambiguous: ${hits.length} keys start with it`,
        );
      }
    }
    throw new Error(
      `unknown peer "${to}": give a key, a unique key prefix (4+ chars), a name or an alias`,
    );
  }

  async #remember(remote: RemoteHello, addr: string): Promise<void> {
    // One read-and-write step: the supervisor records the same peer at the
    // same moment, and neither may drop the other's address.
    await this.#store.updatePeer(remote.key, (known) => {
      const now = Date.now();
      return {
        ...known,
        key: remote.key,
        name: remote.name ?? known?.name,
        about: remote.about ?? known?.about,
        caps: remote.caps,
        addresses: [
          addr,
          ...(known?.addresses ?? []).filter((a) => a !== addr),
        ],
        dialed: true,
        firstSeen: known?.firstSeen ?? now,
        lastSeen: now,
      };
    });
  }

  /**
   * On open: dial the peers that are still wanted and have an address: those
   * we dialed, and those that gave theirs (hello.addr, NOTES item 6), so a
   * listener that restarts with lines for a peer dials it back at once.
   */
  async #redialKnown(): Promise<void> {
    for (const record of await this.#store.peers()) {
      if (record.addresses.length === 0) continue;
      // Held by a bye (ours or theirs) until something new goes to it.
      if (this.#sup.quiet(record.key)) continue;
      if (await this.#sup.refreshWanted(record.key)) {
        this.#sup.reach(record.key, record.addresses);
      }
    }
  }

  /** A known-but-away peer with an address gets a dialer when we queue for it. */
  async #ensureReach(key: string): Promise<void> {
    if (this.#sup.connection(key) || this.#sup.dialer(key)) return;
    const record = await this.#store.peer(key);
    if (record && record.addresses.length > 0) {
      this.#sup.reach(key, record.addresses);
    }
  }

  async #inOutbox(id: string): Promise<boolean> {
    const known = this.#sentTo.get(id);
    const peers = known
      ? [known]
      : (await this.#store.peers()).map((p) => p.key);
    for (const peer of peers) {
      if (await this.#store.inOutbox(peer, id)) return true;
    }
    return false;
  }

  /** Our side of a thread record: subject on the first msg, our state. */
  async #touchThread(
    peer: string,
    th: string,
    change: ThreadPatch,
  ): Promise<void> {
    // A burst of sends in one thread writes its record once a second, not
    // once a msg: only `updated` (for retention, in days) would change.
    const id = `${peer} ${th}`;
    const now = Date.now();
    const onlyTouch = change.subject === undefined && !change.mine &&
      !change.read;
    const last = this.#threadTouched.get(id);
    if (onlyTouch && last !== undefined && now - last < TOUCH_EVERY_MS) return;
    await this.#store.patchThread(peer, th, change);
    this.#threadTouched.delete(id);
    this.#threadTouched.set(id, now);
    if (this.#threadTouched.size > ACKED_MEMORY) {
      this.#threadTouched.delete(this.#threadTouched.keys().next().value!);
    }
  }

  #onSupervisorEvent(e: SupervisorEvent): void {
    const ts = timestamp();
    switch (e.type) {
      case "connected":
        this.#emit({
          type: "connected",
          peer: e.peer,
          ts,
          dialed: e.dialed,
          remoteAddr: e.remoteAddr,
          caps: e.caps,
          ...(e.name !== undefined ? { name: e.name } : {}),
          ...(e.about !== undefined ? { about: e.about } : {}),
        });
        this.#ext.onConnected(this.#sup.connection(e.peer));
        break;
      case "disconnected":
        this.#blobs.disconnected(e.peer);
        this.#emit({
          type: "disconnected",
          peer: e.peer,
          ts,
          reason: e.reason,
        });
        this.#ext.changed();
        break;
      case "dial_failed":
        this.#localError(e.peer, "dial", `${e.address}: ${e.error}`);
        break;
      case "handler_error":
        this.#localError(e.peer, "handler", `${e.t}: ${e.error}`);
        break;
      case "connection_failed":
        this.#localError(e.peer ?? "", "connection", e.error);
        break;
    }
  }

  // ---- actors: threads (PeerThreads) and blob transfers (PeerBlobs) ----

  /** Where a peer's threads and transfers hang in the inspector's tree. */
  #parentId(peer: string): string {
    return (this.#sup.connection(peer)?.actor ?? this.#sup.actor).sessionId;
  }

  #localError(peer: string, code: string, detail: string, ref?: string): void {
    this.#emit({
      type: "error",
      peer,
      ts: timestamp(),
      code,
      detail,
      remote: false,
      ...(ref !== undefined ? { ref } : {}),
    });
  }

  /**
   * Every line after the handshake goes to the traffic log, batched (the
   * received content lines are logged by store.receive, in their commit).
   */
  #logLine(
    peer: string | undefined,
    dir: "in" | "out",
    raw: string,
    parsed?: Record<string, unknown>,
  ): void {
    // Without the parsed line: a local note, or a line the connection refused.
    const m = parsed;
    if (!peer || m === undefined || typeof m.t !== "string") return;
    let bare: Record<string, unknown> | undefined;
    if (m.t === "chunk") {
      const { data: _, ...rest } = m;
      bare = rest;
    } else if (dir === "in" && !KNOWN_TYPES.has(m.t)) {
      // Ignored (unknown type): its body is not ours to keep; only a note.
      bare = {
        t: m.t.slice(0, 64),
        ...(typeof m.id === "string" ? { id: m.id.slice(0, 64) } : {}),
        ignored: true,
        bytes: raw.length,
      };
    }
    if (this.#o.lineEvents && !HANDSHAKE.has(m.t)) {
      this.#emit(
        {
          type: "line",
          peer,
          ts: timestamp(),
          dir,
          message: (bare ?? m) as LineMessage,
        } satisfies LineEvent,
      );
    }
    if (dir === "in" && LOGGED_BY_RECEIVE.has(m.t)) return;
    if (LIVENESS.has(m.t) || HANDSHAKE.has(m.t)) return;
    // Acks have no log rows: one per content line would double the log's
    // writes, and the acked line's own row and the `acked` event say it.
    if (m.t === "ack") return;
    const line = bare ? JSON.stringify(bare) : raw;
    this.#logBuffer.push({
      peer,
      dir,
      t: m.t,
      ...(typeof m.id === "string" ? { id: m.id } : {}),
      ...(typeof m.th === "string" ? { th: m.th } : {}),
      line,
      at: Date.now(),
    });
    if (!this.#logFlush) {
      queueMicrotask(() => void this.#flushLog().catch(() => {}));
    }
  }

  /** Writes the batched log lines; resolves when all are written. */
  #flushLog(): Promise<void> {
    if (!this.#logFlush && this.#logBuffer.length === 0) {
      return Promise.resolve();
    }
    this.#logFlush ??= (async () => {
      try {
        while (this.#logBuffer.length > 0) {
          const batch = this.#logBuffer.splice(0, LOG_BATCH);
          await this.#store.log(batch);
        }
      } finally {
        this.#logFlush = undefined;
      }
    })();
    return this.#logFlush;
  }

  /**
   * Remembers whom `id` went to (a cache for waitAck; the outbox is the
   * truth): at most ACKED_MEMORY, so msgs queued to a peer that is down are
   * held in the store only.
   */
  #noteSent(id: string, key: string): void {
    this.#sentTo.set(id, key);
    if (this.#sentTo.size > ACKED_MEMORY) {
      this.#sentTo.delete(this.#sentTo.keys().next().value!);
    }
  }

  #noteAck(peer: string, id: string, th: string | undefined): void {
    this.#acked.add(id);
    if (this.#acked.size > ACKED_MEMORY) {
      this.#acked.delete(this.#acked.values().next().value!);
    }
    this.#sentTo.delete(id);
    for (const resolve of this.#ackWaiters.get(id) ?? []) resolve();
    this.#emit({
      type: "acked",
      peer,
      ts: timestamp(),
      id,
      ...(th ? { th } : {}),
    });
    const spool = this.#spoolByMsg.get(id);
    if (spool) {
      this.#spoolByMsg.delete(id);
      this.#blobs.acked(peer, spool.refs);
      void this.#releaseSpool(spool, "complete");
    }
  }

  async #releaseSpool(
    spool: PendingSpool,
    status: "complete" | "refused",
  ): Promise<void> {
    for (const path of spool.paths) await discardSpooled(path).catch(() => {});
    if (this.#closing) return;
    for (const ref of spool.refs) {
      const record = await this.#store.blob(spool.peer, ref, "out").catch(() =>
        undefined
      );
      // Checked after the read: a refusal that came meanwhile wins (its
      // own write marks the record refused).
      if (
        record && record.status === "active" &&
        !this.#blobs.wasRefused(spool.peer, ref)
      ) {
        await this.#store.putBlob({
          ...record,
          status,
          bytes: status === "complete" ? record.size : record.bytes,
          updated: Date.now(),
        }).catch(() => {});
      }
    }
  }

  /**
   * Before received lines count as seen: each chunk's bytes are written and
   * synced to its sink and the BlobRecord is persisted, so a crash can never
   * leave a chunk seen (not replayed) but missing from the file.
   */
  async #beforeCommit(
    peer: string,
    conn: Connection,
    lines: ReceivedLine[],
  ): Promise<ReceiveExtras | void> {
    // An acked request is a promise: journaled before its msg commits.
    const msgs = lines.filter((l) => l.message.t === "msg").map((l) =>
      l.message as Msg
    );
    if (msgs.length > 0) {
      await this.#requests.journal(peer, msgs, conn.remote?.grants ?? []);
    }
    const chunks = lines.filter((l) => l.message.t === "chunk");
    if (chunks.length === 0) return;
    // The sinks' records commit with the chunks' seen markers.
    return { blobs: await this.#blobs.takeChunks(peer, conn, chunks) };
  }

  async #onErr(d: Delivery): Promise<void> {
    const m = d.message as Err;
    this.#emit({
      type: "error",
      peer: d.peer,
      ts: timestamp(),
      code: m.code,
      detail: m.detail ?? "",
      remote: true,
      ...(m.ref !== undefined ? { ref: m.ref } : {}),
      ...(m.re !== undefined ? { re: m.re } : {}),
    });
    if (m.code !== "blob_refused" || typeof m.ref !== "string") return;
    await this.#blobs.refused(d.peer, m.ref, m.detail ?? "refused by the peer");
  }

  async #checkGrant(
    grant: unknown,
  ): Promise<{ ok: true; grant: Grant } | { ok: false; reason: string }> {
    const verdict = await verifyGrant(grant);
    if (!verdict.ok) return verdict;
    if (verdict.grant.sub !== this.key) {
      return { ok: false, reason: "the grant's sub is not our key" };
    }
    return verdict;
  }

  async #onGrant(d: Delivery): Promise<void> {
    const m = d.message as GrantMsg;
    const verdict = await this.#checkGrant(m.grant);
    if (verdict.ok) {
      const hash = await grantHash(verdict.grant);
      // Grant lines are replayed until a later ack: a repeat is not news.
      const held = await this.#store.grants("held");
      if (held.some((g) => g.hash === hash)) return;
      await this.#store.putGrant({
        kind: "held",
        hash,
        grant: verdict.grant,
        from: d.peer,
        storedAt: Date.now(),
      });
    }
    this.#emit({
      type: "grant",
      peer: d.peer,
      ts: timestamp(),
      grant: m.grant,
      valid: verdict.ok,
      ...(verdict.ok ? {} : { reason: verdict.reason }),
    });
  }

  async #onIntroduce(d: Delivery): Promise<void> {
    const m = d.message as Introduce;
    const intro = m.peer;
    if (!intro || !isKey(intro.key) || intro.key === this.key) return;
    let grant: Grant | undefined;
    if (m.grant !== undefined) {
      const verdict = await this.#checkGrant(m.grant);
      if (verdict.ok) {
        grant = verdict.grant;
        await this.#store.putGrant({
          kind: "held",
          hash: await grantHash(grant),
          grant,
          from: d.peer,
          storedAt: Date.now(),
        });
      } else {
        this.#localError(
          d.peer,
          "grant",
          `introduction grant: ${verdict.reason}`,
        );
      }
    }
    const known = await this.#store.peer(intro.key);
    const now = Date.now();
    const addresses = [...(known?.addresses ?? [])];
    if (intro.address && !addresses.includes(intro.address)) {
      addresses.push(intro.address);
    }
    await this.#store.putPeer({
      ...known,
      key: intro.key,
      name: known?.name ?? intro.name,
      addresses,
      firstSeen: known?.firstSeen ?? now,
      lastSeen: known?.lastSeen ?? now,
    });
    this.#emit({
      type: "introduced",
      peer: d.peer,
      ts: timestamp(),
      key: intro.key,
      ...(intro.name !== undefined ? { name: intro.name } : {}),
      ...(intro.address !== undefined ? { address: intro.address } : {}),
      ...(grant ? { grant } : {}),
    });
  }
}
