/**
 * The extensions inside a Peer: presence gossip ({@link PresenceGossip})
 * and conversation sharing ({@link MirrorSharer}, {@link MirrorHost}).
 * This file wires them to the Peer's connections and store: it describes
 * this agent for presence from the store (never contents, notes, files or
 * addresses), hands received presence, mirror and private lines to their
 * owners, and mirrors every msg and state line the Peer commits.
 *
 * @module
 */

import {
  type PresenceEvent,
  PresenceGossip,
  type PresenceLink,
  presenceLink,
  type PresenceRecord,
} from "./presence_gossip.ts";
import {
  type MirroredLine,
  type MirroredThread,
  MirrorHost,
  type MirrorOutcome,
  MirrorSharer,
} from "./mirror.ts";
import type { Connection } from "../actors/connection.ts";
import type { OutboxEntry, Store, ThreadRecord } from "../storage/store.ts";
import type { Signer } from "../wire/keys.ts";
import type { PresenceDescription, SignedPresence } from "../wire/presence.ts";
import type { PresencePeer, PresenceThread } from "../wire/types.ts";

/** What a presence document says beyond what the Peer knows itself. */
export interface PresenceInfo {
  /** Our software's version. */
  version?: string;
  /** The agent harness running this peer. */
  harness?: string;
  /** The model behind the agent. */
  model?: string;
  /** The host it runs on. */
  host?: string;
}

/** Options of {@link PeerExtensions}. */
export interface PeerExtensionsOptions {
  /** Our identity: signs our presence documents. */
  signer: Signer;
  /** Where presence, mirrors and the share list are kept. */
  store: Store;
  /** Our name, as in hello. */
  name?: string;
  /** Our about line, as in hello. */
  about?: string;
  /** Publish our presence document (opt-in). */
  presence?: boolean;
  /** More fields for our document. */
  presenceInfo?: PresenceInfo;
  /** Forward other agents' documents (default true). */
  relay?: boolean;
  /** Settle delay after a change, ms (2 s). */
  presenceDelayMs?: number;
  /** Heartbeat, ms (60 s). */
  presenceHeartbeatMs?: number;
  /** Hosts remembered from an earlier run. */
  hosts: readonly string[];
  /** The live connections, by key. */
  connections(): Iterable<Connection>;
  /** Entries the sharer queued: send them now, or get the peer reached. */
  deliver(peer: string, entries: OutboxEntry[]): void;
  /** Presence table changes and our own publishing. */
  onPresence?(event: PresenceEvent): void;
  /** A mirror line was handled on this host. */
  onMirror?(sharer: string, outcome: MirrorOutcome, th: string): void;
}

const ACTIVE_GRAIN_MS = 30_000;

/**
 * Presence and sharing for one Peer.
 *
 * @example
 * ```ts
 * import { PeerExtensions } from "./peer_extensions.ts";
 * import { MemoryStore } from "../storage/memory_store.ts";
 * import { Signer } from "../wire/keys.ts";
 * const store = new MemoryStore();
 * const ext = new PeerExtensions({
 *   signer: await Signer.generate(), store, name: "me", hosts: [],
 *   connections: () => [], deliver: () => {},
 * });
 * console.log((await ext.describe()).name); // "me"
 * ext.close();
 * store.close();
 * ```
 */
export class PeerExtensions {
  #o: PeerExtensionsOptions;
  #gossip: PresenceGossip;
  #sharer: MirrorSharer;
  #host: MirrorHost;
  #active: number | undefined;

  /** Throws a one-line TypeError on a bad remembered host key. */
  constructor(options: PeerExtensionsOptions) {
    this.#o = options;
    this.#sharer = new MirrorSharer({
      store: options.store,
      hosts: options.hosts,
      self: options.signer.key,
      deliver: (peer, entries) => options.deliver(peer, entries),
    });
    this.#host = new MirrorHost({ store: options.store });
    this.#gossip = new PresenceGossip({
      signer: options.signer,
      store: options.store,
      relay: options.relay ?? true,
      publish: options.presence ?? false,
      publishDelayMs: options.presenceDelayMs,
      heartbeatMs: options.presenceHeartbeatMs,
      describe: () => this.describe(),
      peers: () => this.#links(),
      onEvent: options.onPresence,
    });
  }

  /** The presence gossip (table, publishing switch). */
  get gossip(): PresenceGossip {
    return this.#gossip;
  }

  /** Keys of the hosts we mirror to (hello.shares). */
  get hosts(): string[] {
    return this.#sharer.hosts;
  }

  /** Replaces the hosts we mirror to (remembered); empty stops sharing. */
  async share(hosts: readonly string[]): Promise<void> {
    await this.#sharer.setHosts(hosts);
    this.#gossip.changed();
  }

  /**
   * Keeps thread `th` with `peer` out of sharing: withdrawn from our hosts,
   * and a reliable `private` line asks `peer` to do the same.
   */
  async markPrivate(peer: string, th: string): Promise<OutboxEntry> {
    return (await this.#sharer.markPrivate(peer, th)).private;
  }

  /** Whether thread `th` with `peer` is kept out of sharing. */
  isPrivate(peer: string, th: string): Promise<boolean> {
    return this.#sharer.isPrivate(peer, th);
  }

  /**
   * A msg or state line of ours (out) or theirs (in), durable: mirrored to
   * the hosts, and (our activity) presence says so soon. Never throws.
   */
  async onLine(
    peer: string,
    dir: "in" | "out",
    line: Record<string, unknown> & { t: string },
    thread?: ThreadRecord,
  ): Promise<void> {
    if (dir === "out") this.#active = Date.now();
    this.#gossip.changed();
    if (this.#sharer.hosts.length === 0) return;
    await this.#sharer.onLine(peer, dir, line, thread).catch(() => []);
  }

  /** A received `private` line from `peer`. */
  async onPrivate(peer: string, th: string): Promise<void> {
    await this.#sharer.onPrivate(peer, th);
  }

  /** A received `mirror` line from `sharer`. */
  async onMirror(
    sharer: string,
    message: Record<string, unknown>,
  ): Promise<MirrorOutcome> {
    const outcome = await this.#host.onMirror(sharer, message);
    const th = typeof message.th === "string" ? message.th : "";
    this.#o.onMirror?.(sharer, outcome, th);
    return outcome;
  }

  /** A received `presence` line. */
  onPresence(
    from: string,
    message: Record<string, unknown>,
    raw: string,
  ): Promise<unknown> {
    return this.#gossip.onPresence(from, message, raw);
  }

  /** A connection opened: the anti-entropy step, and presence changes. */
  onConnected(conn: Connection | undefined): void {
    const link = conn ? presenceLink(conn) : undefined;
    if (link) this.#gossip.onConnected(link);
    else this.#gossip.changed();
  }

  /** Something presence describes changed (a peer left, a state). */
  changed(): void {
    this.#gossip.changed();
  }

  /** Publishes our document now (when presence is on, or forced). */
  publish(): Promise<SignedPresence> {
    return this.#gossip.publish();
  }

  /** Documents held, newest first. */
  documents(): PresenceRecord[] {
    return this.#gossip.documents();
  }

  /** Threads mirrored to us, optionally by one sharer. */
  mirrored(sharer?: string): Promise<MirroredThread[]> {
    return this.#host.threads(sharer);
  }

  /** Mirrored lines of thread `th`. */
  mirroredLines(
    th: string,
    where: { sharer?: string; of?: string } = {},
  ): Promise<MirroredLine[]> {
    return this.#host.lines(th, where);
  }

  /**
   * Our presence document's content, from the store and the connections:
   * peers with up/rtt, threads with subjects and both states, outbox and
   * unread counts. buildPresence (at signing) clips and limits it.
   */
  async describe(): Promise<PresenceDescription> {
    const store = this.#o.store;
    const up = new Map<string, Connection>();
    for (const c of this.#o.connections()) {
      if (c.remote) up.set(c.remote.key, c);
    }
    const records = await store.peers();
    const peers: PresencePeer[] = records
      .sort((a, b) => b.lastSeen - a.lastSeen)
      .map((p) => {
        const conn = up.get(p.key);
        return {
          key: p.key,
          ...(p.name ? { name: p.name } : {}),
          ...(conn ? { up: true } : {}),
          ...(conn?.rtt ? { rtt: conn.rtt } : {}),
        };
      });
    const threads: PresenceThread[] = (await store.threads())
      .sort((a, b) => b.updated.localeCompare(a.updated))
      .map((t) => ({
        th: t.th,
        peer: t.peer,
        ...(t.subject ? { subject: t.subject } : {}),
        ...(t.mine?.state ? { mine: t.mine.state } : {}),
        ...(t.theirs?.state ? { theirs: t.theirs.state } : {}),
        updated: t.updated,
        ...(t.unread ? { unread: t.unread } : {}),
      }));
    let outbox = 0;
    for (const p of records) outbox += await store.outboxCount(p.key);
    const unread = threads.reduce((n, t) => n + (t.unread ?? 0), 0);
    const info = this.#o.presenceInfo ?? {};
    return {
      ...(this.#o.name ? { name: this.#o.name } : {}),
      ...(this.#o.about ? { about: this.#o.about } : {}),
      ...(info.version ? { version: info.version } : {}),
      ...(info.harness ? { harness: info.harness } : {}),
      ...(info.model ? { model: info.model } : {}),
      ...(info.host ? { host: info.host } : {}),
      ...(this.#sharer.hosts.length ? { shares: this.#sharer.hosts } : {}),
      ...(this.#active !== undefined
        ? { active: roundedTime(this.#active) }
        : {}),
      peers,
      threads,
      outbox,
      unread,
    };
  }

  /** Stops the presence timers. */
  close(): void {
    this.#gossip.close();
  }

  #links(): PresenceLink[] {
    const out: PresenceLink[] = [];
    for (const c of this.#o.connections()) {
      const link = presenceLink(c);
      if (link) out.push(link);
    }
    return out;
  }
}

/** RFC 3339 to 30 seconds: activity is coarse on purpose. */
function roundedTime(ms: number): string {
  const t = Math.floor(ms / ACTIVE_GRAIN_MS) * ACTIVE_GRAIN_MS;
  return new Date(t).toISOString().replace(/\.\d{3}Z$/, "Z");
}
