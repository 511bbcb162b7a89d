/**
 * One AWP connection from hello to close: the I/O, crypto and storage behind
 * the statechart in {@link connectionMachine}.
 *
 * What it does, by protocol section:
 * - 7: sends hello at once; checks theirs (v, key, reflection: our own key
 *   gets `err auth`, NOTES item 5); signs and sends auth; verifies theirs;
 *   asks `admit` (a refusal after a valid auth is `err auth` with a detail,
 *   NOTES item 8); then sends resume with `store.seen`.
 * - 9.5: on their resume, replays `store.replayPages`: original ids, in order.
 * - 9.1/9.2: received content lines that arrive together are committed with
 *   one `store.receive` (group commit) BEFORE any ack is sent; duplicates are
 *   acked again and not delivered. msg, state, mirror and private are acked
 *   (NOTES: mirror and private are "reliable like a msg"); chunk and
 *   introduce are committed (seen, dedup) but never acked (SPEC 9.2, NOTES 1).
 * - 9.4: ping/pong, liveness in the chart. 9.6: bye. 9.7: err close rules.
 * Validation: every received line is checked once (`readFrame`). A core type
 * that fails its schema gets `err bad_frame` and close, as the Go reference
 * does for a line it cannot decode (but a malformed hello `v` is `err
 * version` and a malformed key or signature is `err auth`). Extension types (presence, mirror, private) that
 * fail are dropped without closing, as NOTES says for presence; unknown
 * types are ignored.
 *
 * @module
 */

import { type Actor, createActor } from "npm:xstate@^5.33.3";
import { FLOWING, type SessionRoute } from "./frame_routes.ts";
import { SerialQueue } from "./serial_queue.ts";
import {
  type AuthVerdict,
  type ConnectionHost,
  connectionMachine,
  type SendErrParams,
  stateName,
  VERIFIES_AUTH,
} from "./connection_machine.ts";
import type { Transport, TransportHandlers } from "../net/transport.ts";
import { type RemoteHello, remoteHelloOf } from "./remote_hello.ts";
import { ownHello } from "./own_hello.ts";
import type {
  ConnectionHooks,
  ConnectionWiring,
  PeerConfig,
} from "./peer_config.ts";
import type { OutboxEntry } from "../storage/store.ts";
import {
  DEFAULT_MAX_UNSENT_BYTES,
  OutboxWriter,
  type OutboxWriterHost,
  type WireLine,
} from "./outbox_writer.ts";
import {
  ACKED,
  type CommitterHost,
  ReceiveCommitter,
} from "./receive_committer.ts";
import { encodeLine } from "../wire/frame.ts";
import { LineReader } from "../wire/line_reader.ts";
import { connectionClock, pingTimeouts } from "./connection_timing.ts";
import { ActorGroups, type ChartFailureHost } from "./actor_groups.ts";
import { type Frame, readFrame } from "../wire/read_frame.ts";
import { plainPongLine, readPlainLine } from "../wire/plain_line.ts";
import { verify } from "../wire/keys.ts";
import { authTranscript } from "../wire/transcript.ts";
import { decodeBase64, encodeBase64Url } from "../wire/base64.ts";
import { timestamp } from "../wire/time.ts";
import { errorText } from "../wire/error_text.ts";
import type {
  Ack,
  Auth,
  Bye,
  Hello,
  Message,
  Pong,
  Resume,
} from "../wire/types.ts";

export { DEFAULT_MAX_UNSENT_BYTES };
export type { ConnectionTimeouts } from "./connection_machine.ts";
export type { RemoteHello };

/**
 * A received line as the edge read it ({@link Frame}: parsed, checked,
 * with its exact text), handed on to the layers above.
 */
export interface ReceivedLine extends Frame {
  /**
   * Its traffic-log position, as `store.receive` reported it: set on the
   * fresh committed lines handed to `onDeliver` (when the store reports one).
   */
  seq?: number;
}

/**
 * Options of {@link Connection}: the shared {@link PeerConfig} fields it
 * uses, its wiring and hooks (passed down as the supervisor got them), and
 * what its owner hears from this connection alone.
 */
export interface ConnectionOptions extends
  Pick<
    PeerConfig,
    "name" | "about" | "caps" | "addr" | "timeouts" | "maxUnsentBytes" | "admit"
  >,
  ConnectionWiring,
  ConnectionHooks {
  /** The socket to speak over (dialed or accepted). */
  transport: Transport;
  /** We dialed (for the simultaneous-open tie-break, NOTES item 4). */
  dialed: boolean;
  /** After both auths verify, before resume is processed. */
  onAuthenticated?(conn: Connection): void | Promise<void>;
  /** New (non-duplicate) content lines, committed and acked, with `seq`. */
  onDeliver?(conn: Connection, lines: ReceivedLine[]): void;
  /**
   * Known non-content lines after auth that the connection does not consume
   * itself: grant, presence and err.
   */
  onControl?(conn: Connection, line: ReceivedLine): void;
  /** Called once, when the connection has closed, with the reason. */
  onClosed?(conn: Connection, reason: string): void;
  /** xstate inspection, passed to createActor. */
  inspect?: (event: unknown) => void;
}

/** How long a closing connection waits for queued lines to drain. */
const DRAIN_MS = 1_000;
const decoder = new TextDecoder();
const encoder = new TextEncoder();
const lossy = new TextDecoder("utf-8", { fatal: false });

/** Connection actors share xstate systems, a group at a time. */
const actorGroups = new ActorGroups(connectionClock);

function deferred<T>() {
  let resolve!: (value: T) => void;
  let reject!: (error: Error) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/**
 * One connection to a peer. Construct, then {@link Connection.start}.
 *
 * @example
 * ```ts ignore
 * import { Connection } from "./connection.ts";
 * import { dial } from "../net/transport.ts";
 * import { Signer } from "../wire/keys.ts";
 * import { MemoryStore } from "../storage/memory_store.ts";
 * const conn = new Connection({
 *   transport: await dial("tcp:127.0.0.1:7000"),
 *   signer: await Signer.generate(),
 *   store: new MemoryStore(),
 *   dialed: true,
 * });
 * conn.start();
 * const remote = await conn.established;
 * console.log("connected to", remote.name);
 * await conn.bye("done");
 * ```
 */
export class Connection {
  /** We dialed this connection. */
  readonly dialed: boolean;
  /** The statechart actor (for inspection and tests). */
  readonly actor: Actor<typeof connectionMachine>;
  /** Resolves when open (after the peer's resume); rejects on close before. */
  readonly established: Promise<RemoteHello>;
  /** Resolves with the close reason. */
  readonly closed: Promise<string>;

  #o: ConnectionOptions;
  #t: Transport;
  // Views: #onData is done with each line before the transport reads again.
  #reader = new LineReader({ views: true });
  #myHello: Uint8Array | undefined;
  #peerHello: Uint8Array | undefined;
  #peer: RemoteHello | undefined;
  #authed = false;
  #opened = false;
  #done = false;
  #started = false;
  #byeSent = false;
  #theirSeen: Record<string, string> = {};
  /** Our seen for the resume, read ahead while their auth verifies. */
  #seen: Promise<Record<string, string>> | undefined;
  /** The received lines' mark when {@link #seen} was read. */
  #seenMark: number | undefined;
  /** Every line to the socket; outbox entries in order, each once. */
  #outbox: OutboxWriter;
  #lastPing: { id: string; at: number } | undefined;
  /** When a line was last read, and the chart's liveness wait began. */
  #receivedAt = performance.now();
  #waitFrom = 0;
  #rtt: number | undefined;
  /** Ordered asynchronous output: auth, resume, replay, entries. */
  #out = new SerialQueue();
  /** Received content lines on their way to the store, acks after. */
  #committer: ReceiveCommitter;
  /** What the chart's actions call on this connection. */
  #host: ConnectionHost & TransportHandlers;
  /** While the session is up: lines the host routes itself (the chart's table). */
  #sessionRoutes: ReadonlyMap<string, SessionRoute> | undefined;
  /** Our auth on its way out: their auth waits for it (see #onData). */
  #authOut: ReturnType<typeof deferred<void>> | undefined;
  /** Until settled (an open connection keeps no resolvers). */
  #establishedD: ReturnType<typeof deferred<RemoteHello>> | undefined =
    deferred<RemoteHello>();
  #closedD = deferred<string>();

  /** Sets the connection up; nothing happens until {@link start}. */
  constructor(options: ConnectionOptions) {
    this.#o = options;
    this.#t = options.transport;
    this.dialed = options.dialed;
    this.established = this.#establishedD!.promise;
    this.closed = this.#closedD.promise;
    // Handled here so an unobserved failed handshake is not an unhandled rejection.
    this.established.catch(() => {});
    // One machine shared by every connection; its actions call this host.
    const host = this.#host = new Connection.#Host(this);
    this.#outbox = new OutboxWriter(
      options.transport,
      host,
      options.maxUnsentBytes,
    );
    // The committer writes its acks through the connection's output.
    this.#committer = new ReceiveCommitter(options.store, host, this.#outbox);
    // Inspected: a system of its own (xstate inspects whole systems).
    const group = options.inspect ? undefined : actorGroups.current();
    this.actor = createActor(connectionMachine, {
      input: { timeouts: pingTimeouts(options), key: options.signer.key, host },
      inspect: options.inspect,
      clock: connectionClock,
      parent: group?.parent,
    });
    group?.join(this.actor, host);
  }

  /**
   * What the chart's actions do, on one connection: methods, not a closure
   * per action per connection (10,000 idle connections hold one each).
   */
  static #Host = class
    implements
      ConnectionHost,
      CommitterHost,
      OutboxWriterHost,
      ChartFailureHost,
      TransportHandlers {
    #c: Connection;
    constructor(connection: Connection) {
      this.#c = connection;
    }
    acceptHello(frame: Frame) {
      this.#c.#acceptHello(frame);
    }
    sessionRoutes(routes: ReadonlyMap<string, SessionRoute> | undefined) {
      this.#c.#sessionRoutes = routes;
    }
    noteSeen(frame: Frame) {
      this.#c.#theirSeen = (frame.message as Resume).seen;
    }
    stage(frame: Frame) {
      this.#c.#committer.stage(frame);
    }
    takeChunk(frame: Frame) {
      return this.#c.#o.onChunk?.(this.#c.#peer!.key, this.#c, frame);
    }
    takeAck(frame: Frame) {
      this.#c.#takeAck(frame);
    }
    answerPing(frame: Frame) {
      this.#c.#answerPing(frame.message.id);
    }
    notePong(frame: Frame) {
      this.#c.#notePong(frame);
    }
    noteBye(frame: Frame) {
      const reason = (frame.message as Bye).reason;
      const peer = this.#c.remote?.key;
      if (peer) {
        this.#c.#o.onBye?.(
          peer,
          typeof reason === "string" ? reason : undefined,
        );
      }
    }
    control(frame: Frame) {
      this.#c.#o.onControl?.(this.#c, frame);
    }
    sendHello() {
      this.#c.#sendHello();
    }
    remoteKey() {
      return this.#c.#peer!.key;
    }
    beforeCommit(lines: ReceivedLine[]) {
      const c = this.#c;
      return c.#o.beforeCommit?.(c.#peer!.key, c, lines);
    }
    needsBeforeCommit(message: Message) {
      const c = this.#c;
      return c.#o.needsBeforeCommit?.(c.#peer!.key, message) ?? false;
    }
    deliver(lines: ReceivedLine[]) {
      this.#c.#o.onDeliver?.(this.#c, lines);
    }
    fail(detail: string) {
      this.#c.#fail("internal", detail);
    }
    open() {
      const c = this.#c;
      return c.#opened && !c.#done && !c.#byeSent;
    }
    stopped() {
      return this.#c.#done || this.#c.#byeSent;
    }
    chain(task: () => Promise<void>) {
      this.#c.#chain(task);
    }
    wrote(raw: string, line: WireLine, logged: boolean) {
      this.#c.#o.onLine?.(this.#c.remote?.key, "out", raw, line, logged);
    }
    end(reason: string) {
      this.#c.#event({ type: "END", reason });
    }
    sent(entry: OutboxEntry) {
      this.#c.#o.onSent?.(this.#c.#peer!.key, entry);
    }
    note(text: string) {
      this.#c.#o.onLine?.(this.#c.remote?.key, "out", text);
    }
    sendAuth() {
      const c = this.#c;
      const out = c.#authOut = deferred<void>();
      c.#chain(() => c.#sendAuth().finally(() => out.resolve()));
    }
    sendResume() {
      this.#c.#chain(() => this.#c.#sendResume());
    }
    replay() {
      this.#c.#outbox.replayQueued();
      this.#c.#chain(() => this.#c.#replay());
    }
    opened() {
      const c = this.#c;
      c.#opened = true;
      // From here lines may come in bursts; the handshake's went at once.
      c.#t.holdBursts?.(true);
      // Both auths are done: the hellos' bytes are not needed any more.
      c.#myHello = undefined;
      c.#peerHello = undefined;
      c.#establishedD?.resolve(c.#peer!);
      c.#establishedD = undefined;
    }
    sendPing() {
      this.#c.#sendPing();
    }
    startWait() {
      this.#c.#waitFrom = performance.now();
    }
    quietFor() {
      return performance.now() - this.#c.#receivedAt;
    }
    waitedFor() {
      return performance.now() - this.#c.#waitFrom;
    }
    sendBye(reason?: string) {
      this.#c.#sendBye(reason);
    }
    replyBye() {
      this.#c.#sendBye();
    }
    sendErr(params: SendErrParams) {
      this.#c.#sendErr(params);
    }
    closeTransport(reason: string) {
      void this.#c.#shutdown(reason);
    }
    // The transport's handlers (no closures of their own per connection).
    onData(chunk: Uint8Array) {
      return this.#c.#onData(chunk);
    }
    onEnd(error?: Error) {
      this.#c.#event({
        type: "END",
        reason: error
          ? `read error: ${error.message}`
          : "peer closed the connection",
      });
    }
    onFrameError(code: "bad_frame" | "too_large", detail: string) {
      // A framing fault below the line layer (WebSocket): same answer.
      if (!this.#c.#done) this.#c.#fail(code, detail);
    }
    chartFailed(error: unknown) {
      // A grouped actor's error goes to its group, not unhandled: close.
      void this.#c.#shutdown(`failed: ${errorText(error)}`);
    }
  };

  /** Sends hello and starts reading. */
  start(): void {
    if (this.#started) return;
    this.#started = true;
    this.actor.start();
    this.#t.start(this.#host);
  }

  /** The peer's hello, once its auth verified. */
  get remote(): RemoteHello | undefined {
    return this.#authed ? this.#peer : undefined;
  }

  /** The protocol state: hello, auth, resume, open, closing or closed. */
  get state(): string {
    return stateName(this.actor.getSnapshot().value);
  }

  /** Last ping round trip in ms, if measured. */
  get rtt(): number | undefined {
    return this.#rtt;
  }

  /** Where outbox entries go out ({@link OutboxWriter.send}). */
  get writer(): OutboxWriter {
    return this.#outbox;
  }

  /** Sends outboxed entries (with ids) now if open; else they go on resume. */
  sendEntries(entries: OutboxEntry[]): void {
    this.#outbox.send(entries);
  }

  /** Sends a non-outboxed line (err, presence, grant...) if open; `id` and `ts` are filled in when absent. */
  sendLine(message: Record<string, unknown>): void {
    if (!this.#opened || typeof message.t !== "string") return;
    this.#send({
      ...message,
      t: message.t,
      id: typeof message.id === "string" ? message.id : this.#o.store.nextId(),
      ts: typeof message.ts === "string" ? message.ts : timestamp(),
    });
  }

  /** Graceful close: bye, then closed on their bye or the bye timeout. */
  async bye(reason?: string): Promise<void> {
    this.#event({ type: "BYE", reason });
    await this.closed;
  }

  /** Abrupt close. */
  close(reason: string): void {
    this.#event({ type: "CLOSE", reason });
  }

  // ---- statechart plumbing ----

  #event(
    event: Parameters<Actor<typeof connectionMachine>["send"]>[0],
  ): void {
    if (this.actor.getSnapshot().status === "active") this.actor.send(event);
  }

  #fail(code: string | undefined, detail: string, re?: string): void {
    this.#event({ type: "FAIL", code, detail, re });
  }

  /** Runs ordered asynchronous output (auth, resume, replay, entries). */
  #chain(task: () => Promise<void> | void): void {
    this.#out.push(task).catch((error) => {
      this.#fail("internal", errorText(error));
    });
  }

  // ---- output ----

  /** Queues one line; returns the bytes queued (0 when nothing was sent). */
  #send(message: WireLine): number {
    return this.#outbox.writeLine(message);
  }

  /** Answers the ping `re`: a pong built without the generic encoder. */
  #answerPing(re: string): void {
    const pong = {
      t: "pong",
      id: this.#o.store.nextId(),
      ts: timestamp(),
      re,
    };
    const line = plainPongLine(pong.id, pong.ts, re);
    if (line) this.#outbox.writeEncoded(pong, line.text, line.bytes);
    else this.#send(pong);
  }

  #sendHello(): void {
    const frame = encodeLine(ownHello(this.#o, this.#o.store.nextId()));
    // The transcript covers the exact bytes, without the newline.
    this.#myHello = frame.subarray(0, frame.length - 1);
    this.#o.onLine?.(this.remote?.key, "out", decoder.decode(this.#myHello));
    this.#t.write(frame).catch((error) => {
      this.#event({ type: "END", reason: `write failed: ${errorText(error)}` });
    });
  }

  async #sendAuth(): Promise<void> {
    const { signer, grants } = this.#o;
    // Signing and choosing the grants to present (a store lookup) overlap.
    const [sig, present] = await Promise.all([
      signer.sign(authTranscript(this.#myHello!, this.#peerHello!)),
      Promise.resolve(this.#peer!).then((remote) =>
        typeof grants === "function" ? grants(remote) : grants
      ).catch(() => undefined), // choosing grants failed: present none
    ]);
    const auth: WireLine = {
      t: "auth",
      id: this.#o.store.nextId(),
      ts: timestamp(),
      sig: encodeBase64Url(sig),
    };
    if (present?.length) auth.grants = present;
    this.#send(auth);
  }

  async #sendResume(): Promise<void> {
    // What an earlier connection to them read commits first; the seen read
    // ahead holds only if nothing was received since (else read again).
    await this.#committer.previousSettled();
    const ahead = this.#seenMark !== undefined &&
      this.#committer.quietMark() === this.#seenMark;
    const seen = await (ahead && this.#seen ||
      this.#o.store.seen(this.#peer!.key));
    this.#seen = undefined;
    this.#send({
      t: "resume",
      id: this.#o.store.nextId(),
      ts: timestamp(),
      seen,
    });
  }

  #replay(): Promise<void> {
    const peer = this.#peer!.key;
    return this.#outbox.replay(
      this.#o.store.replayPages(peer, this.#theirSeen, (e) => {
        // Lines at or below their seen are not replayed (SPEC 9.5): they
        // have them (their ack was lost with a crash); waiters hear it now.
        if (ACKED.has(e.t)) {
          this.#o.onAck?.(
            peer,
            e.th === undefined ? { re: e.id } : { re: e.id, th: e.th },
          );
        }
      }),
    );
  }

  #sendPing(): void {
    const id = this.#o.store.nextId();
    this.#lastPing = { id, at: Date.now() };
    this.#send({ t: "ping", id, ts: timestamp() });
  }

  #sendBye(reason?: string): void {
    const bye: WireLine = {
      t: "bye",
      id: this.#o.store.nextId(),
      ts: timestamp(),
    };
    if (reason !== undefined) bye.reason = reason;
    this.#send(bye);
    this.#byeSent = true;
  }

  #sendErr(params: SendErrParams): void {
    const err: WireLine = {
      t: "err",
      id: this.#o.store.nextId(),
      ts: timestamp(),
      code: params.code,
      detail: params.detail,
    };
    if (params.re !== undefined) err.re = params.re;
    this.#send(err);
  }

  async #shutdown(reason: string): Promise<void> {
    if (this.#done) return;
    this.#done = true;
    this.#authOut?.resolve();
    // Let an err or bye just queued reach the peer, but not forever (the
    // wheel's timer: 10,000 closing connections make no real timers).
    // Nothing queued (most closes: the peer went away): no wait at all.
    if (this.#outbox.unwrittenBytes > 0) {
      let timer: unknown;
      await Promise.race([
        this.#t.flush().catch(() => {}),
        new Promise<void>((resolve) =>
          timer = connectionClock.setTimeout(resolve, DRAIN_MS)
        ),
      ]);
      connectionClock.clearTimeout(timer);
    }
    this.#t.close();
    this.#outbox.close();
    this.#establishedD?.reject(new Error(reason));
    this.#establishedD = undefined;
    this.#closedD.resolve(reason);
    this.#o.onClosed?.(this, reason);
  }

  // ---- input ----

  /**
   * Reads lines: each is parsed and checked once ({@link readFrame}) and
   * sent to the chart as a `FRAME`; the chart routes it (the host methods
   * below do what it asks). Content lines staged by the chart go to the
   * group commit together; reading goes on while commits run, up to a bound.
   */
  async #onData(chunk: Uint8Array): Promise<void> {
    if (this.#done) return;
    // Proof of life for the chart's liveness: a field, not a step.
    this.#receivedAt = performance.now();
    const events = this.#reader.push(chunk);
    if (events.length === 0) return;
    try {
      for (const ev of events) {
        if (this.#done || this.actor.getSnapshot().status !== "active") break;
        if (ev.kind === "too_large") {
          await this.#committer.commit();
          this.#fail(
            "too_large",
            `line of at least ${ev.size} bytes exceeds 1 MiB`,
          );
          break;
        }
        // A ping or an ack in the shape peers send, while the session is up,
        // is read without the JSON parser and the schema (an idle
        // listener's pings, a sender's acks).
        let frame = this.#sessionRoutes !== undefined
          ? readPlainLine(ev.bytes)
          : undefined;
        if (frame === undefined) {
          const read = readFrame(ev.bytes);
          if (!read.ok) {
            this.#o.onLine?.(this.remote?.key, "in", lossy.decode(ev.bytes));
            await this.#committer.commit();
            this.#fail("bad_frame", read.detail);
            break;
          }
          frame = read.frame;
        }
        this.#o.onLine?.(
          this.remote?.key,
          "in",
          frame.raw,
          frame.message as unknown as Record<string, unknown>,
        );
        // The session's routine lines take the route the chart installed
        // for this state (its table, SESSION_ROUTES) without a chart step.
        const route = frame.invalid === undefined
          ? this.#sessionRoutes?.get(frame.message.t)
          : undefined;
        if (route) {
          this.#host[route](frame);
          continue;
        }
        // A line that may end the session (resume, bye, err, one failing
        // its schema...) waits until the content before it is committed
        // and acked, whatever the chart then decides.
        if (frame.invalid !== undefined || !FLOWING.has(frame.message.t)) {
          await this.#committer.commit();
        }
        // Their auth, read with their hello, waits until ours is written:
        // the other side can verify ours while we verify theirs (verifying
        // first held ours back up to ~1 ms on a first connection, traced).
        if (this.#authOut && frame.message.t === "auth") {
          await this.#authOut.promise;
          this.#authOut = undefined;
          if (this.#done) break;
        }
        // Their auth where the chart takes it: verified first, then only
        // the verdict is a chart step; no line is read meanwhile (their
        // resume may follow at once and must wait for it).
        if (
          frame.message.t === "auth" &&
          this.actor.getSnapshot().hasTag(VERIFIES_AUTH)
        ) {
          this.#event(await this.#authVerdict(frame));
          continue;
        }
        this.#event({ type: "FRAME", frame });
      }
      // Nothing staged, held or over the bound (a ping, an ack): reading
      // goes on without the two awaits below (an idle listener's pings).
      if (this.#committer.readOnNow()) return;
      void this.#committer.commit();
      // Reading goes on while commits run, up to a bound.
      await this.#committer.roomToRead(() => this.#done);
    } catch (error) {
      this.#fail("internal", `storage failed: ${errorText(error)}`);
    }
  }

  // ---- what the chart asks for a received line ----

  #acceptHello(frame: Frame): void {
    const m = frame.message as Hello;
    // The transcript covers their hello's exact bytes: the strict UTF-8
    // text encodes back to them.
    this.#peerHello = encoder.encode(frame.raw);
    this.#peer = remoteHelloOf(m);
  }

  /** The chart's event for their auth: its verdict, a failure `internal`. */
  async #authVerdict(
    frame: Frame,
  ): Promise<{ type: "AUTH_OK" } | ({ type: "AUTH_REFUSED" } & SendErrParams)> {
    try {
      const verdict = await this.#verifyAuth(frame);
      if (verdict.ok) return { type: "AUTH_OK" };
      const { ok: _, ...refusal } = verdict;
      return { ...refusal, type: "AUTH_REFUSED" };
    } catch (error) {
      return {
        type: "AUTH_REFUSED",
        code: "internal",
        detail: `storage failed: ${errorText(error)}`,
      };
    }
  }

  /** Their auth: signature, then schema, then admission (SPEC 7, NOTES 8). */
  async #verifyAuth(frame: Frame): Promise<AuthVerdict> {
    const m = frame.message as Auth;
    const re = typeof m.id === "string" ? m.id : undefined;
    const refuse = (code: string, detail: string): AuthVerdict => ({
      ok: false,
      code,
      detail,
      re,
    });
    if (typeof m.sig !== "string") {
      return refuse("auth", "auth has no signature");
    }
    let sig: Uint8Array;
    try {
      sig = decodeBase64(m.sig);
    } catch {
      return refuse("auth", "auth signature is not base64url");
    }
    // Our seen, read while we verify (reading is paused: no line of this
    // connection lands meanwhile); it goes out only once they are admitted.
    // Lines an earlier connection still commits are waited for in
    // #sendResume; its mark says whether this read is still current then.
    this.#seenMark = this.#committer.quietMark();
    this.#seen = this.#o.store.seen(this.#peer!.key);
    this.#seen.catch(() => {}); // a failure surfaces in #sendResume
    const ok = await verify(
      this.#peer!.key,
      authTranscript(this.#peerHello!, this.#myHello!),
      sig,
    );
    if (!ok) return refuse("auth", "auth signature does not verify");
    if (frame.invalid !== undefined) {
      return refuse("bad_frame", `invalid auth: ${frame.invalid}`);
    }
    if (Array.isArray(m.grants)) this.#peer!.grants = m.grants;
    const refusal = await this.#o.admit?.(this.#peer!, {
      dialed: this.#o.dialed,
    });
    if (refusal !== undefined) return refuse("auth", refusal);
    // The admission may have awaited: the connection may have ended since
    // (the chart has stopped then, and hears no verdict).
    if (this.#done) return refuse("auth", "closed");
    this.#authed = true;
    this.#t.authenticated?.(); // out of the listener's pre-auth bounds
    await this.#o.onAuthenticated?.(this);
    return { ok: true };
  }

  #takeAck(frame: Frame): void {
    const { re, th } = frame.message as Ack;
    const peer = this.#peer!.key;
    // The store takes the ack once the line's own enqueue is durable (it
    // may have been written before: Store.queue) and drops it from its
    // index then; the delete commits later. The receiver has the line
    // durably, so the ack is reported without waiting for that delete.
    this.#o.store.acked(peer, th, re).then(
      () => this.#o.onAck?.(peer, th === undefined ? { re } : { re, th }),
      (error) => this.#fail("internal", `storage failed: ${errorText(error)}`),
    );
  }

  #notePong(frame: Frame): void {
    const { re } = frame.message as Pong;
    if (this.#lastPing && re === this.#lastPing.id) {
      this.#rtt = Date.now() - this.#lastPing.at;
      this.#event({ type: "PONG" });
    }
  }
}
