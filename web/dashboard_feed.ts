/**
 * What the dashboard shows, read from a running {@link Peer}: a snapshot
 * (peers, presence, threads, transfers, recent traffic) and a live stream
 * of changes, numbered so a page that reconnects with `Last-Event-ID` gets
 * exactly what it missed (from a bounded replay buffer; a page too far
 * behind, or from an earlier run, gets a fresh snapshot instead).
 *
 * @module
 */

import type { Peer } from "../peer/peer.ts";
import type {
  ConnectedEvent,
  PeerEvent,
  ProgressEvent,
} from "../peer/peer_events.ts";
import type { BlobRecord, LogEntry } from "../storage/store.ts";
import { tailLog } from "./tail_log.ts";
import type {
  ActivityLine,
  DashboardEvents,
  NetPeer,
  PresenceDoc,
  SelfInfo,
  Snapshot,
  ThreadRow,
  Transfer,
} from "./dashboard_types.ts";

/** A peer as the daemon summarizes it (see `cli/protocol.ts` PeerSummary). */
export interface PeerCounts {
  key: string;
  queued: number;
  unread: number;
  openThreads: number;
  /** Capabilities it holds on us. */
  caps: string[];
}

/** What the dashboard reads from. */
export interface DashboardSource {
  peer: Peer;
  /** Our name and listening addresses. */
  self(): SelfInfo;
  /** Per-peer counts; without it they are computed from the store. */
  counts?(): Promise<PeerCounts[]>;
}

/** One numbered event of the stream. */
export interface FeedEvent {
  /** `RUN-N`, for `Last-Event-ID`. */
  id: string;
  event: keyof DashboardEvents;
  /** JSON text. */
  data: string;
}

/** Options of {@link DashboardFeed}. */
export interface DashboardFeedOptions {
  /** Events kept for replay. Default 5000. */
  replay?: number;
  /** Traffic lines in a snapshot. Default 300. */
  activity?: number;
  /** The page may write (goes into the snapshot). */
  write?: boolean;
}

const LINE_CLIP = 2000;
/** The replay buffer's bound in bytes too (full peer and thread lists repeat). */
const RING_BYTES = 8 * 1024 * 1024;
const REFRESH_MS = 60;
const PROGRESS_MS = 100;
const FINISHED = new Set(["done", "complete", "refused", "failed"]);

/**
 * Follows a Peer for the dashboard.
 *
 * @example
 * ```ts
 * import { Peer } from "../peer/peer.ts";
 * import { DashboardFeed } from "./dashboard_feed.ts";
 * const peer = await Peer.open({ memory: true, name: "alice" });
 * const feed = new DashboardFeed({ peer, self: () => ({ key: peer.key, addrs: [] }) });
 * console.log((await feed.snapshot()).self.key === peer.key); // true
 * await feed.close();
 * await peer.close();
 * ```
 */
export class DashboardFeed {
  readonly #src: DashboardSource;
  readonly #o: Required<DashboardFeedOptions>;
  /** Distinguishes this run's event ids from an earlier run's. */
  readonly #run = crypto.randomUUID().slice(0, 8);
  #n = 0;
  #ring: Array<FeedEvent & { n: number }> = [];
  #ringBytes = 0;
  /** A list refresh was skipped while nobody watched. */
  #stale = false;
  #subs = new Set<(e: FeedEvent) => void>();
  #live = new Map<string, Transfer>();
  #lastProgress = new Map<string, number>();
  #timers = new Map<string, ReturnType<typeof setTimeout>>();
  #names = new Map<string, string | undefined>();
  #events: AsyncIterableIterator<PeerEvent>;
  /** Connected peers whose record may not be stored yet. */
  #hellos = new Map<string, ConnectedEvent>();
  /** Resolves when the Peer's event stream ended. */
  readonly closed: Promise<void>;

  constructor(source: DashboardSource, options: DashboardFeedOptions = {}) {
    this.#src = source;
    this.#o = {
      replay: options.replay ?? 5000,
      activity: options.activity ?? 300,
      write: options.write ?? false,
    };
    source.peer.emitLines();
    this.#events = source.peer.events();
    this.closed = this.#follow();
  }

  /** Whether the page may write. */
  get write(): boolean {
    return this.#o.write;
  }

  /** The id of the newest event (what a snapshot taken now is "at"). */
  get lastId(): string {
    return `${this.#run}-${this.#n}`;
  }

  /**
   * Streams events to `send`: from after `lastEventId` when the buffer
   * still holds it, else a snapshot first. Returns the unsubscribe.
   */
  subscribe(
    lastEventId: string | null,
    send: (e: FeedEvent) => void,
  ): () => void {
    let ready = false;
    let gone = false;
    const live = (e: FeedEvent) => {
      if (ready) send(e);
    };
    this.#subs.add(live);
    const after = this.#replayable(lastEventId);
    const start = async () => {
      let from = after;
      if (from === undefined) {
        from = this.#n;
        const snap = await this.snapshot();
        if (gone) return;
        send({
          id: `${this.#run}-${from}`,
          event: "snapshot",
          data: JSON.stringify(snap),
        });
      }
      for (const e of this.#ring) if (e.n > from) send(e);
      ready = true;
      // Lists not recomputed while nobody watched: send them fresh.
      if (after !== undefined && this.#stale) this.#refreshLists();
    };
    start().catch(() => {});
    return () => {
      gone = true;
      this.#subs.delete(live);
    };
  }

  /** The seq to replay after, or undefined when a snapshot is needed. */
  #replayable(lastEventId: string | null): number | undefined {
    const m = lastEventId?.match(/^([0-9a-f]{8})-(\d+)$/);
    if (!m || m[1] !== this.#run) return undefined;
    const n = Number(m[2]);
    const oldest = this.#ring[0]?.n ?? this.#n + 1;
    return n <= this.#n && n >= oldest - 1 ? n : undefined;
  }

  /** Everything the page draws, now. */
  async snapshot(): Promise<Snapshot> {
    const [peers, threads, transfers, activity] = await Promise.all([
      this.peers(),
      this.threads(),
      this.transfers(),
      this.activity(this.#o.activity),
    ]);
    return {
      self: this.#src.self(),
      write: this.#o.write,
      peers,
      presence: this.presence(),
      threads,
      transfers,
      activity,
    };
  }

  /** Known peers, with counts and round trips. */
  async peers(): Promise<NetPeer[]> {
    const peer = this.#src.peer;
    const records = await peer.peers();
    // A new peer's record is stored just after its `connected` event: until
    // then it is drawn from what its hello said.
    for (const [key, hello] of this.#hellos) {
      if (records.some((r) => r.key === key)) this.#hellos.delete(key);
      else {
        records.push({
          key,
          ...(hello.name ? { name: hello.name } : {}),
          ...(hello.about ? { about: hello.about } : {}),
          caps: hello.caps,
          addresses: hello.dialed ? [hello.remoteAddr] : [],
          firstSeen: Date.now(),
          lastSeen: Date.now(),
          connected: true,
        });
      }
    }
    const counts = new Map(
      (await (this.#src.counts?.() ?? this.#countsFromStore()))
        .map((c) => [c.key, c]),
    );
    return records.map((p) => {
      this.#names.set(p.key, p.alias ?? p.name);
      const c = counts.get(p.key);
      const rtt = p.connected ? peer.rtt(p.key) : undefined;
      return {
        key: p.key,
        ...(p.name ? { name: p.name } : {}),
        ...(p.alias ? { alias: p.alias } : {}),
        ...(p.about ? { about: p.about } : {}),
        connected: p.connected,
        addresses: p.addresses,
        caps: p.caps ?? [],
        granted: c?.caps ?? [],
        ...(rtt !== undefined ? { rtt } : {}),
        queued: c?.queued ?? 0,
        unread: c?.unread ?? 0,
        openThreads: c?.openThreads ?? 0,
        lastSeen: p.lastSeen,
      };
    }).sort((a, b) =>
      Number(b.connected) - Number(a.connected) || b.lastSeen - a.lastSeen
    );
  }

  async #countsFromStore(): Promise<PeerCounts[]> {
    const store = this.#src.peer.store;
    const threads = await store.threads();
    const out: PeerCounts[] = [];
    for (const p of await store.peers()) {
      const mine = threads.filter((t) => t.peer === p.key);
      out.push({
        key: p.key,
        queued: (await store.outbox(p.key)).length,
        unread: mine.reduce((n, t) => n + t.unread, 0),
        openThreads: mine.length,
        caps: [],
      });
    }
    return out;
  }

  /** Presence documents heard through gossip. */
  presence(): PresenceDoc[] {
    const now = Date.now();
    return this.#src.peer.presence().map((r) => ({
      origin: r.origin,
      ...(r.doc.name ? { name: r.doc.name } : {}),
      ...(r.doc.about ? { about: r.doc.about } : {}),
      ...(r.doc.harness ? { harness: r.doc.harness } : {}),
      ...(r.doc.model ? { model: r.doc.model } : {}),
      ...(r.doc.host ? { host: r.doc.host } : {}),
      hops: r.hops,
      via: r.via,
      ...(r.doc.unread !== undefined ? { unread: r.doc.unread } : {}),
      ...(r.doc.outbox !== undefined ? { outbox: r.doc.outbox } : {}),
      ...(r.doc.waiting ? { waiting: true } : {}),
      peers: (r.doc.peers ?? []).map((p) => ({
        key: p.key,
        ...(p.name ? { name: p.name } : {}),
        ...(p.up ? { up: true } : {}),
      })),
      age_ms: Math.max(0, now - r.received),
    }));
  }

  /** Every thread, newest activity first. */
  async threads(): Promise<ThreadRow[]> {
    const rows: ThreadRow[] = [];
    for (const t of await this.#src.peer.threads()) {
      const peerName = await this.#nameOf(t.peer);
      rows.push({
        peer: t.peer,
        ...(peerName ? { peerName } : {}),
        th: t.th,
        ...(t.subject ? { subject: t.subject } : {}),
        ...(t.mine ? { mine: t.mine } : {}),
        ...(t.theirs ? { theirs: t.theirs } : {}),
        unread: t.unread,
        updated: t.updated,
      });
    }
    return rows.sort((x, y) => y.updated.localeCompare(x.updated));
  }

  /** Transfers: the live ones, then the stored ones, newest first. */
  async transfers(limit = 200): Promise<Transfer[]> {
    const byKey = new Map<string, Transfer>();
    for (const b of await this.#src.peer.store.blobs()) {
      byKey.set(
        transferKey(b.dir, b.peer, b.ref),
        await this.#fromRecord(b),
      );
    }
    for (const [k, t] of this.#live) {
      const stored = byKey.get(k);
      if (!stored || stored.updated <= t.updated) byKey.set(k, t);
    }
    return [...byKey.values()].sort((a, b) => b.updated - a.updated)
      .slice(0, limit);
  }

  async #fromRecord(b: BlobRecord): Promise<Transfer> {
    const peerName = await this.#nameOf(b.peer);
    return {
      peer: b.peer,
      ...(peerName ? { peerName } : {}),
      dir: b.dir,
      ref: b.ref,
      ...(b.name ? { name: b.name } : {}),
      ...(b.th ? { th: b.th } : {}),
      bytes: b.status === "complete" && b.dir === "out" ? b.size : b.bytes,
      total: b.size,
      rate: 0,
      status: b.status,
      updated: b.updated,
    };
  }

  /** The newest `count` traffic-log lines, oldest first. */
  async activity(count: number): Promise<ActivityLine[]> {
    const entries = await tailLog(this.#src.peer, count);
    return entries.map(toActivity);
  }

  async #nameOf(key: string): Promise<string | undefined> {
    if (!this.#names.has(key)) {
      const rec = await this.#src.peer.store.peer(key);
      this.#names.set(key, rec?.alias ?? rec?.name);
    }
    return this.#names.get(key);
  }

  #push<K extends keyof DashboardEvents>(
    event: K,
    value: DashboardEvents[K],
  ): void {
    const n = ++this.#n;
    const e = {
      n,
      id: `${this.#run}-${n}`,
      event,
      data: JSON.stringify(value),
    };
    this.#ring.push(e);
    this.#ringBytes += e.data.length;
    while (
      this.#ring.length > this.#o.replay ||
      (this.#ringBytes > RING_BYTES && this.#ring.length > 1)
    ) {
      this.#ringBytes -= this.#ring.shift()!.data.length;
    }
    for (const s of this.#subs) s(e);
  }

  /** Runs `refresh` once shortly after the last of a burst of calls. */
  #soon(
    key: string,
    refresh: () => Promise<void> | void,
    delayMs = REFRESH_MS,
  ): void {
    if (this.#timers.has(key)) return;
    this.#timers.set(
      key,
      setTimeout(() => {
        this.#timers.delete(key);
        Promise.resolve(refresh()).catch(() => {});
      }, delayMs),
    );
  }

  /** False (and marks the lists stale) when no page watches. */
  #watched(): boolean {
    if (this.#subs.size === 0) this.#stale = true;
    return this.#subs.size > 0;
  }

  #refreshLists(): void {
    this.#stale = false;
    this.#refreshPeers();
    this.#refreshThreads();
    this.#refreshPresence();
  }

  // A snapshot reads everything afresh, so lists are only recomputed for
  // pages that are watching.
  #refreshPeers(): void {
    if (!this.#watched()) return;
    this.#soon("peers", async () => this.#push("peers", await this.peers()));
  }

  #refreshThreads(): void {
    if (!this.#watched()) return;
    this.#soon(
      "threads",
      async () => this.#push("threads", await this.threads()),
    );
  }

  #refreshPresence(): void {
    if (!this.#watched()) return;
    this.#soon("presence", () => this.#push("presence", this.presence()));
  }

  #touch(peer: string, th: string | undefined): void {
    if (!th) return;
    this.#refreshThreads();
    this.#soon(
      `touch ${peer} ${th}`,
      () => this.#push("touch", { peer, th }),
    );
  }

  /** Stops following the Peer. */
  async close(): Promise<void> {
    await this.#events.return?.();
    await this.closed;
  }

  async #follow(): Promise<void> {
    try {
      for await (const ev of this.#events) this.#on(ev);
    } finally {
      for (const t of this.#timers.values()) clearTimeout(t);
      this.#timers.clear();
    }
  }

  #on(ev: PeerEvent): void {
    switch (ev.type) {
      case "line": {
        const m = ev.message;
        const th = typeof m.th === "string" ? m.th : undefined;
        this.#push("line", {
          at: Date.now(),
          peer: ev.peer,
          dir: ev.dir,
          t: m.t,
          ...(typeof m.id === "string" ? { id: m.id } : {}),
          ...(th ? { th } : {}),
          line: clip(JSON.stringify(m)),
        });
        if (m.t === "msg" || m.t === "state" || m.t === "ack") {
          this.#touch(ev.peer, th);
        }
        // A round trip measured; a grant issued or received changes caps.
        if (m.t === "pong" || m.t === "grant") this.#refreshPeers();
        return;
      }
      case "progress":
        return this.#progress(ev);
      case "connected":
        this.#hellos.set(ev.peer, ev);
        if (this.#hellos.size > 1000) {
          this.#hellos.delete(this.#hellos.keys().next().value!);
        }
        this.#names.delete(ev.peer);
        // Again once the record (addresses, first seen) is stored.
        this.#soon("peers settled", () => this.#refreshPeers(), 1000);
        return this.#refreshPeers();
      case "disconnected":
        this.#hellos.delete(ev.peer);
        this.#names.delete(ev.peer);
        return this.#refreshPeers();
      case "bye":
      case "grant":
      case "introduced":
      case "admission":
        this.#names.delete(ev.peer);
        return this.#refreshPeers();
      case "presence":
        return this.#refreshPresence();
      case "message":
      case "state":
      case "acked":
      case "blob":
        this.#refreshPeers();
        return this.#touch(ev.peer, ev.th);
      default:
        return;
    }
  }

  #progress(ev: ProgressEvent): void {
    const key = transferKey(ev.dir, ev.peer, ev.ref);
    const t: Transfer = {
      peer: ev.peer,
      ...(this.#names.get(ev.peer)
        ? { peerName: this.#names.get(ev.peer) }
        : {}),
      dir: ev.dir,
      ref: ev.ref,
      ...(ev.name ? { name: ev.name } : {}),
      ...(ev.th ? { th: ev.th } : {}),
      bytes: ev.bytes,
      total: ev.total,
      rate: FINISHED.has(ev.status) ? 0 : ev.rate,
      status: ev.status,
      updated: Date.now(),
    };
    const before = this.#live.get(key);
    this.#live.set(key, t);
    if (this.#live.size > 1000) {
      this.#live.delete(this.#live.keys().next().value!);
    }
    // A bar needs a few frames a second, not one per chunk; status changes always go.
    const last = this.#lastProgress.get(key) ?? 0;
    if (
      before?.status === t.status && !FINISHED.has(t.status) &&
      t.updated - last < PROGRESS_MS
    ) return;
    this.#lastProgress.set(key, t.updated);
    if (this.#lastProgress.size > 1000) {
      this.#lastProgress.delete(this.#lastProgress.keys().next().value!);
    }
    this.#push("transfer", t);
  }
}

function transferKey(dir: string, peer: string, ref: string): string {
  return `${dir} ${peer} ${ref}`;
}

function clip(text: string): string {
  return text.length > LINE_CLIP ? `${text.slice(0, LINE_CLIP)}…` : text;
}

function toActivity(e: LogEntry): ActivityLine {
  return {
    at: e.at,
    peer: e.peer,
    dir: e.dir,
    t: e.t,
    ...(e.id ? { id: e.id } : {}),
    ...(e.th ? { th: e.th } : {}),
    line: clip(e.line),
  };
}
