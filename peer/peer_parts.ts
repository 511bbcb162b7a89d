/**
 * {@link PeerParts}: how a Peer is built and taken down. Opens the store
 * and identity, makes the parts (supervisor, threads, blobs, trust,
 * request server, extensions, sender, inbound handlers, traffic log,
 * events) and wires each one's callbacks to the others; `close` stops them
 * in order. The public API over it is `Peer` (peer.ts).
 *
 * @module
 */

import { Supervisor, type SupervisorEvent } from "../actors/supervisor.ts";
import type { RemoteHello } from "../actors/connection.ts";
import { PeerThreads } from "./peer_threads.ts";
import { PeerBlobs } from "./peer_blobs.ts";
import type { InspectionHub } from "../inspector/inspection_hub.ts";
import { servedEvent } from "./peer_events.ts";
import { PeerTrust } from "./peer_trust.ts";
import { hasRequests } from "../profile/profile.ts";
import { RequestServer } from "../profile/request_server.ts";
import { PeerExtensions } from "../extensions/peer_extensions.ts";
import { MirrorSharer } from "../extensions/mirror.ts";
import { openStore } from "../storage/open_store.ts";
import type { Store } from "../storage/store.ts";
import { DEFAULT_MAX_BLOB_BYTES } from "../storage/spool.ts";
import { Signer } from "../wire/keys.ts";
import { timestamp } from "../wire/time.ts";
import type { Msg, Private } from "../wire/types.ts";
import { AckTracker } from "./ack_tracker.ts";
import { EventHub } from "./event_hub.ts";
import { Housekeeping } from "./housekeeping.ts";
import { InboundHandlers } from "./inbound_handlers.ts";
import { NameResolver } from "./name_resolver.ts";
import { PeerDirectory } from "./peer_directory.ts";
import {
  checkPeerOptions,
  DEFAULT_CAPS,
  type PeerOptions,
  protectedDirs,
} from "./peer_options.ts";
import { PeerSender, queueLines } from "./peer_sender.ts";
import { TrafficLog } from "./traffic_log.ts";

/** Where a peer keeps files: spool and received blobs (and its temp dir). */
interface PeerDirs {
  spool: string;
  blobs: string;
  temp?: string;
}

/**
 * The parts of one Peer, wired together. Each API call of `Peer` goes to
 * one of them.
 *
 * @example
 * ```ts
 * import { PeerParts } from "./peer_parts.ts";
 * const parts = await PeerParts.open({ memory: true });
 * console.log(parts.signer.key.startsWith("ed25519:")); // true
 * await parts.close();
 * ```
 */
export class PeerParts {
  /** Our identity. */
  readonly signer: Signer;
  /** The durable side: outbox, threads, grants, blobs, log. */
  readonly store: Store;
  /** Listeners, dialers, connections; routes received lines. */
  readonly sup: Supervisor;
  /** Thread actors, our side of thread records, seq-ordered events. */
  readonly threads: PeerThreads;
  /** Blob transfers, sinks and their actors. */
  readonly blobs: PeerBlobs;
  /** Trust, admission and the caps a peer holds here. */
  readonly trust: PeerTrust;
  /** Requests served for remotes (exec, fs). */
  readonly requests: RequestServer;
  /** Presence and mirror. */
  readonly ext: PeerExtensions;
  /** The event streams. */
  readonly events: EventHub = new EventHub();
  /** The traffic log's writer. */
  readonly log: TrafficLog;
  /** Acks of our lines, and who waits for them. */
  readonly acks: AckTracker;
  /** Known peers and reaching them. */
  readonly directory: PeerDirectory;
  /** Names, aliases and key prefixes to keys. */
  readonly names: NameResolver;
  /** Everything we queue. */
  readonly sender: PeerSender;
  /** Received err, grant and introduce lines; work before a commit. */
  readonly inbound: InboundHandlers;
  /** The open options. */
  readonly options: PeerOptions;
  /** The inspection hub, when inspection is on. */
  hub: InspectionHub | undefined;
  /** Set once close began. */
  closing: Promise<void> | undefined;
  #housekeeping: Housekeeping;
  #tempRoot: string | undefined;
  #inflight = new Set<Promise<unknown>>();

  private constructor(
    signer: Signer,
    store: Store,
    options: PeerOptions,
    dirs: PeerDirs,
    hosts: string[],
  ) {
    this.signer = signer;
    this.store = store;
    this.options = options;
    this.hub = options.inspect;
    this.#tempRoot = dirs.temp;
    const maxBlobBytes = options.maxBlobBytes ?? DEFAULT_MAX_BLOB_BYTES;
    const events = this.events;
    const closing = () => this.closing !== undefined;
    const track = <T>(p: Promise<T>): Promise<T> => this.#track(p);
    this.log = new TrafficLog(store, (e) => events.emit(e));
    this.log.lineEvents = options.lineEvents ?? false;
    this.acks = new AckTracker(store, (e) => events.emit(e));
    this.blobs = new PeerBlobs({
      store,
      blobsDir: dirs.blobs,
      maxBlobBytes,
      ...(options.unfinishedBlobs
        ? { unfinished: options.unfinishedBlobs }
        : {}),
      ...(options.inspect ? { inspect: options.inspect } : {}),
      parentId: (peer) => this.#parentId(peer),
      emit: (event) => events.emit(event),
      localError: (peer, code, detail, ref) =>
        events.localError(peer, code, detail, ref),
      closing,
    });
    this.threads = new PeerThreads({
      store,
      ...(options.inspect ? { inspect: options.inspect } : {}),
      parentId: (peer) => this.#parentId(peer),
      emit: (event) => events.emit(event),
      closing,
      onLine: (peer, m) => this.ext.onLine(peer, "in", m),
      resolveBlob: (peer, part, conn) => this.blobs.resolve(peer, part, conn),
      replayBlob: (peer, part) => this.blobs.replay(peer, part),
      requests: (peer, m, conn) =>
        this.requests.handle(peer, m, conn.remote?.grants ?? []),
    });
    this.trust = new PeerTrust(store, {
      ownKey: signer.key,
      trust: options.trust,
      accept: options.accept,
      allow: options.allow,
      onDecision: (d) =>
        events.emit({
          type: "admission",
          peer: d.key,
          ts: timestamp(),
          admitted: d.admitted,
          why: d.why,
          caps: d.caps,
          ...(d.detail !== undefined ? { detail: d.detail } : {}),
        }),
    });
    this.requests = new RequestServer({
      serve: options.serve,
      root: options.root,
      protect: protectedDirs(options, dirs.temp),
      execEnvPass: options.execEnvPass,
      spoolDir: `${dirs.spool}/served`,
      execTimeoutMs: options.execTimeoutMs,
      capsOf: (peer, presented) => this.trust.capsOf(peer, presented),
      store,
      maxServing: options.maxServing,
      // Outboxed like a reply: a dropped connection does not lose it. Never
      // acked, it leaves the outbox with a later ack from the peer.
      forbid: async (peer, err) => {
        await queueLines(store, this.sup, peer, [{
          fields: { t: "err", ...err },
        }]);
      },
      reply: (peer, reply, files) => this.sender.reply(peer, reply, files),
      onServed: (record) => events.emit(servedEvent(record, timestamp())),
      onError: (peer, detail) => events.localError(peer, "serve", detail),
    });
    this.ext = new PeerExtensions({
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
        this.sup.peers.map((k) => this.sup.connection(k)!).filter(Boolean),
      deliver: (peer, entries) =>
        track(this.directory.deliverQueued(peer, entries)),
      onPresence: (e) =>
        events.emit({
          type: "presence",
          peer: e.origin,
          ts: timestamp(),
          kind: e.kind,
          ...(e.name !== undefined ? { name: e.name } : {}),
          ...(e.detail !== undefined ? { detail: e.detail } : {}),
        }),
      onMirror: (sharer, outcome, th) =>
        events.emit({
          type: "mirror",
          peer: sharer,
          ts: timestamp(),
          th,
          outcome,
        }),
    });
    this.sup = new Supervisor({
      signer,
      store,
      name: options.name,
      about: options.about,
      caps: options.caps ?? [...DEFAULT_CAPS],
      timeouts: options.timeouts,
      maxUnsentBytes: options.maxUnsentBytes,
      dialer: options.dialer,
      allowPublic: options.allowPublic,
      caCerts: options.caCerts,
      tls: options.tls,
      addr: options.addr,
      limits: options.limits,
      admit: (remote, context) => this.#admit(remote, context),
      grants: (remote) => this.trust.toPresent(remote.key),
      shares: () => this.ext.hosts,
      retentionMs: options.retentionMs,
      routes: {
        thread: () => (d) => track(this.threads.deliver(d)),
        // Chunks are written in beforeCommit; nothing is left to do after.
        blob: () => () => {},
        grant: (d) => track(this.inbound.onGrant(d)),
        introduce: (d) => track(this.inbound.onIntroduce(d)),
        err: (d) => track(this.inbound.onErr(d)),
        presence: (d) =>
          void track(
            this.ext.onPresence(
              d.peer,
              d.message as unknown as Record<string, unknown>,
              d.raw,
            ),
          ),
        mirror: (d) =>
          track(
            this.ext.onMirror(
              d.peer,
              d.message as unknown as Record<string, unknown>,
            ),
          ).then(() => {}),
        private: (d) =>
          track(this.ext.onPrivate(d.peer, (d.message as Private).th)),
      },
      onEvent: (e) => this.#onSupervisorEvent(e),
      onLine: (peer, dir, raw, message, logged) =>
        this.log.line(peer, dir, raw, message, logged),
      beforeCommit: (peer, conn, lines) =>
        this.inbound.beforeCommit(peer, conn, lines),
      // A chunk's bytes go to its file as it arrives; the batch syncs.
      onChunk: (peer, _conn, line) => this.blobs.arrive(peer, line),
      // Requests are journaled before their msg commits: not on the fast path.
      needsBeforeCommit: (_peer, message) =>
        message.t === "msg" && hasRequests(message as Msg),
      // Each fresh msg/state holds its event's turn: events leave in seq order.
      afterCommit: (peer, lines) => this.threads.afterCommit(peer, lines),
      onAck: (peer, ack) => this.#onAck(peer, ack.re, ack.th),
      onBye: (peer, reason) =>
        events.emit({
          type: "bye",
          peer,
          ts: timestamp(),
          ...(reason !== undefined ? { reason } : {}),
        }),
      onSent: (peer, entry) => {
        if (entry.t === "chunk") track(this.blobs.chunkSent(peer, entry));
      },
      ...(options.inspect ? { inspect: options.inspect } : {}),
    });
    this.names = new NameResolver(store, () => this.sup.peers);
    this.directory = new PeerDirectory(store, this.sup, closing);
    this.inbound = new InboundHandlers({
      ownKey: signer.key,
      store,
      events,
      blobs: this.blobs,
      requests: this.requests,
    });
    this.sender = new PeerSender({
      signer,
      store,
      sup: this.sup,
      names: this.names,
      directory: this.directory,
      acks: this.acks,
      threads: this.threads,
      blobs: this.blobs,
      ext: this.ext,
      spoolDir: dirs.spool,
      maxBlobBytes,
      ...(options.chunkSize !== undefined
        ? { chunkSize: options.chunkSize }
        : {}),
      closing,
    });
    this.#housekeeping = new Housekeeping(store, this.blobs);
  }

  /**
   * Opens the store (or a memory one) and the identity in it, makes the
   * directories and the parts, and starts them: listeners come with
   * `listen`, but known peers still wanted are dialed again now.
   */
  static async open(options: PeerOptions): Promise<PeerParts> {
    checkPeerOptions(options);
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
      let dirs: PeerDirs;
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
      const parts = new PeerParts(signer, store, options, dirs, hosts);
      parts.sup.start();
      parts.#housekeeping.start({ retentionMs: options.retentionMs });
      await Promise.all([
        parts.sup.loadQuiet(),
        parts.sup.warm(),
        parts.trust.warm(),
      ]);
      await parts.directory.redialKnown();
      // Requests acked before a crash: served now, or answered interrupted.
      const recovering = parts.requests.recover();
      parts.#inflight.add(recovering);
      void recovering.finally(() => parts.#inflight.delete(recovering));
      return parts;
    } catch (error) {
      store.close();
      throw error;
    }
  }

  /** Keeps `p` among the work `close` waits for. */
  #track<T>(p: Promise<T>): Promise<T> {
    this.#inflight.add(p);
    void p.finally(() => this.#inflight.delete(p)).catch(() => {});
    return p;
  }

  /** An ack of our line `id`: waiters, the `acked` event, its spool. */
  #onAck(peer: string, id: string, th: string | undefined): void {
    this.acks.noteAck(peer, id, th);
    this.sender.acked(peer, id);
  }

  /**
   * Stops everything in order: `first` (the SAMVAD agent), the timers,
   * extensions, served requests, the supervisor, the work in flight, the
   * log, the actors, the store, and the event streams.
   */
  close(first?: () => Promise<void>): Promise<void> {
    this.closing ??= this.#close(first);
    return this.closing;
  }

  async #close(first?: () => Promise<void>): Promise<void> {
    this.#housekeeping.stop();
    await first?.();
    this.ext.close();
    // Running commands are killed; their journal records stay "running",
    // so the next start answers them once, as interrupted.
    await this.requests.close();
    await this.sup.stop();
    while (this.#inflight.size > 0) {
      await Promise.allSettled([...this.#inflight]);
    }
    await this.log.flush().catch(() => {});
    await this.threads.stop();
    await this.blobs.stop();
    this.store.close();
    this.events.close();
    if (this.#tempRoot) {
      await Deno.remove(this.#tempRoot, { recursive: true }).catch(() => {});
    }
  }

  /** The admission policy, then the application's own `admit`, if any. */
  async #admit(
    remote: RemoteHello,
    context: { dialed: boolean },
  ): Promise<string | undefined> {
    const refusal = await this.trust.admit(remote, context);
    if (refusal !== undefined) return refusal;
    return await this.options.admit?.(remote, context);
  }

  /** Where a peer's threads and transfers hang in the inspector's tree. */
  #parentId(peer: string): string {
    return (this.sup.connection(peer)?.actor ?? this.sup.actor).sessionId;
  }

  #onSupervisorEvent(e: SupervisorEvent): void {
    const ts = timestamp();
    switch (e.type) {
      case "connected":
        this.events.emit({
          type: "connected",
          peer: e.peer,
          ts,
          dialed: e.dialed,
          remoteAddr: e.remoteAddr,
          caps: e.caps,
          ...(e.name !== undefined ? { name: e.name } : {}),
          ...(e.about !== undefined ? { about: e.about } : {}),
        });
        this.ext.onConnected(this.sup.connection(e.peer));
        break;
      case "disconnected":
        this.blobs.disconnected(e.peer);
        this.events.emit({
          type: "disconnected",
          peer: e.peer,
          ts,
          reason: e.reason,
        });
        this.ext.changed();
        break;
      case "dial_failed":
        this.events.localError(e.peer, "dial", `${e.address}: ${e.error}`);
        break;
      case "handler_error":
        this.events.localError(e.peer, "handler", `${e.t}: ${e.error}`);
        break;
      case "connection_failed":
        this.events.localError(e.peer ?? "", "connection", e.error);
        break;
    }
  }

  // ---- actors: threads (PeerThreads) and blob transfers (PeerBlobs) ----
}
