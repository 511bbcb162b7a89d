/**
 * The library API: one AWP peer with its identity, store, listeners,
 * connections and a stream of typed events.
 *
 * A Peer is a thin facade: each call goes to one of its parts, built and
 * wired in peer_parts.ts around the supervisor. The durable side
 * (identity seed, outbox, threads, grants, blobs) is a {@link Store}; user
 * calls become outbox drafts (peer_sender.ts), and what the connections
 * deliver becomes {@link PeerEvent}s. Sending never fails because the
 * remote is away: `send` resolves once the lines are durable in the
 * outbox, and they go out on the next resume (SPEC 9.5).
 *
 * Layout of a home directory: `awp.kv` (the store), `spool/` (snapshots of
 * files being sent), `blobs/<peer>/` (received files).
 *
 * @module
 */

import { InspectionHub } from "../inspector/inspection_hub.ts";
import type { EventsOptions, PeerEvent } from "./peer_events.ts";
import type { PresenceRecord } from "../extensions/presence_gossip.ts";
import type { MirroredLine, MirroredThread } from "../extensions/mirror.ts";
import type { SignedPresence } from "../wire/presence.ts";
import type {
  GrantRecord,
  LogEntry,
  LogQuery,
  Store,
  ThreadRecord,
} from "../storage/store.ts";
import { isKey } from "../wire/keys.ts";
import type { SamvadAgent, SamvadOptions } from "../samvad/samvad_agent.ts";
import type { Grant } from "../wire/types.ts";
import { PeerParts } from "./peer_parts.ts";
import type { PeerOptions } from "./peer_options.ts";
import type { PeerInfo } from "./peer_directory.ts";
import type {
  GrantOptions,
  IntroduceOptions,
  SendOptions,
  Sent,
} from "./peer_sender.ts";

export type { PeerOptions } from "./peer_options.ts";
export type { PeerInfo } from "./peer_directory.ts";
export type {
  GrantOptions,
  IntroduceOptions,
  SendFile,
  SendOptions,
  Sent,
} from "./peer_sender.ts";
import { lazyImport } from "./lazy_import.ts";
import type { BoundSocket } from "../net/transport.ts";

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
  #p: PeerParts;
  #samvad: Promise<SamvadAgent> | undefined;

  private constructor(parts: PeerParts) {
    this.#p = parts;
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
    return new Peer(await PeerParts.open(options));
  }

  /** Our key, `ed25519:` + base64url. */
  get key(): string {
    return this.#p.signer.key;
  }

  /** The store (for inspection; the Peer owns it). */
  get store(): Store {
    return this.#p.store;
  }

  /** The hub the actors are shown in, once inspection is on. */
  get inspection(): InspectionHub | undefined {
    return this.#p.hub;
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
    const on = this.#p.hub;
    if (on && (hub === undefined || hub === on)) return on;
    if (on) {
      throw new Error("inspection is already on with another hub");
    }
    const h = hub ?? new InspectionHub();
    this.#p.hub = h;
    // Parents first, so children find their connection's id registered.
    this.#p.sup.attach(h);
    this.#p.threads.attach(h);
    this.#p.blobs.attach(h);
    return h;
  }

  /**
   * Listens on `addr` (`tcp:HOST:PORT`, port 0 for any, or `unix:/path`),
   * or serves a socket bound before the peer opened (`bind` in
   * net/transport.ts: dialers that came meanwhile are answered first), and
   * resolves with the real address.
   *
   * @example
   * ```ts
   * import { Peer } from "./peer.ts";
   * const p = await Peer.open({ memory: true });
   * console.log(await p.listen("tcp:127.0.0.1:0")); // tcp:127.0.0.1:PORT
   * await p.close();
   * ```
   */
  async listen(addr: string | BoundSocket): Promise<string> {
    this.#open("listen");
    const listener = await this.#p.sup.listen(addr);
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
      // Resolved once the peer's record, with `addr`, is durable: the
      // supervisor's one write after the handshake (a restarted peer's
      // first lines wait behind no second one).
      remember: true,
    };
    const remote = options.retry
      ? await this.#p.sup.connectUntilUp(addr, how)
      : await this.#p.sup.connect(addr, how);
    if (options.keep) this.#p.sup.keep(remote.key);
    this.#p.sup.reach(remote.key, [addr]);
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
  send(
    to: string,
    text: string,
    options: SendOptions = {},
  ): Promise<Sent> {
    // Not async: no frame of ours held per msg while its commit runs.
    try {
      this.#open("send");
    } catch (error) {
      return Promise.reject(error);
    }
    return this.#p.sender.send(to, text, options);
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
    await this.#p.acks.waitAck(id, options);
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
    return await this.#p.sender.setState(to, th, state, note);
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
    return await this.#p.sender.grant(to, caps, options);
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
    return await this.#p.sender.introduce(to, peerKey, options);
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
    const key = await this.#p.names.resolve(to);
    await this.#p.sup.bye(key, reason);
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
    return await this.#p.directory.peers();
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
    return this.#p.store.threads();
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
    await this.#p.log.flush();
    return await this.#p.store.readLog(query);
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
    const key = await this.#p.names.resolve(peer);
    if (typeof th !== "string" || th === "") {
      throw new TypeError("markRead: th must be a non-empty string");
    }
    if (!(await this.#p.store.thread(key, th))) {
      throw new Error(`markRead: no thread ${th} with ${key}`);
    }
    await this.#p.threads.markRead(key, th);
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
    const closed = this.#p.closing !== undefined;
    const queue = this.#p.events.subscribe(closed);
    if (after === undefined || closed) return queue;
    return this.#p.threads.replayThenLive(queue, after);
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
    for (const h of hosts) keys.push(await this.#p.names.resolve(h));
    await this.#p.ext.share(keys);
    for (const key of keys) {
      await this.#p.sup.refreshWanted(key);
      await this.#p.directory.ensureReach(key);
    }
    return this.#p.ext.hosts;
  }

  /** The hosts this agent mirrors its conversations to. */
  get sharing(): string[] {
    return this.#p.ext.hosts;
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
    const key = await this.#p.names.resolve(peer);
    if (typeof th !== "string" || th === "") {
      throw new TypeError("private: th must be a non-empty string");
    }
    const entry = await this.#p.ext.markPrivate(key, th);
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
    return this.#p.ext.mirrored(sharer);
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
    return this.#p.ext.mirroredLines(th, where);
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
    return this.#p.ext.documents();
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
    return this.#p.ext.publish();
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
    if (change.relay !== undefined) this.#p.ext.gossip.setRelay(change.relay);
    if (change.publish !== undefined) {
      this.#p.ext.gossip.setPublish(change.publish);
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
    this.#p.trust.trust(key);
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
    this.#p.trust.allow(key);
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
    return this.#p.trust.revoke(hash);
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
    return this.#p.trust.grants(kind);
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
    const key = await this.#p.names.resolve(peer);
    const presented = this.#p.sup.connection(key)?.remote?.grants ?? [];
    return [...await this.#p.trust.capsOf(key, presented)].sort();
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
    return this.#p.sup.connection(peer)?.rtt;
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
    this.#p.log.lineEvents = true;
  }

  /** The profile capabilities this peer performs itself (`serve`). */
  get serving(): string[] {
    return this.#p.requests.serving;
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
    return this.#p.close(async () => {
      await (await this.#samvad?.catch(() => undefined))?.close();
    });
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
    this.#samvad ??= lazyImport<typeof import("../samvad/samvad_agent.ts")>(
      "samvad/samvad_agent.ts",
    ).then((m) => new m.SamvadAgent(this, this.#p.signer, options));
    return this.#samvad;
  }

  /** Throws once the peer is closing: `what` may not start then. */
  #open(what: string): void {
    if (this.#p.closing) throw new Error(`${what}: the peer is closed`);
  }
}
