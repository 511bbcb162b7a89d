/**
 * One AWP connection from hello to close: the I/O, crypto and storage behind
 * the statechart in {@link connectionMachine}.
 *
 * What it does, by protocol section:
 * - 7: sends hello at once; checks theirs (v, key, reflection: our own key
 *   gets `err auth`, NOTES item 5); signs and sends auth; verifies theirs;
 *   asks `admit` (a refusal after a valid auth is `err auth` with a detail,
 *   NOTES item 8); then sends resume with `store.seen`.
 * - 9.5: on their resume, replays `store.replay` with original ids, in order.
 * - 9.1/9.2: received content lines that arrive together are committed with
 *   one `store.receive` (group commit) BEFORE any ack is sent; duplicates are
 *   acked again and not delivered. msg, state, mirror and private are acked
 *   (NOTES: mirror and private are "reliable like a msg"); chunk and
 *   introduce are committed (seen, dedup) but never acked (SPEC 9.2, NOTES 1).
 * - 9.4: ping/pong, liveness in the chart. 9.6: bye. 9.7: err close rules.
 *
 * Validation: every received line is checked with `validateMessage`. A core
 * message type that fails its schema gets `err bad_frame` and the connection
 * closes, like the Go reference does for a line it cannot decode (except
 * that a malformed hello `v` is `err version` and a malformed key or
 * signature is `err auth`). Extension types (presence, mirror, private) that
 * fail are dropped without closing, as NOTES says for presence; unknown
 * types are ignored.
 *
 * @module
 */

import { type Actor, createActor } from "npm:xstate@^5.33.3";
import {
  type ConnectionHost,
  connectionMachine,
  type ConnectionTimeouts,
  type SendErrParams,
  stateName,
} from "./connection_machine.ts";
import type { Transport } from "../net/transport.ts";
import type { OutboxEntry, Store } from "../storage/store.ts";
import type {
  IncomingLine,
  ReceiveExtras,
  ReceiveOutcome,
} from "../storage/store.ts";
import { type ChunkFrame, ChunkFramer } from "../storage/chunk_frame.ts";
import { splitChunkLine } from "../wire/chunk_line.ts";
import { encodeLine } from "../wire/frame.ts";
import { LineReader } from "../wire/line_reader.ts";
import { parseLine } from "../wire/parse.ts";
import { validateMessage } from "../wire/validate.ts";
import { isKey, randomNonce, type Signer, verify } from "../wire/keys.ts";
import { authTranscript } from "../wire/transcript.ts";
import { decodeBase64, encodeBase64Url } from "../wire/base64.ts";
import { timestamp } from "../wire/time.ts";
import {
  CONTENT_TYPES,
  type Grant,
  type Message,
  MESSAGE_TYPES,
  PRE_AUTH_FORBIDDEN,
  PROTOCOL_VERSION,
} from "../wire/types.ts";

/**
 * Default bound on the bytes queued for a connection's socket and not yet
 * written, each line counted as at least 1 KiB (a remote that never
 * reads): past it, once nothing could be written for 1 s (or at once past
 * four times it), the connection is closed; outbox lines stay in the
 * outbox for the next connection.
 */
export const DEFAULT_MAX_UNSENT_BYTES = 8 * 1024 * 1024;
/** Over the unsent bound, how long no write may finish before we close. */
const UNSENT_STALL_MS = 1_000;
/** Each queued line counts at least this much against the unsent bound. */
const MIN_LINE_COST = 1024;

/**
 * Bytes queued on the socket and not yet written before outbox lines wait:
 * a sliding window, so the socket's own pace sets the sender's (a replay of
 * a big blob never reads and queues every chunk at once).
 */
const WRITE_AHEAD_BYTES = 512 * 1024;

export type { ConnectionTimeouts } from "./connection_machine.ts";

/** What the peer said about itself in hello (and presented in auth). */
export interface RemoteHello {
  /** The peer's key (`ed25519:...`), verified by its auth. */
  key: string;
  /** The name the peer gave in hello. */
  name?: string;
  /** Capabilities the peer announced in hello. */
  caps: string[];
  /** The peer's self-description from hello. */
  about?: string;
  /** The address the peer says it can be reached at (NOTES item 6). */
  addr?: string;
  /** The nonce from the peer's hello. */
  nonce: string;
  /** Grants presented in auth (unverified: the caller decides). */
  grants: Grant[];
}

/** A received line as parsed, with its exact text. */
export interface ReceivedLine {
  /** The parsed, schema-valid message. */
  message: Message;
  /** The line exactly as received, without its newline. */
  raw: string;
  /**
   * For a chunk: its data, decoded (and so checked) once on arrival; the
   * text is dropped then (`message.data` is empty, `raw` is the line
   * without it), so a batch in flight holds each chunk once.
   */
  bytes?: Uint8Array;
  /**
   * Its traffic-log position, as `store.receive` reported it: set on the
   * fresh committed lines handed to `onDeliver` (when the store reports one).
   */
  seq?: number;
}

/** Options of {@link Connection}. */
export interface ConnectionOptions {
  /** The socket to speak over (dialed or accepted). */
  transport: Transport;
  /** Our identity: signs the auth transcript. */
  signer: Signer;
  /** Where seen ids, the outbox and received lines are committed. */
  store: Store;
  /** We dialed (for the simultaneous-open tie-break, NOTES item 4). */
  dialed: boolean;
  /** Our name, sent in hello. */
  name?: string;
  /** Our self-description, sent in hello. */
  about?: string;
  /** Capabilities we announce in hello. */
  caps?: string[];
  /** Our own reachable address, sent in hello (NOTES item 6). */
  addr?: string;
  /**
   * Grants to present in auth: a list, or a function of the remote's hello
   * (its key is claimed, not yet verified) choosing what fits it.
   */
  grants?: Grant[] | ((remote: RemoteHello) => Grant[] | Promise<Grant[]>);
  /** Extension: keys of hosts we mirror to, sent as hello.shares. */
  shares?: string[] | (() => string[]);
  /** Overrides of {@link DEFAULT_TIMEOUTS}, in milliseconds. */
  timeouts?: Partial<ConnectionTimeouts>;
  /** Bound on unwritten bytes (default {@link DEFAULT_MAX_UNSENT_BYTES}). */
  maxUnsentBytes?: number;
  /**
   * Return (or resolve with) a refusal detail to refuse the peer after its
   * auth verified (err auth + close, NOTES 8); undefined admits it.
   */
  admit?(
    remote: RemoteHello,
    context: { dialed: boolean },
  ): string | undefined | Promise<string | undefined>;
  /** After both auths verify, before resume is processed. */
  onAuthenticated?(conn: Connection): void | Promise<void>;
  /**
   * Awaited before received content lines are committed (so before they
   * count as seen): whatever must be durable first (a chunk's bytes) is
   * written here. Called with every line of the batch, duplicates too; a
   * throw closes the connection with `err internal`, nothing committed.
   */
  beforeCommit?(
    conn: Connection,
    lines: ReceivedLine[],
  ): Promise<ReceiveExtras | void>;
  /**
   * A valid chunk line as it arrives, before its batch commits: its bytes
   * may be written now (then dropped from `line.bytes`); `beforeCommit`
   * still makes them durable. A returned promise holds reading until it
   * settles (the batch so far is handed to the commit first).
   */
  onChunk?(conn: Connection, line: ReceivedLine): Promise<void> | void;
  /**
   * New (non-duplicate) content lines, committed and acked, each with the
   * log `seq` the store gave it.
   */
  onDeliver?(conn: Connection, lines: ReceivedLine[]): void;
  /** An ack of ours arrived; called once the store has dropped the entry. */
  onAck?(conn: Connection, ack: { re: string; th?: string }): void;
  /** The peer said bye (with its reason, if any). */
  onBye?(conn: Connection, reason?: string): void;
  /** An outboxed entry was just written to the socket (sent or replayed). */
  onSent?(conn: Connection, entry: OutboxEntry): void;
  /**
   * Known non-content lines after auth that the connection does not consume
   * itself: grant, presence and err (an addition to the lead's contract).
   */
  onControl?(conn: Connection, line: ReceivedLine): void;
  /**
   * Every line, in and out, for the log or an inspector; `message` is the
   * line already parsed (absent for a local note or an unparsable line).
   */
  onLine?(
    conn: Connection,
    dir: "in" | "out",
    raw: string,
    message?: Record<string, unknown>,
  ): void;
  /** Called once, when the connection has closed, with the reason. */
  onClosed?(conn: Connection, reason: string): void;
  /** xstate inspection, passed to createActor. */
  inspect?: (event: unknown) => void;
}

/** A received content line waiting for its commit; `size` is its length on the wire. */
type Pending = IncomingLine & { received: ReceivedLine; size: number };

/** How many written entry ids a connection remembers (see #written). */
const WRITTEN_IDS_KEPT = 4096;

/** Lines committed with store.receive (dedup, seen). */
const COMMITTED: ReadonlySet<string> = new Set([...CONTENT_TYPES, "private"]);
/** Committed lines that are acked. */
const ACKED: ReadonlySet<string> = new Set([
  "msg",
  "state",
  "mirror",
  "private",
]);
/** Extension types: a schema failure drops the line instead of closing. */
const EXTENSIONS: ReadonlySet<string> = new Set([
  "presence",
  "mirror",
  "private",
]);
/** Core types the connection hands to onControl. */
const CONTROL: ReadonlySet<string> = new Set(["grant", "presence", "err"]);
/** Outboxed lines a later line never overtakes (a later ack drops them). */
const BARRIERS: ReadonlySet<string> = new Set(["grant", "introduce"]);
/** How long a closing connection waits for queued lines to drain. */
const DRAIN_MS = 1_000;
/**
 * Bytes of received content lines whose commit is in flight before reading
 * waits for them: reading and parsing go on while a commit runs (so the next
 * group commit can take all that arrived), but a flood cannot pile up.
 */
const MAX_UNCOMMITTED_BYTES = 4 * 1024 * 1024;

const decoder = new TextDecoder();
const lossy = new TextDecoder("utf-8", { fatal: false });

function deferred<T>() {
  let resolve!: (value: T) => void;
  let reject!: (error: Error) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

type Obj = Record<string, unknown> & { t: string };

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
  #reader = new LineReader();
  #myHello: Uint8Array | undefined;
  #peerHello: Uint8Array | undefined;
  #peer: RemoteHello | undefined;
  #authed = false;
  #opened = false;
  #done = false;
  #started = false;
  #byeSent = false;
  #theirSeen: Record<string, string> = {};
  /**
   * Ids of outbox entries written on this connection (bounded, oldest
   * forgotten first): an entry both replayed and sent live goes out once.
   * Exact ids, not "the highest per thread": an entry written after a later
   * one of its thread must still go out, or the remote's seen would pass it.
   */
  #written = new Set<string>();
  /** Threads of the received lines in `beforeCommit` now (see #overtaking). */
  #syncing = new Set<string>();
  /** Builds outgoing chunk lines in reused buffers (created on first use). */
  #frames: ChunkFramer | undefined;
  /** Entries handed to the output chain and not written yet, per thread. */
  #queuedThreads = new Map<string, number>();
  /** Grants and introductions among them (never overtaken). */
  #queuedBarriers = 0;
  /** A replay is listing the outbox (its entries are not counted yet). */
  #listing = false;
  #lastPing: { id: string; at: number } | undefined;
  #rtt: number | undefined;
  #out: Promise<void> = Promise.resolve();
  /** Received content lines not yet handed to the store. */
  #uncommitted: Pending[] = [];
  /** The pump handing them over, while it runs. */
  #pumping: Promise<void> | undefined;
  /** Handed batches once committed: acks and delivery, in order. */
  #committed: Promise<void> = Promise.resolve();
  #uncommittedBytes = 0;
  /** Bytes handed to the transport and not yet written. */
  #unwrittenBytes = 0;
  /** When the transport last finished writing a line. */
  #lastWritten = performance.now();
  #writeWaiters: Array<() => void> = [];
  /** Reading, waiting for a batch to commit (over the in-flight bound). */
  #commitWaiters: Array<() => void> = [];
  /** A commit failed: nothing later is committed or acked. */
  #storageFailed = false;
  #establishedD = deferred<RemoteHello>();
  #closedD = deferred<string>();

  /** Sets the connection up; nothing happens until {@link start}. */
  constructor(options: ConnectionOptions) {
    this.#o = options;
    this.#t = options.transport;
    this.dialed = options.dialed;
    this.established = this.#establishedD.promise;
    this.closed = this.#closedD.promise;
    // Handled here so an unobserved failed handshake is not an unhandled rejection.
    this.established.catch(() => {});
    // One machine shared by every connection; its actions call this host.
    const host: ConnectionHost = new Connection.#Host(this);
    this.actor = createActor(connectionMachine, {
      input: { timeouts: options.timeouts, host },
      inspect: options.inspect,
    });
  }

  /**
   * What the chart's actions do, on one connection: methods, not a closure
   * per action per connection (10,000 idle connections hold one each).
   */
  static #Host = class implements ConnectionHost {
    #c: Connection;
    constructor(connection: Connection) {
      this.#c = connection;
    }
    sendHello() {
      this.#c.#sendHello();
    }
    sendAuth() {
      this.#c.#chain(() => this.#c.#sendAuth());
    }
    sendResume() {
      this.#c.#chain(() => this.#c.#sendResume());
    }
    replay() {
      this.#c.#chain(() => this.#c.#replay());
    }
    opened() {
      const c = this.#c;
      c.#opened = true;
      // Both auths are done: the hellos' bytes are not needed any more.
      c.#myHello = undefined;
      c.#peerHello = undefined;
      c.#establishedD.resolve(c.#peer!);
    }
    sendPing() {
      this.#c.#sendPing();
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
  };

  /** Sends hello and starts reading. */
  start(): void {
    if (this.#started) return;
    this.#started = true;
    this.actor.start();
    this.#t.start({
      onData: (chunk) => this.#onData(chunk),
      onEnd: (error) =>
        this.#event({
          type: "END",
          reason: error
            ? `read error: ${error.message}`
            : "peer closed the connection",
        }),
      // A framing fault below the line layer (WebSocket): same answer.
      onFrameError: (code, detail) => {
        if (!this.#done) this.#fail(code, detail);
      },
    });
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

  /** Sends outboxed entries (committed, with ids) now if open; else they go on resume. */
  sendEntries(entries: OutboxEntry[]): void {
    if (!this.#opened || this.#done || this.#byeSent) return;
    if (this.#mayOvertake(entries)) {
      // Small lines are not stuck behind a blob's chunks in other threads.
      for (const entry of entries) this.#writeLine(entry, this.#lineOf(entry));
      return;
    }
    this.#hold(entries);
    this.#chain(() => this.#writeEntries(entries));
  }

  /**
   * True when `entries` (msgs and states) may be written before the lines
   * queued ahead of them (a blob's chunks): none is in a thread with lines
   * queued, and no grant or introduction is queued. Order within a thread
   * is kept (the remote's seen and the cumulative acks count on it), and
   * grants and introductions are never overtaken (a later ack drops them).
   */
  #mayOvertake(entries: OutboxEntry[]): boolean {
    if (this.#queuedThreads.size === 0 || this.#queuedBarriers > 0) {
      return false;
    }
    if (this.#listing) return false;
    return entries.every((e) =>
      (e.t === "msg" || e.t === "state") && e.th !== undefined &&
      !this.#queuedThreads.has(e.th)
    );
  }

  /** Counts entries handed to the output chain. */
  #hold(entries: OutboxEntry[]): void {
    for (const e of entries) {
      if (BARRIERS.has(e.t)) this.#queuedBarriers++;
      const th = e.th ?? "";
      this.#queuedThreads.set(th, (this.#queuedThreads.get(th) ?? 0) + 1);
    }
  }

  /** Uncounts one entry of the output chain (written or skipped). */
  #release(e: OutboxEntry): void {
    if (BARRIERS.has(e.t)) this.#queuedBarriers--;
    const th = e.th ?? "";
    const n = (this.#queuedThreads.get(th) ?? 1) - 1;
    if (n > 0) this.#queuedThreads.set(th, n);
    else this.#queuedThreads.delete(th);
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
    this.#out = this.#out.then(task).catch((error) => {
      this.#fail("internal", errorText(error));
    });
  }

  // ---- output ----

  /** Queues one line; returns the bytes queued (0 when nothing was sent). */
  #send(message: Obj): number {
    if (this.#done || this.#byeSent || this.#t.closed) return 0;
    let frame: Uint8Array;
    try {
      frame = encodeLine(message);
    } catch (error) {
      // Our own line too large or not JSON: a bug upstream, not the peer's.
      this.#o.onLine?.(
        this,
        "out",
        `{"t":"${message.t}"} not sent: ${errorText(error)}`,
      );
      return 0;
    }
    this.#o.onLine?.(
      this,
      "out",
      decoder.decode(frame.subarray(0, frame.length - 1)),
      message,
    );
    return this.#queueFrame(frame);
  }

  /** Queues an encoded line; `written` runs once the socket is done with it. */
  #queueFrame(frame: Uint8Array, written?: () => void): number {
    const size = frame.length;
    // A queued line costs about 1 KiB of bookkeeping whatever its size, so
    // small ones count as that much, against the window and the bound.
    const held = Math.max(size, MIN_LINE_COST);
    this.#unwrittenBytes += held;
    this.#t.write(frame).catch((error) => {
      this.#event({ type: "END", reason: `write failed: ${errorText(error)}` });
    }).finally(() => {
      written?.();
      this.#lastWritten = performance.now();
      this.#unwrittenBytes -= held;
      for (const wake of this.#writeWaiters.splice(0)) wake();
    });
    this.#checkUnsent();
    return size;
  }

  /**
   * A remote that does not read must not make us hold its bytes forever:
   * over the bound while nothing could be written for a while (a burst of
   * our own to a remote that reads is let through), or over four times it.
   */
  #checkUnsent(): void {
    const max = this.#o.maxUnsentBytes ?? DEFAULT_MAX_UNSENT_BYTES;
    if (this.#unwrittenBytes <= max) return;
    const stalled = performance.now() - this.#lastWritten > UNSENT_STALL_MS;
    if (!stalled && this.#unwrittenBytes <= 4 * max) return;
    this.#t.close(); // what is queued is dropped; the outbox keeps its lines
    this.#event({
      type: "END",
      reason: `the peer is not reading: over ${max} bytes unsent`,
    });
  }

  /**
   * Resolves once the bytes queued on the socket are under the window
   * (kept under half the unsent bound, so outbox lines never trip it).
   */
  async #writeRoom(): Promise<void> {
    const window = Math.min(
      WRITE_AHEAD_BYTES,
      (this.#o.maxUnsentBytes ?? DEFAULT_MAX_UNSENT_BYTES) / 2,
    );
    while (this.#unwrittenBytes >= window && !this.#t.closed) {
      await new Promise<void>((wake) => this.#writeWaiters.push(wake));
    }
  }

  #sendHello(): void {
    const hello: Obj = {
      t: "hello",
      id: this.#o.store.nextId(),
      ts: timestamp(),
      v: PROTOCOL_VERSION,
      key: this.#o.signer.key,
      nonce: randomNonce(32),
      caps: this.#o.caps ?? ["chat"],
    };
    if (this.#o.name !== undefined) hello.name = this.#o.name;
    if (this.#o.about !== undefined) hello.about = this.#o.about;
    if (this.#o.addr !== undefined) hello.addr = this.#o.addr;
    const shares = typeof this.#o.shares === "function"
      ? this.#o.shares()
      : this.#o.shares;
    if (shares && shares.length > 0) hello.shares = [...shares];
    const frame = encodeLine(hello);
    // The transcript covers the exact bytes, without the newline.
    this.#myHello = frame.subarray(0, frame.length - 1);
    this.#o.onLine?.(this, "out", decoder.decode(this.#myHello));
    this.#t.write(frame).catch((error) => {
      this.#event({ type: "END", reason: `write failed: ${errorText(error)}` });
    });
  }

  async #sendAuth(): Promise<void> {
    const sig = await this.#o.signer.sign(
      authTranscript(this.#myHello!, this.#peerHello!),
    );
    const auth: Obj = {
      t: "auth",
      id: this.#o.store.nextId(),
      ts: timestamp(),
      sig: encodeBase64Url(sig),
    };
    let grants: Grant[] | undefined;
    try {
      grants = typeof this.#o.grants === "function"
        ? await this.#o.grants(this.#peer!)
        : this.#o.grants;
    } catch {
      grants = undefined; // choosing grants failed: present none
    }
    if (grants?.length) auth.grants = grants;
    this.#send(auth);
  }

  async #sendResume(): Promise<void> {
    const seen = await this.#o.store.seen(this.#peer!.key);
    this.#send({
      t: "resume",
      id: this.#o.store.nextId(),
      ts: timestamp(),
      seen,
    });
  }

  async #replay(): Promise<void> {
    // While listing, and until the listed entries count as queued, nothing
    // may overtake them: a later line of their thread written first would
    // move the remote's seen past them.
    this.#listing = true;
    let entries: OutboxEntry[];
    try {
      entries = await this.#o.store.replay(
        this.#peer!.key,
        this.#theirSeen,
        (e) => {
          // Lines at or below their seen are not replayed (SPEC 9.5): they
          // have them (their ack was lost with a crash); waiters hear it now.
          if (ACKED.has(e.t)) {
            this.#o.onAck?.(
              this,
              e.th === undefined ? { re: e.id } : { re: e.id, th: e.th },
            );
          }
        },
      );
      this.#hold(entries);
    } finally {
      this.#listing = false;
    }
    await this.#writeEntries(entries);
  }

  async #writeEntries(entries: OutboxEntry[]): Promise<void> {
    for (const entry of entries) {
      try {
        await this.#writeRoom();
        if (this.#done || this.#byeSent) return;
        if (this.#written.has(entry.id)) continue;
        let line: Obj;
        if (entry.chunk) {
          try {
            // Built in a reused buffer, handed back once written.
            const frame = await (this.#frames ??= new ChunkFramer()).frame(
              entry,
            );
            this.#writeFrame(entry, frame);
            continue;
          } catch (error) {
            // The spooled file is gone: nothing to send; the blob layer decides.
            this.#o.onLine?.(
              this,
              "out",
              `chunk ${entry.id} not sent: ${errorText(error)}`,
            );
            continue;
          }
        } else line = this.#lineOf(entry);
        this.#writeLine(entry, line);
      } finally {
        this.#release(entry);
      }
    }
  }

  /** The wire line of an outbox entry without a chunk. */
  #lineOf(entry: OutboxEntry): Obj {
    const { t, ...rest } = entry.fields;
    return { t, id: entry.id, ts: entry.ts, ...rest };
  }

  #noteWritten(id: string): void {
    this.#written.add(id);
    if (this.#written.size > WRITTEN_IDS_KEPT) {
      // Forgetting one costs at most a duplicate, which the remote acks.
      this.#written.delete(this.#written.values().next().value!);
    }
  }

  /** Writes an entry's line unless already written on this connection. */
  #writeLine(entry: OutboxEntry, line: Obj): void {
    if (this.#written.has(entry.id)) return;
    this.#noteWritten(entry.id);
    this.#send(line);
    this.#o.onSent?.(this, entry);
  }

  /** Writes a chunk's prebuilt frame unless already written (then it goes back). */
  #writeFrame(entry: OutboxEntry, frame: ChunkFrame): void {
    if (
      this.#written.has(entry.id) || this.#done || this.#byeSent ||
      this.#t.closed
    ) {
      frame.release();
      if (this.#done) this.#frames?.close();
      return;
    }
    this.#noteWritten(entry.id);
    this.#o.onLine?.(this, "out", frame.raw, frame.line);
    this.#queueFrame(frame.bytes, frame.release);
    this.#o.onSent?.(this, entry);
  }

  #sendPing(): void {
    const id = this.#o.store.nextId();
    this.#lastPing = { id, at: Date.now() };
    this.#send({ t: "ping", id, ts: timestamp() });
  }

  #sendBye(reason?: string): void {
    const bye: Obj = { t: "bye", id: this.#o.store.nextId(), ts: timestamp() };
    if (reason !== undefined) bye.reason = reason;
    this.#send(bye);
    this.#byeSent = true;
  }

  #sendErr(params: SendErrParams): void {
    const err: Obj = {
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
    // Let an err or bye just queued reach the peer, but not forever.
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([
      this.#t.flush().catch(() => {}),
      new Promise<void>((resolve) => timer = setTimeout(resolve, DRAIN_MS)),
    ]);
    clearTimeout(timer);
    this.#t.close();
    this.#frames?.close();
    if (!this.#opened) this.#establishedD.reject(new Error(reason));
    this.#closedD.resolve(reason);
    this.#o.onClosed?.(this, reason);
  }

  // ---- input ----

  async #onData(chunk: Uint8Array): Promise<void> {
    if (this.#done) return;
    const events = this.#reader.push(chunk);
    if (events.length === 0) return;
    // Only liveness (open) listens: a handshake line is not worth a macrostep.
    if (this.#opened) this.#event({ type: "RECEIVED" });
    const batch: Pending[] = [];
    let hold: Promise<void> | undefined;
    try {
      for (const ev of events) {
        if (this.#done || this.actor.getSnapshot().status !== "active") break;
        if (ev.kind === "too_large") {
          await this.#commit(batch);
          this.#fail(
            "too_large",
            `line of at least ${ev.size} bytes exceeds 1 MiB`,
          );
          break;
        }
        // A chunk line is split from its data without a line-sized string.
        const split = splitChunkLine(ev.bytes);
        const parsed = split
          ? { ok: true as const, message: split.message, raw: split.raw }
          : parseLine(ev.bytes);
        if (parsed.ok) {
          this.#o.onLine?.(this, "in", parsed.raw, parsed.message);
        } else this.#o.onLine?.(this, "in", lossy.decode(ev.bytes));
        if (!parsed.ok) {
          await this.#commit(batch);
          this.#fail("bad_frame", parsed.detail);
          break;
        }
        const message = parsed.message;
        const state = this.state;
        if (state === "hello" || state === "auth") {
          await this.#handshakeLine(state, message, ev.bytes);
          continue;
        }
        if (state === "closing") {
          // After our bye we send nothing, so we do not take content either:
          // unacked, it is replayed on the next connection.
          if (message.t === "bye") {
            this.#o.onBye?.(this, reasonOf(message));
            this.#event({ type: "PEER_BYE" });
          } else if (message.t === "err") this.#peerErr(message);
          continue;
        }
        const t = message.t;
        // A chunk's data is decoded here, once: that checks it faster than
        // the schema's pattern over ~350 KB, and the sink takes the bytes.
        const bytes = t === "chunk"
          ? split?.bytes ?? decodedChunk(message)
          : undefined;
        const valid = validateMessage(
          bytes ? { ...message, data: "" } : message,
        );
        if (!valid.ok) {
          if (EXTENSIONS.has(t) || !isKnown(t)) continue;
          await this.#commit(batch);
          this.#fail(
            "bad_frame",
            `invalid ${t}: ${valid.errors[0] ?? "schema"}`,
            idOf(message),
          );
          break;
        }
        // A chunk's data is held once, decoded: its text (in the line and
        // in the parsed message) goes now, not when its commit is done.
        if (bytes) message.data = "";
        const raw = bytes ? JSON.stringify(message) : parsed.raw;
        const received: ReceivedLine = {
          message: message as unknown as Message,
          raw,
          ...(bytes ? { bytes } : {}),
        };
        if (t === "chunk" && this.#o.onChunk) {
          hold = this.#o.onChunk(this, received) ?? hold;
        }
        if (COMMITTED.has(t)) {
          batch.push({
            id: message.id as string,
            t,
            th: typeof message.th === "string" ? message.th : undefined,
            message,
            raw,
            received,
            // A chunk whose bytes onChunk took holds only its line.
            size: bytes && !received.bytes ? raw.length : ev.bytes.length,
          });
          continue;
        }
        switch (t) {
          case "ack": {
            const re = message.re as string;
            const th = typeof message.th === "string" ? message.th : undefined;
            // The store drops the entry from its index at once (inOutbox is
            // false from here) and commits the delete with the next group:
            // the receiver has the line durably, so the ack is reported now.
            // Should we die before that commit, the line is replayed and the
            // receiver acks it again as a duplicate.
            this.#o.store.acked(this.#peer!.key, th, re).catch((error) =>
              this.#fail("internal", `storage failed: ${errorText(error)}`)
            );
            this.#o.onAck?.(this, th === undefined ? { re } : { re, th });
            break;
          }
          case "ping":
            this.#send({
              t: "pong",
              id: this.#o.store.nextId(),
              ts: timestamp(),
              re: message.id,
            });
            break;
          case "pong":
            if (this.#lastPing && message.re === this.#lastPing.id) {
              this.#rtt = Date.now() - this.#lastPing.at;
            }
            break;
          case "resume":
            await this.#commit(batch);
            if (this.state === "resume") {
              this.#theirSeen = message.seen as Record<string, string>;
              this.#event({ type: "RESUME" });
            }
            break;
          case "bye":
            await this.#commit(batch);
            this.#o.onBye?.(this, reasonOf(message));
            this.#event({ type: "PEER_BYE", reason: reasonOf(message) });
            break;
          case "err":
            await this.#commit(batch);
            this.#o.onControl?.(this, received);
            this.#peerErr(message);
            break;
          default:
            if (CONTROL.has(t)) this.#o.onControl?.(this, received);
            // hello, auth again and unknown types: ignored (SPEC 5).
        }
      }
      void this.#commit(batch);
      await hold;
      // Reading goes on while commits run, up to a bound.
      while (
        this.#uncommittedBytes > MAX_UNCOMMITTED_BYTES && !this.#done &&
        !this.#storageFailed
      ) {
        await new Promise<void>((wake) => this.#commitWaiters.push(wake));
      }
    } catch (error) {
      this.#fail("internal", `storage failed: ${errorText(error)}`);
    }
  }

  #peerErr(message: Obj): void {
    this.#event({
      type: "PEER_ERR",
      code: String(message.code),
      detail: typeof message.detail === "string" ? message.detail : undefined,
    });
  }

  /**
   * Queues `batch` (emptied) for the group commit and resolves once it and
   * every earlier line are committed, acked and delivered. One pump hands
   * the queued lines to `beforeCommit` and `store.receive`, all that queued
   * up since its last turn at once, without waiting for the commit before:
   * the store's group commit takes whatever arrived while its last commit
   * ran, and `beforeCommit` (a chunk's bytes) syncs once per turn. Acks and
   * delivery follow the commits in order. A failure closes the connection;
   * later lines are neither committed nor acked.
   */
  #commit(
    batch: Pending[],
  ): Promise<void> {
    if (batch.length > 0) {
      for (const line of batch) this.#uncommittedBytes += line.size;
      const now = this.#overtaking(batch);
      if (now.length > 0) this.#handOver(now);
      this.#uncommitted.push(...batch.splice(0));
      this.#startPump();
    }
    return this.#settled();
  }

  /**
   * While the pump waits for `beforeCommit` (a chunk batch's sync), the
   * lines of `batch` in other threads (a small msg beside a blob) go to the
   * store at once instead of after that sync: taken out of `batch` and
   * returned. Order within a thread is kept: a thread with lines syncing,
   * queued, or chunks in `batch` waits its turn.
   */
  #overtaking(batch: Pending[]): Pending[] {
    if (this.#syncing.size === 0 || this.#storageFailed) return [];
    const waiting = new Set(this.#syncing);
    for (const l of this.#uncommitted) waiting.add(l.th ?? "");
    for (const l of batch) if (l.t === "chunk") waiting.add(l.th ?? "");
    const now = batch.filter((l) => !waiting.has(l.th ?? ""));
    if (now.length === 0) return now;
    const rest = batch.filter((l) => waiting.has(l.th ?? ""));
    batch.splice(0, batch.length, ...rest);
    return now;
  }

  #startPump(): void {
    this.#pumping ??= this.#pump().finally(() => {
      this.#pumping = undefined;
      // Lines queued after the pump's last look.
      if (this.#uncommitted.length > 0) this.#startPump();
    });
  }

  /** Resolves once every queued line is committed, acked and delivered. */
  async #settled(): Promise<void> {
    while (this.#pumping) await this.#pumping;
    await this.#committed;
  }

  async #pump(): Promise<void> {
    while (this.#uncommitted.length > 0 && !this.#storageFailed) {
      const lines = this.#uncommitted.splice(0);
      // Lines of threads without chunks here go at once; the chunks, and
      // the lines of their threads (a blob's msg), after beforeCommit made
      // the chunk bytes durable. Order within a thread is kept.
      const synced = new Set<string>();
      for (const l of lines) if (l.t === "chunk") synced.add(l.th ?? "");
      const early = lines.filter((l) => !synced.has(l.th ?? ""));
      const late = early.length === lines.length
        ? []
        : lines.filter((l) => synced.has(l.th ?? ""));
      try {
        if (early.length > 0) this.#handOver(early);
        if (late.length > 0) {
          for (const l of late) this.#syncing.add(l.th ?? "");
          const also = await this.#o.beforeCommit?.(
            this,
            late.map((l) => l.received),
          ).finally(() => this.#syncing.clear());
          if (this.#storageFailed) throw new Error("an earlier commit failed");
          this.#handOver(late, also ?? undefined);
        }
      } catch (error) {
        this.#storageFailed = true;
        for (const line of late) this.#uncommittedBytes -= line.size;
        this.#fail("internal", `storage failed: ${errorText(error)}`);
        break;
      }
    }
    if (this.#storageFailed) {
      for (const line of this.#uncommitted.splice(0)) {
        this.#uncommittedBytes -= line.size;
      }
      for (const wake of this.#commitWaiters.splice(0)) wake();
    }
  }

  /** Gives `lines` to the store's group commit; acks follow in order. */
  #handOver(lines: Pending[], also?: ReceiveExtras): void {
    let bytes = 0;
    for (const line of lines) bytes += line.size;
    const outcomes = this.#o.store.receive(
      this.#peer!.key,
      lines.map(({ id, t, th, message, raw }) => ({ id, t, th, message, raw })),
      also,
    );
    outcomes.catch(() => {}); // handled in order below
    this.#committed = this.#committed.then(async () => {
      const out = await outcomes;
      if (!this.#storageFailed) this.#ackAndDeliver(lines, out);
    }).catch((error) => {
      this.#storageFailed = true;
      this.#fail("internal", `storage failed: ${errorText(error)}`);
    }).finally(() => {
      this.#uncommittedBytes -= bytes;
      for (const wake of this.#commitWaiters.splice(0)) wake();
    });
  }

  /** Acks the committed lines, then delivers the new ones. */
  #ackAndDeliver(
    lines: Pending[],
    outcomes: ReceiveOutcome[],
  ): void {
    const fresh: ReceivedLine[] = [];
    for (let i = 0; i < lines.length; i++) {
      const line = lines[i];
      if (ACKED.has(line.t)) {
        this.#send({
          t: "ack",
          id: this.#o.store.nextId(),
          ts: timestamp(),
          th: line.th,
          re: line.id,
        });
      }
      const outcome = outcomes[i];
      if (outcome?.duplicate) continue;
      fresh.push(
        outcome?.seq === undefined
          ? line.received
          : { ...line.received, seq: outcome.seq },
      );
    }
    if (fresh.length) this.#o.onDeliver?.(this, fresh);
  }

  async #handshakeLine(
    state: string,
    message: Obj,
    bytes: Uint8Array,
  ): Promise<void> {
    const t = message.t;
    if (t === "err") return this.#peerErr(message);
    if (t === "bye") return this.#event({ type: "PEER_BYE" });
    if (state === "hello" && t === "hello") {
      return this.#onHello(message, bytes);
    }
    if (state === "auth" && t === "auth") return await this.#onAuth(message);
    if (t === "hello") {
      return this.#fail("bad_frame", "a second hello", idOf(message));
    }
    if (t === "auth" || PRE_AUTH_FORBIDDEN.has(t)) {
      return this.#fail("auth", `${t} before auth completed`, idOf(message));
    }
    // ping, pong, extensions and unknown types before auth: ignored.
  }

  #onHello(message: Obj, bytes: Uint8Array): void {
    const id = idOf(message);
    if (message.v !== PROTOCOL_VERSION && message.v !== undefined) {
      return this.#fail(
        "version",
        `this peer speaks awp v${PROTOCOL_VERSION}`,
        id,
      );
    }
    if (typeof message.key === "string" && !isKey(message.key)) {
      return this.#fail("auth", "hello key is not an ed25519 key", id);
    }
    const valid = validateMessage(message);
    if (!valid.ok) {
      return this.#fail(
        "bad_frame",
        `invalid hello: ${valid.errors[0] ?? "schema"}`,
        id,
      );
    }
    if (message.key === this.#o.signer.key) {
      return this.#fail("auth", "hello carries our own key", id);
    }
    this.#peerHello = bytes;
    const caps = Array.isArray(message.caps)
      ? message.caps.filter((c): c is string => typeof c === "string")
      : [];
    this.#peer = {
      key: message.key as string,
      caps,
      nonce: message.nonce as string,
      grants: [],
      ...(typeof message.name === "string" ? { name: message.name } : {}),
      ...(typeof message.about === "string" ? { about: message.about } : {}),
      ...(typeof message.addr === "string" ? { addr: message.addr } : {}),
    };
    this.#event({ type: "HELLO_OK" });
  }

  async #onAuth(message: Obj): Promise<void> {
    const id = idOf(message);
    if (typeof message.sig !== "string") {
      return this.#fail("auth", "auth has no signature", id);
    }
    let sig: Uint8Array;
    try {
      sig = decodeBase64(message.sig);
    } catch {
      return this.#fail("auth", "auth signature is not base64url", id);
    }
    const ok = await verify(
      this.#peer!.key,
      authTranscript(this.#peerHello!, this.#myHello!),
      sig,
    );
    if (!ok) return this.#fail("auth", "auth signature does not verify", id);
    const valid = validateMessage(message);
    if (!valid.ok) {
      return this.#fail(
        "bad_frame",
        `invalid auth: ${valid.errors[0] ?? "schema"}`,
        id,
      );
    }
    if (Array.isArray(message.grants)) {
      this.#peer!.grants = message.grants as Grant[];
    }
    const refusal = await this.#o.admit?.(this.#peer!, {
      dialed: this.#o.dialed,
    });
    if (refusal !== undefined) return this.#fail("auth", refusal, id);
    // The admission may have awaited: the connection may have ended since.
    if (this.state !== "auth") return;
    this.#authed = true;
    this.#t.authenticated?.(); // out of the listener's pre-auth bounds
    await this.#o.onAuthenticated?.(this);
    if (this.state === "auth") this.#event({ type: "AUTH_OK" });
  }
}

/**
 * A chunk's data decoded, when it is standard base64 (what the schema's
 * pattern allows and more: the padding is right too); else undefined, and
 * the schema decides.
 */
function decodedChunk(message: Obj): Uint8Array | undefined {
  const data = message.data;
  if (typeof data !== "string" || data.includes("-") || data.includes("_")) {
    return undefined;
  }
  try {
    return decodeBase64(data);
  } catch {
    return undefined;
  }
}

function reasonOf(message: Obj): string | undefined {
  return typeof message.reason === "string" ? message.reason : undefined;
}

function idOf(message: Obj): string | undefined {
  return typeof message.id === "string" ? message.id : undefined;
}

const KNOWN: ReadonlySet<string> = new Set<string>(MESSAGE_TYPES);

function isKnown(t: string): boolean {
  return KNOWN.has(t);
}
