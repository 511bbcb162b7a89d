/**
 * The stdin/stdout driver: a {@link Peer} whose commands come from stdin and
 * whose events go to stdout, one JSON object per line each way, the same
 * contract as the Python SDK's `python -m awp` and the TypeScript SDK's
 * `awp-peer` (commands send, state, blob, grant, bye, quit; events
 * identity, listening, connected, recv, sent, acked, blob, disconnected,
 * error). It runs its own Peer in-process with `--state DIR` as its home;
 * closing stdin does not stop it.
 *
 * @module
 */

import { raiseFdLimit } from "../net/fd_limit.ts";
import { bind } from "../net/transport.ts";
import type { Peer } from "../peer/peer.ts";
import type { SendOptions } from "../peer/peer_sender.ts";
import { readTlsFiles, type TlsTexts } from "./tls_files.ts";
import type { PeerEvent } from "../peer/peer_events.ts";
import { StoreUnavailableError } from "../storage/open_store.ts";
import { parseAddress } from "../wire/address.ts";
import type { Part } from "../wire/types.ts";
import { type FlagSpec, parseArgs, UsageError } from "./args.ts";
import { checkStoreUrl } from "./daemon_flags.ts";
import { openPeer } from "./open_peer.ts";
import { LineWriter } from "./line_writer.ts";
import { SentBeforeAcked } from "./sent_before_acked.ts";
import { kvAvailable, reexecWithKv } from "./self_command.ts";
import { errorText } from "../wire/error_text.ts";

/**
 * The usage text of `awp driver`.
 *
 * @example
 * ```ts
 * import { DRIVER_USAGE } from "./driver.ts";
 * console.log(DRIVER_USAGE.startsWith("usage: awp driver")); // true
 * ```
 */
/** Received lines that `recv` does not repeat (see `#onEvent`). */
const LINE_RECV_SKIP: ReadonlySet<string> = new Set([
  "msg",
  "state",
  "ack",
  "ping",
  "pong",
]);

export const DRIVER_USAGE =
  `usage: awp driver --state DIR [--name N] [--ping-interval S] [--max-blob B] [--trust KEY] [--about T] [--store URL] [--after SEQ] [--ca FILE] [--cert FILE --key FILE] [-v] listen ADDR | connect ADDR

A peer driven over stdin/stdout, one JSON object per line each way.
commands: send {th,text,subject?,re?,parts?}, state {th,state,note?}, blob {th,path,text?},
          grant {sub,caps,ttl}, bye {reason?}, quit, memory; any may add "peer":"ed25519:..."
events:   identity, listening, connected, recv, sent, acked, blob, disconnected, error, memory
recv of a msg or state carries "seq"; after a restart (even kill -9) the driver
first repeats every msg/state after the last seq it wrote out (at least once:
dedup by seq), or after --after SEQ, the last one the application handled.
--store URL keeps the state in a remote Deno KV through KV Connect (https://...,
token in DENO_KV_ACCESS_TOKEN); spool and blobs stay in --state DIR.
ADDR may be ws://HOST:PORT/path or wss://...: --cert/--key (PEM) serve wss,
--ca FILE trusts a private CA when dialing wss.`;

const FLAGS: FlagSpec[] = [
  { name: "state", type: "string" },
  { name: "name", type: "string" },
  { name: "ping-interval", type: "string" },
  { name: "max-blob", type: "string" },
  { name: "trust", type: "list" },
  { name: "about", type: "string" },
  { name: "verbose", short: "v", type: "boolean" },
  { name: "store", type: "string" },
  { name: "ca", type: "list" },
  { name: "cert", type: "string" },
  { name: "key", type: "string" },
  { name: "after", type: "string" },
];

/** Store meta: the seq of the last recv event written to stdout. */
/** Commands run in order through the peer (the rest are answered at once). */
const QUEUED_COMMANDS: ReadonlySet<unknown> = new Set([
  "send",
  "state",
  "blob",
  "grant",
  "bye",
]);

const CURSOR_META = "driver_cursor";
/**
 * How soon after a recv the cursor is saved: one write per second at most,
 * not one in the way of every few commits (a kill -9 repeats at most that
 * second's recv events, which the contract allows: dedup by seq).
 */
const CURSOR_SAVE_MS = 1_000;

/**
 * Sends started and not yet durable at most; the commands after them wait
 * in the queue, parsed but not yet sends. About two Deno KV commits of
 * msgs: one in flight, the next built meanwhile, so commits stay full; a
 * burst of thousands then holds that many sends' objects, not all of them
 * (in flight together they outlive V8's young generation: bench/README.md,
 * "burst2").
 */
const SENDS_IN_FLIGHT = 1024;

/** Bytes of stdin read at a time. */
const STDIN_READ_BYTES = 64 * 1024;

/** One command read from stdin. */
export interface DriverCommand {
  cmd: string;
  peer?: string;
  [field: string]: unknown;
}

const encoder = new TextEncoder();

function writeLine(
  stream: { writeSync(p: Uint8Array): number },
  text: string,
): void {
  const bytes = encoder.encode(text + "\n");
  let off = 0;
  while (off < bytes.length) off += stream.writeSync(bytes.subarray(off));
}

function positiveNumber(
  text: string | undefined,
  flag: string,
): number | undefined {
  if (text === undefined) return undefined;
  const n = Number(text);
  if (!Number.isFinite(n) || n < 0) {
    throw new UsageError(`bad ${flag} "${text}": give a non-negative number`);
  }
  return n;
}

/**
 * Runs the driver with `args` (after `driver`) until `quit` or a signal;
 * resolves with the exit code (2 on a usage error, 1 when it cannot start).
 *
 * @example
 * ```ts ignore
 * import { driverMain } from "./driver.ts";
 * Deno.exit(await driverMain(["--state", "/tmp/d", "listen", "tcp:127.0.0.1:0"]));
 * ```
 */
export async function driverMain(args: string[]): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs(args, FLAGS);
    if (parsed.bool("help")) {
      writeLine(Deno.stdout, DRIVER_USAGE);
      return 0;
    }
    const [mode, addr] = parsed.positionals;
    if (mode !== "listen" && mode !== "connect") {
      throw new UsageError("give listen ADDR or connect ADDR");
    }
    if (!addr) throw new UsageError(`${mode} needs an address`);
    parseAddress(addr);
    if (!parsed.string("state")) {
      throw new UsageError("--state DIR is required");
    }
    const store = parsed.string("store");
    if (store !== undefined) checkStoreUrl(store);
  } catch (error) {
    writeLine(Deno.stderr, `awp: ${errorText(error)}`);
    return 2;
  }
  const reexec = await reexecWithKv(["driver", ...args]);
  if (reexec !== undefined) return reexec;
  if (!kvAvailable()) {
    writeLine(
      Deno.stderr,
      "awp: durable storage needs Deno KV: run with --unstable-kv",
    );
    return 1;
  }
  let pingS: number | undefined;
  let maxBlob: number | undefined;
  let tls: TlsTexts;
  let after: number | undefined;
  try {
    tls = await readTlsFiles({
      ca: parsed.list("ca"),
      cert: parsed.string("cert"),
      key: parsed.string("key"),
    });
    pingS = positiveNumber(parsed.string("ping-interval"), "--ping-interval");
    maxBlob = positiveNumber(parsed.string("max-blob"), "--max-blob");
    after = positiveNumber(parsed.string("after"), "--after");
    if (after !== undefined && !Number.isSafeInteger(after)) {
      throw new UsageError(`bad --after "${after}": give a seq (an integer)`);
    }
  } catch (error) {
    writeLine(Deno.stderr, `awp: ${errorText(error)}`);
    return 2;
  }
  const driver = new Driver({
    home: parsed.string("state")!,
    name: parsed.string("name"),
    about: parsed.string("about"),
    pingIntervalMs: pingS === undefined ? undefined : Math.round(pingS * 1000),
    maxBlobBytes: maxBlob === undefined ? undefined : Math.floor(maxBlob),
    verbose: parsed.bool("verbose"),
    trust: parsed.list("trust"),
    store: parsed.string("store"),
    tls,
    ...(after !== undefined ? { after } : {}),
  });
  const [mode, addr] = parsed.positionals as ["listen" | "connect", string];
  return await driver.run(mode, addr);
}

interface DriverOptions {
  home: string;
  name?: string;
  about?: string;
  pingIntervalMs?: number;
  maxBlobBytes?: number;
  verbose: boolean;
  trust: string[];
  store?: string;
  tls: TlsTexts;
  /** Replay msg/state events after this seq (default: the saved cursor). */
  after?: number;
}

class Driver {
  readonly #o: DriverOptions;
  #peer!: Peer;
  /** Peers connected now. */
  #connected = new Set<string>();
  /** The peers each thread is with (normally one), as seen here. */
  #threadPeers = new Map<string, Set<string>>();
  /** The stored threads, loaded into `#threadPeers` once, on first need. */
  #threadsLoaded: Promise<void> | undefined;
  /** `#threadsLoaded` has settled: a thread's peer is known at once. */
  #threadsReady = false;
  /** Commands that name no peer, given while none could be chosen. */
  #pending: DriverCommand[] = [];
  /**
   * Commands waiting to run, in order, from `#commandsHead` on: a plain
   * queue, not a promise chain, so a burst of thousands of commands holds
   * one slot each (no promise or closure per command while it waits).
   */
  #commands: Array<DriverCommand | undefined> = [];
  #commandsHead = 0;
  /** `#runCommands` is working through `#commands`. */
  #running = false;
  /** Sends started whose `sent` (or error) is not written yet. */
  #sendsInFlight = 0;
  /** Wakes `#runCommands` waiting for a send to finish. */
  #sendRoom: (() => void) | undefined;
  #done!: (code: number) => void;
  /** The seq of the last msg/state recv written out; saved lazily. */
  #cursor = 0;
  #savedCursor = 0;
  #cursorTimer: ReturnType<typeof setTimeout> | undefined;
  /** `acked` after the `sent` of the same line. */
  #order = new SentBeforeAcked((id) => this.#emit({ event: "acked", id }));
  /** Event lines to stdout, a burst's in one write. */
  #out = new LineWriter(Deno.stdout, (seq) => this.#wrote(seq));

  constructor(options: DriverOptions) {
    this.#o = options;
  }

  /**
   * Writes an event line. `seq` (a recv's log position) moves the cursor
   * once the line is written, not before.
   */
  #emit(event: Record<string, unknown>, seq?: number): void {
    const line = JSON.stringify(event);
    this.#out.push(line, seq);
    if (this.#o.verbose) writeLine(Deno.stderr, `event ${line.slice(0, 300)}`);
  }

  #error(detail: string): void {
    this.#emit({ event: "error", detail });
  }

  async run(mode: "listen" | "connect", addr: string): Promise<number> {
    raiseFdLimit(); // an fd shortage is survived, but better avoided
    // Bound before the store opens and the handshake warms up: a dialer
    // probing a restarted listener connects meanwhile and is answered once
    // we are ready, instead of being refused until its next probe. A bind
    // that fails here fails again, reported, in `listen` below.
    const bound = mode === "listen"
      ? await bind(addr).catch(() => undefined)
      : undefined;
    try {
      this.#peer = await openPeer({
        home: this.#o.home,
        // recv reports every line received, chunks and grants included,
        // but msg, state (their own events), ack, ping and pong.
        lineEvents: (dir, t) => dir === "in" && !LINE_RECV_SKIP.has(t),
        ...(this.#o.name !== undefined ? { name: this.#o.name } : {}),
        ...(this.#o.about !== undefined ? { about: this.#o.about } : {}),
        ...(this.#o.trust.length ? { trust: this.#o.trust } : {}),
        ...(this.#o.maxBlobBytes !== undefined
          ? { maxBlobBytes: this.#o.maxBlobBytes }
          : {}),
        ...(this.#o.pingIntervalMs !== undefined
          ? { timeouts: { pingInterval: this.#o.pingIntervalMs } }
          : {}),
        ...this.#o.tls,
      }, this.#o.store);
    } catch (error) {
      writeLine(
        Deno.stderr,
        `awp: ${
          error instanceof StoreUnavailableError
            ? error.message
            : `cannot open ${this.#o.store ?? this.#o.home}: ${
              errorText(error)
            }`
        }`,
      );
      bound?.close();
      return 1;
    }
    const finished = new Promise<number>((r) => this.#done = r);
    // Where the last run stopped writing recv events: every msg and state
    // after it is written again (a kill may have come between the ack and
    // the event).
    this.#cursor = this.#o.after ??
      await this.#peer.store.getMeta<number>(CURSOR_META).catch(() =>
        undefined
      ) ?? 0;
    this.#savedCursor = this.#cursor;
    // The pump, signals and stdin are set up first (reading back events
    // since the cursor is store work the dial would wait behind), then the
    // dial goes out and runs while the identity line is written.
    const pump = this.#pump(this.#cursor);
    const onSignal = () => this.#done(0);
    Deno.addSignalListener("SIGINT", onSignal);
    Deno.addSignalListener("SIGTERM", onSignal);
    this.#readStdin();
    const stop = new AbortController();
    const connecting = mode === "connect"
      ? this.#connect(addr, stop.signal)
      : undefined;
    this.#emit({
      event: "identity",
      key: this.#peer.key,
      name: this.#o.name ?? null,
    });
    try {
      if (mode === "listen") {
        const real = await this.#peer.listen(bound ?? addr);
        this.#emit({ event: "listening", addr: real, key: this.#peer.key });
      } else {
        void finished.then(() => stop.abort());
        const failure = await connecting;
        if (failure) throw failure.error;
      }
    } catch (error) {
      bound?.close();
      this.#error(`${mode} ${addr}: ${errorText(error)}`);
      await this.#peer.close().catch(() => {});
      await this.#out.flush();
      return 1;
    }
    const code = await finished;
    Deno.removeSignalListener("SIGINT", onSignal);
    Deno.removeSignalListener("SIGTERM", onSignal);
    await this.#out.flush();
    await this.#saveCursor();
    await this.#peer.close().catch(() => {});
    await pump;
    await this.#out.flush();
    return code;
  }

  /**
   * Dials `addr` and never gives up on our own: a peer that is down
   * (restarting) is redialed until it answers, each failure an `error`
   * event. Resolves with the failure, if any, once settled (never rejects:
   * it is awaited later).
   */
  async #connect(
    addr: string,
    signal: AbortSignal,
  ): Promise<{ error: unknown } | undefined> {
    try {
      await this.#peer.connect(addr, { retry: true, keep: true, signal });
    } catch (error) {
      if (!signal.aborted) return { error };
    }
  }

  async #readStdin(): Promise<void> {
    const decoder = new TextDecoder();
    let buffer = "";
    try {
      // read() straight into one buffer: no stream machinery per command.
      const chunk = new Uint8Array(STDIN_READ_BYTES);
      for (let n; (n = await Deno.stdin.read(chunk)) !== null;) {
        buffer += decoder.decode(chunk.subarray(0, n), { stream: true });
        let nl: number;
        while ((nl = buffer.indexOf("\n")) !== -1) {
          const line = buffer.slice(0, nl).trim();
          buffer = buffer.slice(nl + 1);
          if (line !== "") this.#command(line);
        }
      }
      if (buffer.trim() !== "") this.#command(buffer.trim());
    } catch (error) {
      if (this.#o.verbose) writeLine(Deno.stderr, `stdin: ${errorText(error)}`);
    }
    // Closing stdin does not stop the peer.
  }

  #command(line: string): void {
    let cmd: DriverCommand;
    try {
      const value = JSON.parse(line);
      if (
        typeof value !== "object" || value === null ||
        typeof value.cmd !== "string"
      ) {
        throw new Error('a command is a JSON object with a string "cmd"');
      }
      cmd = value as DriverCommand;
    } catch (error) {
      this.#error(`bad command: ${errorText(error)}`);
      return;
    }
    if (this.#o.verbose) {
      writeLine(Deno.stderr, `command ${line.slice(0, 300)}`);
    }
    if (cmd.cmd === "quit") {
      // At once, without a bye: everything queued is already durable.
      void this.#out.flush().then(() => this.#saveCursor()).finally(() =>
        Deno.exit(0)
      );
      return;
    }
    if (cmd.cmd === "memory") {
      // For benchmarks: memory after a full GC when run with
      // --v8-flags=--expose-gc, else as it is.
      (globalThis as { gc?: () => void }).gc?.();
      this.#emit({ event: "memory", ...Deno.memoryUsage() });
      return;
    }
    if (!QUEUED_COMMANDS.has(cmd.cmd)) {
      this.#error(`unknown command "${cmd.cmd}"`);
      return;
    }
    this.#enqueue(cmd);
  }

  #noteThread(th: string, peer: string): void {
    let peers = this.#threadPeers.get(th);
    if (!peers) this.#threadPeers.set(th, peers = new Set());
    peers.add(peer);
  }

  /**
   * Whom a command goes to: its `peer`; else the peer of its thread (`th`,
   * or `re`'s thread is the same `th`); else the one connected peer.
   * Never "whoever connected last": a stranger must not get the app's
   * next line. Undefined: no peer yet, wait for one to connect.
   */
  async #target(cmd: DriverCommand): Promise<string | undefined> {
    if (typeof cmd.peer !== "string" && typeof cmd.th === "string") {
      this.#threadsLoaded ??= this.#peer.threads().then((list) => {
        for (const t of list) this.#noteThread(t.th, t.peer);
      }, () => {}).finally(() => this.#threadsReady = true);
      await this.#threadsLoaded;
    }
    return this.#targetNow(cmd);
  }

  /** {@link #target} once the stored threads are loaded (or not needed). */
  #targetNow(cmd: DriverCommand): string | undefined {
    if (typeof cmd.peer === "string") return cmd.peer;
    const th = typeof cmd.th === "string" ? cmd.th : undefined;
    if (th !== undefined) {
      const peers = this.#threadPeers.get(th);
      if (peers?.size === 1) return [...peers][0];
      if (peers && peers.size > 1) {
        throw new Error(
          `thread ${th} is with ${peers.size} peers: add "peer" to the command`,
        );
      }
    }
    if (this.#connected.size === 1) return [...this.#connected][0];
    if (this.#connected.size === 0) return undefined;
    throw new Error(
      `${this.#connected.size} peers are connected and the command names no known thread: add "peer"`,
    );
  }

  #enqueue(cmd: DriverCommand): void {
    this.#commands.push(cmd);
    if (!this.#running) void this.#runCommands();
  }

  /**
   * Runs the queued commands in order, each once the one before has
   * started (a send is not awaited: sends in flight share a commit).
   */
  async #runCommands(): Promise<void> {
    this.#running = true;
    try {
      while (this.#commandsHead < this.#commands.length) {
        if (
          this.#sendsInFlight >= SENDS_IN_FLIGHT &&
          this.#commands[this.#commandsHead]!.cmd === "send"
        ) {
          await new Promise<void>((wake) => this.#sendRoom = wake);
          continue;
        }
        const cmd = this.#commands[this.#commandsHead]!;
        this.#commands[this.#commandsHead++] = undefined;
        try {
          const started = this.#start(cmd);
          if (started !== undefined) await started;
        } catch (error) {
          this.#error(`${cmd.cmd}: ${errorText(error)}`);
        }
      }
    } finally {
      this.#commands = [];
      this.#commandsHead = 0;
      this.#running = false;
    }
  }

  /**
   * Starts `cmd`: a send to a peer known at once is queued here, without
   * awaiting anything; the rest go through {@link #execute}.
   */
  #start(cmd: DriverCommand): Promise<void> | undefined {
    if (
      cmd.cmd !== "send" ||
      !(this.#threadsReady || typeof cmd.peer === "string" ||
        typeof cmd.th !== "string")
    ) return this.#execute(cmd);
    const to = this.#targetNow(cmd);
    if (to === undefined) this.#pending.push(cmd); // sent once a peer connects
    else this.#send(cmd, to);
  }

  /** Queues a `send` to `to`; `sent` (or `error`) is written once durable. */
  #send(cmd: DriverCommand, to: string): void {
    const str = (name: string): string | undefined =>
      typeof cmd[name] === "string" ? cmd[name] as string : undefined;
    // Built field by field: no throwaway objects per command.
    const options: SendOptions = {};
    const th = str("th");
    if (th) options.thread = th;
    const subject = str("subject");
    if (subject) options.subject = subject;
    const re = str("re");
    if (re) options.re = re;
    if (Array.isArray(cmd.parts)) options.parts = cmd.parts as Part[];
    // Not awaited: the Peer keeps call order, and sends in flight together
    // share one storage commit. One callback pair per send, no chain.
    this.#order.begin();
    this.#sendsInFlight++;
    this.#peer.send(to, str("text") ?? "", options).then((sent) => {
      this.#sendDone();
      try {
        this.#noteThread(sent.th, to);
        this.#emit({ event: "sent", id: sent.id, t: "msg", th: sent.th });
      } catch (error) {
        this.#error(`send: ${errorText(error)}`);
      }
      this.#order.end(sent.id);
    }, (error) => {
      this.#sendDone();
      this.#order.end();
      this.#error(`send: ${errorText(error)}`);
    });
  }

  /** A send of {@link #send} finished: the next commands may start. */
  #sendDone(): void {
    this.#sendsInFlight--;
    const wake = this.#sendRoom;
    if (wake !== undefined && this.#sendsInFlight < SENDS_IN_FLIGHT) {
      this.#sendRoom = undefined;
      wake();
    }
  }

  /** Reports a command's failure once its promise settles. */
  #background(cmd: DriverCommand, work: Promise<void>): void {
    work.catch((error) => this.#error(`${cmd.cmd}: ${errorText(error)}`));
  }

  async #execute(cmd: DriverCommand): Promise<void> {
    const to = await this.#target(cmd);
    if (to === undefined) {
      this.#pending.push(cmd); // sent once a peer connects
      return;
    }
    const str = (name: string): string | undefined =>
      typeof cmd[name] === "string" ? cmd[name] as string : undefined;
    switch (cmd.cmd) {
      case "send":
        this.#send(cmd, to);
        return;
      case "state": {
        const th = str("th");
        const state = str("state");
        if (!th || !state) throw new Error("state needs th and state");
        const done = this.#order.sending();
        this.#background(
          cmd,
          this.#peer.setState(to, th, state, str("note")).then((sent) => {
            this.#emit({ event: "sent", id: sent.id, t: "state", th });
            done(sent.id);
          }).finally(() => done()),
        );
        return;
      }
      case "blob": {
        const path = str("path");
        if (!path) throw new Error("blob needs path");
        const done = this.#order.sending();
        try {
          const sent = await this.#peer.send(to, str("text") ?? "", {
            ...(str("th") ? { thread: str("th") } : {}),
            files: [path],
          });
          this.#noteThread(sent.th, to);
          this.#emit({ event: "sent", id: sent.id, t: "msg", th: sent.th });
          done(sent.id);
        } finally {
          done();
        }
        return;
      }
      case "grant": {
        const caps = Array.isArray(cmd.caps) ? cmd.caps.map(String) : [];
        if (caps.length === 0) throw new Error("grant needs caps");
        const ttl = typeof cmd.ttl === "number" ? cmd.ttl : 3600;
        const grant = await this.#peer.grant(str("sub") ?? to, caps, {
          ttlMs: Math.round(ttl * 1000),
        });
        this.#emit({ event: "sent", t: "grant", id: grant.nonce, grant });
        return;
      }
      case "bye":
        await this.#peer.bye(to, str("reason"));
        return;
    }
  }

  /** Notes that the recv of `seq` is written out; saves it soon. */
  #wrote(seq: number): void {
    if (seq <= this.#cursor) return;
    this.#cursor = seq;
    this.#cursorTimer ??= setTimeout(() => {
      this.#cursorTimer = undefined;
      void this.#saveCursor();
    }, CURSOR_SAVE_MS);
  }

  async #saveCursor(): Promise<void> {
    if (this.#cursorTimer !== undefined) {
      clearTimeout(this.#cursorTimer);
      this.#cursorTimer = undefined;
    }
    const seq = this.#cursor;
    if (seq <= this.#savedCursor) return;
    try {
      await this.#peer.store.setMeta(CURSOR_META, seq);
      this.#savedCursor = Math.max(this.#savedCursor, seq);
    } catch { /* closed: the next run repeats a few events */ }
  }

  async #pump(after: number): Promise<void> {
    for await (const ev of this.#peer.events({ after })) {
      try {
        await this.#onEvent(ev);
      } catch (error) {
        this.#error(`event: ${errorText(error)}`);
      }
    }
  }

  /** The state line as received, from the store's log (falls back to its fields). */
  async #stateLine(
    ev: Extract<PeerEvent, { type: "state" }>,
  ): Promise<unknown> {
    try {
      // Its log entry by seq: one read, not the thread's whole log.
      const [hit] = await this.#peer.log({ after: ev.seq - 1, limit: 1 });
      if (hit?.dir === "in" && hit.id === ev.id) return JSON.parse(hit.line);
    } catch { /* fall back */ }
    return {
      t: "state",
      id: ev.id,
      th: ev.th,
      state: ev.state,
      ...(ev.note !== undefined ? { note: ev.note } : {}),
    };
  }

  async #onEvent(ev: PeerEvent): Promise<void> {
    switch (ev.type) {
      case "connected": {
        this.#connected.add(ev.peer);
        this.#emit({
          event: "connected",
          key: ev.peer,
          name: ev.name ?? null,
          caps: ev.caps,
          about: ev.about ?? null,
        });
        for (const cmd of this.#pending.splice(0)) this.#enqueue(cmd);
        return;
      }
      case "disconnected":
        this.#connected.delete(ev.peer);
        this.#emit({ event: "disconnected", reason: ev.reason, key: ev.peer });
        return;
      case "message":
        this.#noteThread(ev.message.th, ev.peer);
        this.#emit({ event: "recv", msg: ev.message, seq: ev.seq }, ev.seq);
        return;
      case "state":
        this.#noteThread(ev.th, ev.peer);
        this.#emit({
          event: "recv",
          msg: await this.#stateLine(ev),
          seq: ev.seq,
        }, ev.seq);
        return;
      case "line":
        // msg and state are reported once durable (above); acks have their
        // own event; ping and pong are the connection's business.
        if (ev.dir === "in" && !LINE_RECV_SKIP.has(ev.message.t)) {
          this.#emit({ event: "recv", msg: ev.message });
        }
        return;
      case "acked":
        this.#order.acked(ev.id);
        return;
      case "blob":
        if (ev.dir === "in" && ev.status === "complete") {
          this.#emit({
            event: "blob",
            ref: ev.ref,
            path: ev.path,
            size: ev.size,
            sha256: ev.sha256,
          });
        } else if (ev.status !== "complete") {
          this.#error(
            `blob ${ev.ref} ${ev.status}${ev.detail ? `: ${ev.detail}` : ""}`,
          );
        }
        return;
      case "error":
        // A remote err arrives as a line (recv above).
        if (!ev.remote) this.#error(`${ev.code}: ${ev.detail}`);
        return;
    }
  }
}
