/**
 * The root of a peer's actor system: listeners, dialers and connections,
 * and the router that hands each delivered line to the handler owning it.
 *
 * Structure, and why. Connections are NOT spawned as children of the
 * supervisor's statechart: xstate keeps a machine's children in its
 * snapshot and copies that record on every transition that touches it, so
 * spawning N children into one machine costs O(N²) over N connections, and
 * 10,000 peers would pay for it on every connect and close. Each
 * {@link Connection} (and each {@link Dialer}) is instead an independent
 * actor made with `createActor`, held in a Map keyed by the remote key, and
 * watched through its own `subscribe` error channel and its `closed`
 * promise. {@link supervisorMachine} holds the lifecycle (running,
 * stopping, stopped), the counts, and the one-connection-per-key decision
 * (its AUTHENTICATED guards), so its snapshot stays O(1). Anything that
 * does get spawned or invoked into it fails through `xstate.error.actor.*`,
 * which it records and survives.
 *
 * Rules kept here:
 * - one active connection per remote key (NOTES item 4): a newly
 *   authenticated connection replaces the older one before its resume is
 *   processed (in Connection's `onAuthenticated`; the chart's guards
 *   decide), except that when both
 *   came up within `simultaneousWindowMs` (a simultaneous open) both sides
 *   keep the connection dialed by the smaller key;
 * - a handler that throws, or a connection whose actor fails, is reported
 *   and closed at most: the supervisor keeps running;
 * - reconnecting (SPEC 4.3) is the {@link Dialer}'s job; the supervisor
 *   tells it when the peer is up or down and whether it is still wanted:
 *   unacked outbox entries or an open thread (NOTES item 12: a thread is
 *   open until either side says done, failed or closed, and only if it saw
 *   activity within the outbox retention window).
 *
 * @module
 */

import {
  type Actor,
  createActor,
  type InspectionEvent,
} from "npm:xstate@^5.33.3";
import {
  Connection,
  type ConnectionOptions,
  type ReceivedLine,
  type RemoteHello,
} from "./connection.ts";
import {
  type Delivery,
  type DeliveryHandler,
  DeliveryRouter,
  type Routes,
} from "./delivery_router.ts";
import { Dialer } from "./dialer.ts";
import { dialUntilUp } from "./dial_until_up.ts";
import { warmHandshake } from "./handshake_warmup.ts";
import { QuietHolds } from "./quiet_holds.ts";
import { readPeerSoon, rememberPeer } from "./remember_peer.ts";
import { wantedInStore } from "./wanted_in_store.ts";
import {
  activatesWithoutStep,
  type ActorInspection,
  type Authenticated,
  type SupervisorCounts,
  type SupervisorEvent,
  type SupervisorHost,
  supervisorMachine,
  type SupervisorMachineEvent,
} from "./supervisor_machine.ts";
import type {
  ConnectionHooks,
  ConnectionWiring,
  PeerConfig,
} from "./peer_config.ts";
import {
  type BoundSocket,
  dial,
  listen,
  type Listener,
  type Transport,
  TransportError,
} from "../net/transport.ts";
import { errorText } from "../wire/error_text.ts";
import type { Grant } from "../wire/types.ts";

export type { Delivery, DeliveryHandler, Routes };
export {
  type ActorInspection,
  type SupervisorCounts,
  type SupervisorEvent,
  supervisorMachine,
  type SupervisorMachineEvent,
};

/**
 * Options of {@link Supervisor}: the shared {@link PeerConfig}, the
 * connections' wiring and hooks (handed to each connection as given), and
 * the routing the supervisor owns.
 */
export interface SupervisorOptions
  extends PeerConfig, ConnectionWiring, ConnectionHooks {
  /** Where delivered lines go. */
  routes?: Routes;
  /**
   * Overrides "is this peer still wanted?" (keep dialing). Default: it has
   * unacked outbox entries or an open thread, as last read from the store.
   */
  wanted?(peer: string): boolean;
  /** Connections authenticated this close together are a simultaneous open (5 s). */
  simultaneousWindowMs?: number;
  /** Everything the supervisor reports. */
  onEvent?(event: SupervisorEvent): void;
  /**
   * The fresh content lines just committed (each with its log `seq`),
   * called synchronously before any of them is routed.
   */
  afterCommit?(peer: string, lines: ReceivedLine[]): void;
  /** Inspection: off unless given (no observer is passed at all then). */
  inspect?: ActorInspection;
}

interface Active {
  conn: Connection;
  since: number;
}

/**
 * Owns listeners, dialers and connections of one peer, and routes what the
 * connections deliver.
 *
 * @example
 * ```ts ignore
 * import { Supervisor } from "./supervisor.ts";
 * import { MemoryStore } from "../storage/memory_store.ts";
 * import { Signer } from "../wire/keys.ts";
 * const sup = new Supervisor({ signer: await Signer.generate(), store: new MemoryStore() });
 * sup.start();
 * const listener = await sup.listen("tcp:127.0.0.1:0");
 * console.log("listening on", listener.addr);
 * await sup.stop();
 * ```
 */
export class Supervisor {
  /** Our key. */
  readonly key: string;
  /** The lifecycle and counts chart. */
  readonly actor: Actor<typeof supervisorMachine>;
  #o: SupervisorOptions;
  #shared: Omit<ConnectionOptions, "transport" | "dialed"> | undefined;
  #connections = new Set<Connection>();
  #active = new Map<string, Active>();
  #dialers = new Map<string, Dialer>();
  /** Peers whose last dial reached an HTTP front that refused the upgrade. */
  #waking = new Set<string>();
  /** Cancels of {@link connectUntilUp} calls in progress. */
  #addressDials = new Set<() => void>();
  /** Peers to keep connected whether or not anything is wanted. */
  #kept = new Set<string>();
  #listeners = new Set<Listener>();
  #wanted = new Map<string, boolean>();
  /** Peers that said bye, or we said bye to: not redialed (persisted). */
  #quiet: QuietHolds;
  #router: DeliveryRouter;
  #stopping = false;
  #started = false;
  #warmed: Promise<boolean> | undefined;
  /** Where actors are shown; set at construction or by {@link attach}. */
  #inspect: ActorInspection | undefined;
  /** Each connection's tree label until its peer is known ("from ADDR"). */
  #labels = new WeakMap<Connection, string>();
  /**
   * A connection {@link connect} dialed: the address it was asked for, and
   * its peer record's write once established (one write with ours).
   */
  #asked = new WeakMap<
    Connection,
    { addr: string; remembered?: Promise<void> }
  >();

  /** Sets the supervisor up; nothing runs until {@link start} or {@link listen}. */
  constructor(options: SupervisorOptions) {
    this.#o = options;
    this.key = options.signer.key;
    this.#quiet = new QuietHolds(options.store);
    this.#router = new DeliveryRouter(
      options.routes ?? {},
      (peer, t, error) => this.#handlerError(peer, t, error),
    );
    const inspect = options.inspect;
    this.#inspect = inspect;
    this.actor = createActor(supervisorMachine, {
      input: { host: this.#host as SupervisorHost<unknown> },
      ...(inspect ? { inspect: inspect.observer } : {}),
    });
    inspect?.register(this.actor, { kind: "supervisor", label: "supervisor" });
  }

  /**
   * Shows the actors in `inspect` from now on: the supervisor, its dialers
   * and live connections are registered at once (followed through their
   * snapshots), and connections created later get its observer.
   *
   * @example
   * ```ts ignore
   * import { InspectionHub } from "../inspector/inspection_hub.ts";
   * const hub = new InspectionHub();
   * supervisor.attach(hub);
   * console.log(hub.actors().map((a) => a.kind)); // ["supervisor", ...]
   * ```
   */
  attach(inspect: ActorInspection): void {
    if (this.#inspect === inspect) return;
    this.#inspect = inspect;
    inspect.register(this.actor, { kind: "supervisor", label: "supervisor" });
    for (const [peer, dialer] of this.#dialers) this.#showDialer(peer, dialer);
    for (const conn of this.#connections) this.#showConnection(conn);
  }

  #showDialer(peer: string, dialer: Dialer): void {
    this.#inspect?.register(dialer.actor, {
      kind: "dialer",
      label: `dialer ${peer.slice(0, 16)}`,
      parentId: this.actor.sessionId,
    });
  }

  #showConnection(conn: Connection): void {
    const remote = this.#active.get(conn.remote?.key ?? "")?.conn === conn
      ? conn.remote
      : undefined;
    this.#inspect?.register(conn.actor, {
      kind: "connection",
      label: remote && conn.state === "open"
        ? `peer ${remote.name ?? remote.key.slice(0, 16)}`
        : this.#labels.get(conn) ?? "connection",
      parentId: this.actor.sessionId,
    });
  }

  /** Starts the chart, and the handshake warm-up ({@link warm}). */
  start(): void {
    // (A not yet started actor already reports status "active".)
    if (this.#started) return;
    this.#started = true;
    this.actor.start();
    if (!this.#stopping) void this.warm(); // not for a stop before any start
  }

  /**
   * Runs a handshake's steps once on our own lines (`warmHandshake`), and
   * loads the grants every handshake looks up (auth, admission) into the
   * store's cache, so the first real one pays neither; resolves when done
   * (true if that handshake opened). Started once, by the first call or
   * {@link start}.
   */
  warm(): Promise<boolean> {
    return this.#warmed ??= Promise.all([
      warmHandshake(this.#o.signer),
      this.#o.store.grants().catch(() => []),
    ]).then(([opened]) => opened);
  }

  /** Counts: connections, active peers, listeners, failures survived. */
  get counts(): SupervisorCounts {
    const { listeners, failures } = this.actor.getSnapshot().context;
    return {
      connections: this.#connections.size,
      active: this.#active.size,
      listeners,
      failures,
    };
  }

  /** The lifecycle state: running, stopping or stopped. */
  get state(): string {
    return String(this.actor.getSnapshot().value);
  }

  /** The active connection to `peer`, if any. */
  connection(peer: string): Connection | undefined {
    return this.#active.get(peer)?.conn;
  }

  /** Keys of peers with an active connection. */
  get peers(): string[] {
    return [...this.#active.keys()];
  }

  /**
   * True while `peer`'s last dial got an HTTP answer instead of a WebSocket
   * upgrade (502/503/504 from a sleeping host's front): retried with
   * backoff like any failed dial, shown as "waking".
   */
  isWaking(peer: string): boolean {
    return this.#waking.has(peer);
  }

  /**
   * Since when `peer` cannot be reached, and why, while its dialer keeps
   * failing; undefined when connected or not being dialed.
   */
  unreachable(peer: string): { since: number; error?: string } | undefined {
    const dialer = this.#dialers.get(peer);
    const since = dialer?.downSince;
    if (!dialer || since === undefined || this.#active.has(peer)) {
      return undefined;
    }
    const error = dialer.lastError;
    return { since, ...(error ? { error } : {}) };
  }

  /** The dialer for `peer`, if one exists. */
  dialer(peer: string): Dialer | undefined {
    return this.#dialers.get(peer);
  }

  /**
   * Listens on `address` (or serves a socket bound before: `bind` in
   * net/transport.ts); accepted connections are run by the supervisor.
   */
  async listen(address: string | BoundSocket): Promise<Listener> {
    this.start();
    const listener = await listen(
      address,
      (t) => this.#adopt(t, false),
      {
        allowPublic: this.#o.allowPublic,
        limits: this.#o.limits,
        ...this.#o.tls,
      },
    );
    this.#listeners.add(listener);
    this.#o.addr ??= listener.addr;
    this.#send({ type: "LISTENING" });
    this.#emit({ type: "listening", addr: listener.addr });
    return listener;
  }

  /**
   * Dials `address` once and runs the connection. Resolves with the peer's
   * hello once established; rejects (one line) if dialing or the handshake
   * fails, or when `expect` is given and a different key answered.
   */
  async connect(
    address: string,
    options: {
      signal?: AbortSignal;
      expect?: string;
      present?: Grant[];
      /** Resolve once the peer's record (with `address`) is durable. */
      remember?: boolean;
    } = {},
  ): Promise<RemoteHello> {
    this.start();
    if (this.#stopping) throw new Error("supervisor is stopping");
    const transport = await dial(address, {
      allowPublic: this.#o.allowPublic,
      signal: options.signal,
      caCerts: this.#o.caCerts,
    });
    const conn = this.#adopt(transport, true, options.present);
    const asked: { addr: string; remembered?: Promise<void> } = {
      addr: address,
    };
    this.#asked.set(conn, asked);
    // Abort only cancels a handshake: once open, the connection stays.
    const abort = () => {
      if (conn.state !== "open") conn.close("dial aborted");
    };
    options.signal?.addEventListener("abort", abort, { once: true });
    try {
      const remote = await conn.established;
      if (options.expect && remote.key !== options.expect) {
        conn.close("unexpected key");
        throw new Error(
          `dial ${address}: expected ${options.expect}, found ${remote.key}`,
        );
      }
      // Recorded (with `address`) before the caller goes on, in the one
      // write `#established` started; or here, if it did not run.
      if (options.remember) {
        await (asked.remembered ?? rememberPeer(this.#o.store, remote, {
          dialed: true,
          dialerAddrs: [],
          askedAddr: address,
        }));
      }
      return remote;
    } catch (error) {
      throw new Error(`connect ${address}: ${errorText(error)}`);
    } finally {
      options.signal?.removeEventListener("abort", abort);
    }
  }

  /**
   * Dials `address` until a peer answers there: like {@link connect}, but
   * each failure is reported (`dial_failed`, with `peer: ""` since the key
   * is not known yet) and retried on the dialer's schedule instead of
   * rejecting. Rejects only when `signal` aborts or the supervisor stops.
   */
  connectUntilUp(
    address: string,
    options: { signal?: AbortSignal; present?: Grant[]; remember?: boolean } =
      {},
  ): Promise<RemoteHello> {
    this.start();
    if (this.#stopping) {
      return Promise.reject(new Error("supervisor is stopping"));
    }
    let cancel: (() => void) | undefined;
    return dialUntilUp(address, {
      connect: (addr, signal) =>
        this.connect(addr, {
          signal,
          ...(options.present ? { present: options.present } : {}),
          ...(options.remember ? { remember: true } : {}),
        }),
      running: () => !this.#stopping,
      failed: (addr, attempt, error) =>
        this.#emit({
          type: "dial_failed",
          peer: "",
          address: addr,
          attempt,
          error: errorText(error),
        }),
      dialer: this.#o.dialer,
    }, {
      ...(options.signal ? { signal: options.signal } : {}),
      onCancel: (c) => {
        if (c) this.#addressDials.add(cancel = c);
        else if (cancel) this.#addressDials.delete(cancel);
      },
    });
  }

  /**
   * Keeps a connection to `peer` up: it is redialed after every drop, with
   * nothing to deliver too, until {@link bye} (or {@link release}).
   */
  keep(peer: string): void {
    this.#kept.add(peer);
  }

  /** Ends {@link keep}: `peer` is redialed only while something is wanted. */
  release(peer: string): void {
    this.#kept.delete(peer);
  }

  /**
   * Keeps `peer` reachable at `addresses` (preferred first): creates its
   * dialer if needed, learns new addresses, and wakes it.
   */
  reach(peer: string, addresses: string[]): Dialer {
    let dialer = this.#dialers.get(peer);
    if (!dialer) {
      dialer = this.#createDialer(peer, addresses, false);
    } else {
      for (const a of [...addresses].reverse()) {
        if (!dialer.addresses.includes(a) || dialer.addresses[0] !== a) {
          dialer.learn(a);
        }
      }
    }
    void this.#quiet.lift(peer);
    this.#wanted.set(peer, true);
    if (this.#active.has(peer)) dialer.connected();
    else dialer.wake();
    return dialer;
  }

  /** Lines were queued for `peer`: wanted, {@link bye}'s hold lifted (durably), dialer woken. */
  want(peer: string): Promise<void> {
    const lifted = this.#quiet.lift(peer);
    this.#wanted.set(peer, true);
    if (!this.#active.has(peer)) this.#dialers.get(peer)?.wake();
    return lifted;
  }

  /**
   * Says bye to `peer` (waiting for its connection to close, if one is
   * open) and stops redialing it until something new is sent to it
   * ({@link send}, {@link reach} or {@link resumeDialing}), as the
   * reference does after `awp bye`. The hold is persisted: it outlasts a
   * restart ({@link loadQuiet}).
   */
  async bye(peer: string, reason?: string): Promise<void> {
    this.#kept.delete(peer);
    const held = this.#quiet.hold(peer);
    const conn = this.#active.get(peer)?.conn;
    if (conn) await conn.bye(reason);
    await held;
  }

  /** True while `peer` is not redialed after {@link bye}. */
  quiet(peer: string): boolean {
    return this.#quiet.has(peer);
  }

  /**
   * Lifts {@link bye}'s hold: `peer` is dialed again when wanted (for lines
   * queued without {@link send}), and its dialer is woken.
   */
  resumeDialing(peer: string): Promise<void> {
    const lifted = this.#quiet.lift(peer);
    this.#dialers.get(peer)?.wake();
    return lifted;
  }

  /**
   * Restores the holds of {@link bye} (and of peers that said bye to us)
   * from the store, for every known peer: call before dialing at startup.
   */
  loadQuiet(): Promise<void> {
    return this.#quiet.load();
  }

  /** Forgets a cached thread handler (e.g. when the thread ends). */
  forgetThread(peer: string, th: string): void {
    this.#router.forgetThread(peer, th);
  }

  /** Re-reads from the store whether `peer` is wanted (for the dialer). */
  async refreshWanted(peer: string): Promise<boolean> {
    let wanted: boolean;
    try {
      wanted = await wantedInStore(this.#o.store, peer, this.#o.retentionMs);
    } catch {
      wanted = this.#wanted.get(peer) ?? false; // keep the last answer
    }
    this.#wanted.set(peer, wanted);
    return wanted;
  }

  /**
   * Stops everything: listeners, dialers, then each connection with a bye
   * (bounded by the bye timeout).
   */
  async stop(reason = "shutting down"): Promise<void> {
    if (this.#stopping) return;
    this.#stopping = true;
    this.start();
    this.#send({ type: "STOP" });
    for (const l of this.#listeners) l.close();
    await Promise.all([...this.#listeners].map((l) => l.done));
    for (const _ of this.#listeners) this.#send({ type: "LISTENER_CLOSED" });
    this.#listeners.clear();
    for (const d of this.#dialers.values()) d.stop();
    this.#dialers.clear();
    for (const cancel of [...this.#addressDials]) cancel();
    await Promise.all(
      [...this.#connections].map((c) =>
        c.state === "open" ? c.bye(reason) : (c.close(reason), c.closed)
      ),
    );
    await Promise.all([this.#quiet.settled(), this.#warmed]);
    this.#send({ type: "STOPPED" });
    this.actor.stop();
  }

  // ---- internals ----

  /** A connection's `inspect` callback, forwarding to `inspect`'s observer. */
  #observe(inspect: ActorInspection): (e: unknown) => void {
    return (e) => inspect.observer.next?.(e as InspectionEvent);
  }

  #send(event: SupervisorMachineEvent): void {
    if (this.actor.getSnapshot().status === "active") this.actor.send(event);
  }

  #emit(event: SupervisorEvent): void {
    try {
      this.#o.onEvent?.(event);
    } catch { /* an observer's failure is not ours */ }
  }

  #failure(event: SupervisorEvent): void {
    this.#send({ type: "FAILURE" });
    this.#emit(event);
  }

  #isWanted(peer: string): boolean {
    if (this.#kept.has(peer)) return true;
    if (this.#o.wanted) {
      try {
        return this.#o.wanted(peer);
      } catch {
        return true; // when unsure, keep trying: sending must not fail
      }
    }
    return this.#wanted.get(peer) ?? false;
  }

  #createDialer(peer: string, addresses: string[], dialBack: boolean): Dialer {
    const dialer = new Dialer({
      peer,
      addresses,
      dialBack,
      timing: this.#o.dialer?.timing,
      random: this.#o.dialer?.random,
      shouldConnect: () =>
        !this.#stopping && !this.#quiet.has(peer) && this.#isWanted(peer),
      connect: async (address, signal, attempt) => {
        try {
          await this.connect(address, { signal, expect: peer });
        } catch (error) {
          if (error instanceof TransportError && error.waking) {
            this.#waking.add(peer);
          } else if (!signal.aborted) this.#waking.delete(peer);
          if (!signal.aborted) {
            this.#emit({
              type: "dial_failed",
              peer,
              address,
              attempt,
              error: errorText(error),
            });
          }
          if (!this.#o.wanted) await this.refreshWanted(peer);
          throw error;
        }
      },
      onChange: (state, attempt) => {
        this.#emit({ type: "dialer", peer, state, attempt });
        if (dialBack && state === "idle") {
          queueMicrotask(() => this.#dropIdle(dialer));
        }
      },
    });
    this.#dialers.set(peer, dialer);
    this.#showDialer(peer, dialer);
    dialer.start();
    return dialer;
  }

  /**
   * A dial-back dialer (made for an inbound peer that gave its address)
   * with nothing to deliver and no connection to watch is dropped, with
   * what we remember of the peer's wants: an inbound peer that has gone
   * costs nothing. Queueing for it again makes a dialer (Peer's reach).
   */
  #dropIdle(dialer: Dialer): void {
    const peer = dialer.peer;
    if (this.#dialers.get(peer) !== dialer || dialer.state !== "idle") return;
    if (this.#active.has(peer) || this.#kept.has(peer)) return;
    dialer.stop();
    this.#dialers.delete(peer);
    this.#wanted.delete(peer);
  }

  /** What all connections share: their options' prototype, made once. */
  #connectionShared(): Omit<ConnectionOptions, "transport" | "dialed"> {
    return this.#shared ??= {
      ...this.#o,
      inspect: undefined, // the supervisor's; a connection's is its own
      onAuthenticated: (c) => this.#activate(c),
      onDeliver: (c, lines) => {
        if (c.remote) this.#o.afterCommit?.(c.remote.key, lines);
        for (const line of lines) {
          this.#router.route(c, line.message, line.raw, line.seq);
        }
      },
      onControl: (c, line) => this.#router.route(c, line.message, line.raw),
    };
  }

  /** Runs a connection over `transport`. */
  #adopt(
    transport: Transport,
    dialed: boolean,
    present?: Grant[],
  ): Connection {
    if (this.#stopping) {
      transport.close();
      throw new Error("supervisor is stopping");
    }
    // The shared options and hooks go down as they are (onBye too: a
    // remote's bye holds nothing, so a peer that shuts down gracefully is
    // redialed while we still have unacked lines or open threads for it,
    // SPEC 4.3); the handlers below are the supervisor's own.
    const options: ConnectionOptions = Object.create(this.#connectionShared());
    options.transport = transport;
    options.dialed = dialed;
    if (present?.length) options.grants = this.#grantsWith(present);
    if (this.#inspect) options.inspect = this.#observe(this.#inspect);
    options.onClosed = (c, reason) =>
      this.#closed(c, reason, transport.remoteAddr);
    const conn = new Connection(options);
    this.#connections.add(conn);
    this.#labels.set(conn, `${dialed ? "to" : "from"} ${transport.remoteAddr}`);
    this.#showConnection(conn);
    // The connection's own actor failing is a child failure: survive it.
    conn.actor.subscribe({
      error: (error) => {
        this.#failure({
          type: "connection_failed",
          peer: conn.remote?.key,
          error: errorText(error),
        });
        try {
          transport.close();
        } catch { /* already */ }
        this.#closed(conn, `failed: ${errorText(error)}`, transport.remoteAddr);
      },
    });
    conn.established.then(
      (remote) => this.#established(conn, remote, transport.remoteAddr),
      () => {},
    );
    try {
      conn.start();
    } catch (error) {
      this.#failure({ type: "connection_failed", error: errorText(error) });
      transport.close();
      this.#closed(conn, `failed: ${errorText(error)}`, transport.remoteAddr);
    }
    return conn;
  }

  /**
   * One active connection per key; runs before the new one's resume. The
   * chart decides (AUTHENTICATED: the smaller-key rule, replace, refuse
   * while stopping); its actions call back into {@link #host}.
   */
  #activate(conn: Connection): void {
    const remote = conn.remote;
    if (!remote || this.actor.getSnapshot().status !== "active") {
      conn.close(remote ? "shutting down" : "no remote");
      return;
    }
    const peer = remote.key;
    const old = this.#active.get(peer);
    if (old?.conn === conn) return;
    // Dialed: their record is read while their resume comes (remembering
    // it after `connected` then costs no KV read).
    if (conn.dialed) readPeerSoon(this.#o.store, peer);
    const dialedBy = (c: Connection) => c.dialed ? this.key : peer;
    const event: Authenticated<Connection> = {
      type: "AUTHENTICATED",
      peer,
      conn: { conn, dialedBy: dialedBy(conn) },
      other: old &&
        { conn: old.conn, dialedBy: dialedBy(old.conn), since: old.since },
      at: Date.now(),
      windowMs: this.#o.simultaneousWindowMs ?? 5_000,
    };
    // Uncontended (the common case): the chart's answer is `activate`
    // alone, taken without a step; any other case is the chart's step.
    if (activatesWithoutStep(this.actor.getSnapshot(), event)) {
      this.#host.activate(peer, conn, event.at);
    } else {
      this.actor.send(event);
    }
  }

  /** What the chart's AUTHENTICATED actions do. */
  #host: SupervisorHost<Connection> = {
    activate: (peer, conn, at) => {
      this.#active.set(peer, { conn, since: at });
    },
    closeDuplicate: (peer, conn, kept) => {
      conn.close(
        "duplicate connection (simultaneous open): keeping the one dialed by the smaller key",
      );
      this.#emit({
        type: "duplicate",
        peer,
        kept: kept.dialed ? "dialed" : "accepted",
      });
    },
    closeReplaced: (peer, conn) => {
      this.#active.delete(peer);
      conn.close("replaced by a newer connection");
      this.#emit({ type: "replaced", peer });
    },
    refuse: (conn) => conn.close("shutting down"),
  };

  #established(conn: Connection, remote: RemoteHello, remoteAddr: string) {
    const peer = remote.key;
    if (this.#active.get(peer)?.conn !== conn) return;
    this.#waking.delete(peer);
    this.#inspect?.register(conn.actor, {
      label: `peer ${remote.name ?? peer.slice(0, 16)}`,
    });
    this.#emit({
      type: "connected",
      peer,
      name: remote.name,
      ...(remote.about !== undefined ? { about: remote.about } : {}),
      caps: [...remote.caps],
      dialed: conn.dialed,
      remoteAddr,
    });
    let dialer = this.#dialers.get(peer);
    if (!dialer && !conn.dialed && remote.addr) {
      // NOTES item 6: we can dial back a dialer that goes away.
      dialer = this.#createDialer(peer, [remote.addr], true);
    } else if (dialer && !conn.dialed && remote.addr) {
      dialer.learn(remote.addr);
    }
    dialer?.connected();
    // The address we dialed stays first; the one `connect` was asked for
    // goes in the same write (one commit, not two, before the first lines).
    const asked = this.#asked.get(conn);
    const remembered = rememberPeer(this.#o.store, remote, {
      dialed: conn.dialed,
      dialedAddr: conn.dialed ? remoteAddr : undefined,
      dialerAddrs: this.#dialers.get(peer)?.addresses ?? [],
      askedAddr: asked?.addr,
    });
    remembered.catch(() => {}); // bookkeeping only, unless `connect` waits
    if (asked) asked.remembered = remembered;
  }

  #closed(conn: Connection, reason: string, remoteAddr: string): void {
    if (!this.#connections.delete(conn)) return;
    const peer = conn.remote?.key;
    this.#emit({ type: "closed", peer, remoteAddr, reason });
    if (!peer || this.#active.get(peer)?.conn !== conn) return;
    this.#active.delete(peer);
    this.#emit({ type: "disconnected", peer, reason });
    const dialer = this.#dialers.get(peer);
    if (!dialer || this.#stopping) return;
    const tell = () => {
      // A newer connection may have come up meanwhile.
      if (!this.#active.has(peer)) dialer.disconnected();
    };
    if (this.#o.wanted || this.#kept.has(peer)) tell();
    else this.refreshWanted(peer).then(tell, tell);
  }

  /** The configured grants plus `present`, per remote, without repeats. */
  #grantsWith(
    present: Grant[],
  ): (remote: RemoteHello) => Promise<Grant[]> {
    const base = this.#o.grants;
    return async (remote) => {
      const own = typeof base === "function" ? await base(remote) : base ?? [];
      const sigs = new Set(present.map((g) => g.sig));
      return [...present, ...own.filter((g) => !sigs.has(g.sig))];
    };
  }

  #handlerError(peer: string, t: string, error: unknown): void {
    this.#failure({ type: "handler_error", peer, t, error: errorText(error) });
  }
}
