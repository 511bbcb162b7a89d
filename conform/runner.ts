/**
 * The conformance runner: a scripted raw peer, with a key of its own, that
 * drives the peer under test through the scenarios of `conform/scenarios.ts`
 * and checks every line the peer sends against the schema.
 *
 * Two modes, as `awp conform` (seed 004): dial the peer once per scenario,
 * or listen, start the peer with `--run`, and run the scenarios that fit one
 * connection in turn.
 *
 * @module
 */

import {
  dial,
  listen,
  type Listener,
  type Transport,
} from "../net/transport.ts";
import { AddressError, parseAddress } from "../wire/address.ts";
import { decodeBase64, encodeBase64Url } from "../wire/base64.ts";
import { encodeLine, MAX_LINE_BYTES } from "../wire/frame.ts";
import { IdGenerator } from "../wire/id.ts";
import { randomNonce, Signer, verify } from "../wire/keys.ts";
import { LineReader } from "../wire/line_reader.ts";
import {
  createAuth,
  createBye,
  createHello,
  createPing,
  createPong,
  createResume,
} from "../wire/messages.ts";
import { parseLine } from "../wire/parse.ts";
import { authTranscript } from "../wire/transcript.ts";
import { MESSAGE_TYPES } from "../wire/types.ts";
import { validateMessage } from "../wire/validate.ts";
import {
  type ConformReport,
  type PeerInfo,
  type ScenarioResult,
  summarize,
} from "./report.ts";
import {
  type DriverHandle,
  type NextOptions,
  type PeerHello,
  type Received,
  type Scenario,
  type ScenarioContext,
  ScenarioFailure,
  SCENARIOS,
  ScenarioSkip,
} from "./scenarios.ts";

/** Options of {@link runConformance}. Exactly one of `address` and `listen` is set. */
export interface ConformOptions {
  /** Dial mode: the address the peer under test listens on. */
  address?: string;
  /** Listen mode: where the runner listens (`tcp:127.0.0.1:0` picks a port). */
  listen?: string;
  /** Listen mode: the command starting the peer; `{addr}` becomes the listening address. */
  run?: string;
  /** The `--run` command speaks the stdin/stdout driver contract (enables `replay`). */
  driver?: boolean;
  /** Scenario names to run; all when absent. */
  scenarios?: string[];
  /** Per scenario timeout in ms (default 5000). */
  timeoutMs?: number;
  /** The runner's identity; a fresh key when absent. */
  signer?: Signer;
  /** wss: extra CA certificates (PEM) trusted when dialing (`--ca`). */
  caCerts?: string[];
  /** wss in listen mode: the runner's certificate and key (PEM). */
  tls?: { cert: string; key: string };
  /** Receives one trace line per line sent and received (`--trace`). */
  trace?: (line: string) => void;
  /** Called once the target is known (listen mode: after binding). */
  onTarget?: (
    mode: "dial" | "listen",
    target: string,
    command?: string,
  ) => void;
  /** Called when the peer's first hello arrives. */
  onPeer?: (peer: PeerInfo) => void;
  /** Called as each scenario ends. */
  onResult?: (result: ScenarioResult) => void;
}

/** A run that could not start or go on (bad address, refused connection, dead command): one line. */
export class ConformError extends Error {
  /**
   * Creates the error with its one-line message.
   *
   * @example
   * ```ts
   * import { ConformError } from "./runner.ts";
   * console.log(new ConformError("dial tcp:127.0.0.1:1: connection refused").message);
   * ```
   */
  constructor(message: string) {
    super(message);
    this.name = "ConformError";
  }
}

/**
 * The default per scenario timeout, in ms.
 *
 * @example
 * ```ts
 * import { DEFAULT_TIMEOUT_MS } from "./runner.ts";
 * console.log(DEFAULT_TIMEOUT_MS / 1000); // 5
 * ```
 */
export const DEFAULT_TIMEOUT_MS = 5000;

/** Our caps: chat is implied, blob and grant so peers may use them with us. */
const RUNNER_CAPS = ["chat", "blob", "grant"];
const CORE_TYPES: ReadonlySet<string> = new Set(
  MESSAGE_TYPES.filter((t) => !["presence", "mirror", "private"].includes(t)),
);
const TRACE_CHARS = 400;
/** How long a polite bye may take at the end of a connection. */
const TEARDOWN_MS = 1000;

const encoder = new TextEncoder();

/**
 * Splits a command line the way a shell would for simple quoting: blanks
 * separate words, '…' is literal, "…" allows \" \\ \$ \`, and a backslash
 * outside quotes escapes the next character. No expansion of any kind.
 *
 * @example
 * ```ts
 * import { splitCommand } from "./runner.ts";
 * console.log(splitCommand(`deno run -A 'my peer.ts' connect {addr}`));
 * // ["deno", "run", "-A", "my peer.ts", "connect", "{addr}"]
 * ```
 */
export function splitCommand(text: string): string[] {
  const words: string[] = [];
  let word = "";
  let inWord = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === "'") {
      const end = text.indexOf("'", i + 1);
      if (end < 0) throw new ConformError("unterminated ' in --run command");
      word += text.slice(i + 1, end);
      inWord = true;
      i = end;
    } else if (c === '"') {
      inWord = true;
      let j = i + 1;
      for (; j < text.length && text[j] !== '"'; j++) {
        if (
          text[j] === "\\" && j + 1 < text.length &&
          '"\\$`'.includes(text[j + 1])
        ) j++;
        word += text[j];
      }
      if (j >= text.length) {
        throw new ConformError('unterminated " in --run command');
      }
      i = j;
    } else if (c === "\\") {
      if (i + 1 < text.length) word += text[++i];
      inWord = true;
    } else if (/\s/.test(c)) {
      if (inWord) words.push(word);
      word = "";
      inWord = false;
    } else {
      word += c;
      inWord = true;
    }
  }
  if (inWord) words.push(word);
  return words;
}

function truncate(text: string, max: number): string {
  return text.length > max
    ? `${text.slice(0, max)}… (${text.length} chars)`
    : text;
}

/** A short description of a line, for failure messages. */
function describe(line: Received): string {
  const m = line.message;
  switch (m.t) {
    case "err":
      return `err ${m.code}${
        typeof m.detail === "string"
          ? ` (${JSON.stringify(truncate(m.detail, 120))})`
          : ""
      }`;
    case "ack":
    case "pong":
      return `${m.t} re ${m.re}${m.th !== undefined ? ` th ${m.th}` : ""}`;
    case "msg":
    case "state":
      return `${m.t} ${m.id} in thread ${m.th}`;
    case "bye":
      return "bye";
    default:
      return truncate(line.raw, 160);
  }
}

function seconds(ms: number): string {
  return `${Number((ms / 1000).toFixed(1))} s`;
}

type WireEvent =
  | { kind: "line"; line: Received; bytes: Uint8Array }
  | { kind: "invalid"; detail: string }
  | { kind: "end"; error?: Error };

/** One connection to the peer under test, as a queue of validated lines. */
class Wire {
  readonly number: number;
  #transport: Transport;
  #reader = new LineReader();
  #events: WireEvent[] = [];
  #end: WireEvent | undefined;
  #waiter: (() => void) | undefined;
  #trace: ((line: string) => void) | undefined;
  #ids: IdGenerator;
  /** The peer's hello line, exact bytes, once received. */
  theirHello: Uint8Array | undefined;
  /** Our hello line, exact bytes, once sent. */
  ourHello: Uint8Array | undefined;
  peer: PeerHello | undefined;
  open = false;
  byeSent = false;

  constructor(
    number: number,
    transport: Transport,
    ids: IdGenerator,
    trace?: (line: string) => void,
  ) {
    this.number = number;
    this.#transport = transport;
    this.#ids = ids;
    this.#trace = trace;
    transport.start({
      onData: (chunk) => this.#onData(chunk),
      onEnd: (error) => {
        this.#trace?.(
          `#${this.number} closed${error ? `: ${error.message}` : ""}`,
        );
        this.#end = { kind: "end", error };
        this.#wake();
      },
    });
  }

  get ended(): boolean {
    return this.#end !== undefined;
  }

  #onData(chunk: Uint8Array): void {
    for (const event of this.#reader.push(chunk)) {
      if (event.kind === "too_large") {
        this.#trace?.(
          `#${this.number} < (a line over ${MAX_LINE_BYTES} bytes)`,
        );
        this.#events.push({
          kind: "invalid",
          detail: `sent a line over ${MAX_LINE_BYTES} bytes`,
        });
        continue;
      }
      const parsed = parseLine(event.bytes);
      if (!parsed.ok) {
        const text = new TextDecoder().decode(event.bytes);
        this.#trace?.(`#${this.number} < ${truncate(text, TRACE_CHARS)}`);
        this.#events.push({
          kind: "invalid",
          detail: `sent a line that is not a JSON object (${parsed.detail}): ${
            truncate(text, 160)
          }`,
        });
        continue;
      }
      this.#trace?.(`#${this.number} < ${truncate(parsed.raw, TRACE_CHARS)}`);
      const verdict = validateMessage(parsed.message);
      if (!verdict.ok) {
        this.#events.push({
          kind: "invalid",
          detail: `sent a line that does not match the schema (${
            verdict.errors.slice(0, 3).join("; ")
          }): ${truncate(parsed.raw, 160)}`,
        });
        continue;
      }
      const line: Received = { message: parsed.message, raw: parsed.raw };
      // Liveness is the runner's duty as a peer, not a scenario's.
      if (line.message.t === "ping" && this.open && !this.byeSent) {
        void this.write(
          createPong({ id: this.#ids.next(), re: String(line.message.id) }),
        ).catch(() => {});
      }
      this.#events.push({ kind: "line", line, bytes: event.bytes });
    }
    this.#wake();
  }

  #wake(): void {
    const waiter = this.#waiter;
    this.#waiter = undefined;
    waiter?.();
  }

  /** The next event, or undefined at the deadline. After the end, the end again. */
  take(deadline: number): Promise<WireEvent | undefined> {
    const ready = this.#events.shift() ?? this.#end;
    if (ready) return Promise.resolve(ready);
    const wait = deadline - Date.now();
    if (wait <= 0) return Promise.resolve(undefined);
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.#waiter = undefined;
        resolve(undefined);
      }, wait);
      this.#waiter = () => {
        clearTimeout(timer);
        resolve(this.#events.shift() ?? this.#end);
      };
    });
  }

  /** Removes and returns the details of queued lines that failed validation. */
  drainInvalid(): string[] {
    const invalid = this.#events.filter((e) => e.kind === "invalid") as Array<
      { kind: "invalid"; detail: string }
    >;
    this.#events = this.#events.filter((e) => e.kind !== "invalid");
    return invalid.map((e) => e.detail);
  }

  async write(message: object): Promise<Uint8Array> {
    const frame = encodeLine(message);
    await this.writeRaw(frame);
    return frame.subarray(0, frame.length - 1);
  }

  async writeRaw(bytes: Uint8Array): Promise<void> {
    if (this.#trace) {
      const text = new TextDecoder().decode(
        bytes.length > TRACE_CHARS * 4
          ? bytes.subarray(0, TRACE_CHARS * 4)
          : bytes,
      );
      const shown = bytes.length > TRACE_CHARS
        ? `${text.slice(0, TRACE_CHARS)}… (${bytes.length} bytes)`
        : text.replace(/\n$/, "");
      this.#trace(`#${this.number} > ${shown}`);
    }
    await this.#transport.write(bytes);
  }

  close(): void {
    this.#transport.close();
  }
}

interface SpawnedPeer {
  child: Deno.ChildProcess;
  command: string;
  driver: DriverHandle | undefined;
  /** The last lines the command wrote on stderr, for error messages. */
  stderrTail: string[];
  exited: Promise<Deno.CommandStatus>;
  stop(): Promise<void>;
}

function pump(
  stream: ReadableStream<Uint8Array>,
  onLine: (line: string) => void,
): Promise<void> {
  const reader = new LineReader({ maxLineBytes: 64 * 1024 });
  const decoder = new TextDecoder();
  return (async () => {
    try {
      for await (const chunk of stream) {
        for (const e of reader.push(chunk)) {
          if (e.kind === "line") onLine(decoder.decode(e.bytes));
        }
      }
    } catch { /* the process went away */ }
  })();
}

function spawnPeer(
  argv: string[],
  command: string,
  driver: boolean,
  trace?: (line: string) => void,
): SpawnedPeer {
  if (argv.length === 0) throw new ConformError("--run: empty command");
  let child: Deno.ChildProcess;
  try {
    child = new Deno.Command(argv[0], {
      args: argv.slice(1),
      stdin: driver ? "piped" : "null",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
  } catch (e) {
    const why = e instanceof Deno.errors.NotFound
      ? "command not found"
      : (e instanceof Error ? e.message.split("\n")[0] : String(e));
    throw new ConformError(`--run: cannot start ${argv[0]}: ${why}`);
  }
  const stderrTail: string[] = [];
  const pumps = [
    pump(
      child.stdout,
      (line) => trace?.(`peer stdout: ${truncate(line, TRACE_CHARS)}`),
    ),
    pump(child.stderr, (line) => {
      trace?.(`peer stderr: ${truncate(line, TRACE_CHARS)}`);
      stderrTail.push(line);
      if (stderrTail.length > 5) stderrTail.shift();
    }),
  ];
  const writer = driver ? child.stdin.getWriter() : undefined;
  const exited = child.status;
  let stopped = false;
  return {
    child,
    command,
    stderrTail,
    exited,
    driver: writer
      ? {
        async command(cmd: Record<string, unknown>): Promise<void> {
          const text = JSON.stringify(cmd);
          trace?.(`peer stdin: ${text}`);
          try {
            await writer.write(encoder.encode(text + "\n"));
          } catch (e) {
            throw new ScenarioFailure(
              `could not write a driver command to the peer's stdin: ${
                e instanceof Error ? e.message : e
              }`,
            );
          }
        },
      }
      : undefined,
    async stop(): Promise<void> {
      if (stopped) return;
      stopped = true;
      try {
        await writer?.close();
      } catch { /* already gone */ }
      let timer: ReturnType<typeof setTimeout> | undefined;
      const done = await Promise.race([
        exited.then(() => true),
        new Promise<false>((resolve) => {
          try {
            child.kill("SIGTERM");
          } catch { /* already exited */ }
          timer = setTimeout(() => resolve(false), 3000);
        }),
      ]);
      clearTimeout(timer);
      if (!done) {
        try {
          child.kill("SIGKILL");
        } catch { /* already exited */ }
      }
      await exited;
      await Promise.all(pumps);
    },
  };
}

/** Shared state of a run: identity, ids, the current connection. */
class Session {
  readonly mode: "dial" | "listen";
  readonly signer: Signer;
  readonly ids = new IdGenerator();
  readonly timeoutMs: number;
  readonly trace: ((line: string) => void) | undefined;
  readonly onPeer: ((peer: PeerInfo) => void) | undefined;
  wire: Wire | undefined;
  connections = 0;
  firstPeer: PeerInfo | undefined;
  driver: DriverHandle | undefined;
  #dialAddress: string | undefined;
  #caCerts: string[] | undefined;
  #accepted: Transport[] = [];
  #acceptWaiter: (() => void) | undefined;
  spawned: SpawnedPeer | undefined;

  constructor(
    mode: "dial" | "listen",
    signer: Signer,
    options: ConformOptions,
  ) {
    this.mode = mode;
    this.signer = signer;
    this.timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.trace = options.trace;
    this.onPeer = options.onPeer;
    this.#dialAddress = options.address;
    this.#caCerts = options.caCerts;
  }

  /** Listener callback: queues accepted connections. */
  accept(transport: Transport): void {
    this.#accepted.push(transport);
    const waiter = this.#acceptWaiter;
    this.#acceptWaiter = undefined;
    waiter?.();
  }

  #adopt(transport: Transport): Wire {
    this.connections++;
    this.trace?.(`#${this.connections} connected ${transport.remoteAddr}`);
    this.wire = new Wire(this.connections, transport, this.ids, this.trace);
    return this.wire;
  }

  /** Dial mode: a new connection. */
  async dialNew(): Promise<Wire> {
    try {
      return this.#adopt(
        await dial(this.#dialAddress!, {
          allowPublic: true,
          caCerts: this.#caCerts,
        }),
      );
    } catch (e) {
      throw new ConformError(e instanceof Error ? e.message : String(e));
    }
  }

  /** Listen mode: the next connection the peer makes, by the deadline. */
  async acceptNext(deadline: number): Promise<Wire | undefined> {
    while (this.#accepted.length === 0) {
      const wait = deadline - Date.now();
      if (wait <= 0) return undefined;
      let timer: ReturnType<typeof setTimeout> | undefined;
      const exited = this.spawned?.exited;
      const outcome = await new Promise<"conn" | "timeout" | "exit">(
        (resolve) => {
          timer = setTimeout(() => resolve("timeout"), wait);
          this.#acceptWaiter = () => resolve("conn");
          exited?.then(() => resolve("exit"));
        },
      );
      clearTimeout(timer);
      this.#acceptWaiter = undefined;
      if (outcome === "exit" && this.#accepted.length === 0) {
        const status = await exited!;
        const tail = this.spawned!.stderrTail.at(-1);
        throw new ConformError(
          `the peer command exited (code ${status.code}) without connecting${
            tail ? `: ${truncate(tail, 200)}` : ""
          }`,
        );
      }
      if (outcome === "timeout") return undefined;
    }
    return this.#adopt(this.#accepted.shift()!);
  }

  /** Closes unclaimed connections (listen mode, at the end). */
  closeAccepted(): void {
    for (const t of this.#accepted.splice(0)) t.close();
  }

  notePeer(hello: PeerHello): void {
    if (this.firstPeer) return;
    this.firstPeer = { key: hello.key, v: hello.v, caps: hello.caps };
    if (hello.name !== undefined) this.firstPeer.name = hello.name;
    if (hello.about !== undefined) this.firstPeer.about = hello.about;
    this.onPeer?.(this.firstPeer);
  }

  /** Ends the current connection politely: bye if open, a short wait, close. */
  async teardown(): Promise<string[]> {
    const wire = this.wire;
    if (!wire) return [];
    this.wire = undefined;
    if (!wire.ended && wire.open && !wire.byeSent) {
      wire.byeSent = true;
      try {
        await wire.write(
          createBye({ id: this.ids.next(), reason: "conformance run over" }),
        );
        const deadline = Date.now() + Math.min(TEARDOWN_MS, this.timeoutMs);
        for (;;) {
          const event = await wire.take(deadline);
          if (!event || event.kind === "end") break;
          if (event.kind === "invalid") {
            wire.close();
            return [event.detail];
          }
        }
      } catch { /* closing anyway */ }
    }
    const invalid = wire.drainInvalid();
    wire.close();
    return invalid;
  }
}

/** The {@link ScenarioContext} of one scenario run. */
class Context implements ScenarioContext {
  readonly #session: Session;
  /** Waits end here; moved by reconnect(). */
  #deadline: number;
  /** The scenario's whole budget. */
  readonly #limit: number;
  readonly #scenario: Scenario;
  #start = Date.now();

  constructor(session: Session, scenario: Scenario, deadline: number) {
    this.#session = session;
    this.#scenario = scenario;
    this.#deadline = Math.min(deadline, Date.now() + session.timeoutMs);
    this.#limit = deadline;
  }

  get mode(): "dial" | "listen" {
    return this.#session.mode;
  }
  get signer(): Signer {
    return this.#session.signer;
  }
  get timeoutMs(): number {
    return this.#session.timeoutMs;
  }
  get peer(): PeerHello | undefined {
    return this.#session.wire?.peer;
  }
  get open(): boolean {
    return this.#session.wire?.open ?? false;
  }
  get driver(): DriverHandle | undefined {
    return this.#session.driver;
  }

  id(): string {
    return this.#session.ids.next();
  }

  thread(): string {
    return `conform-${this.#scenario.name}-${crypto.randomUUID().slice(0, 8)}`;
  }

  async #wire(): Promise<Wire> {
    const session = this.#session;
    if (session.wire) return session.wire;
    if (session.mode === "dial") {
      try {
        return await session.dialNew();
      } catch (e) {
        this.fail(`could not connect: ${e instanceof Error ? e.message : e}`);
      }
    }
    this.fail("no connection from the peer");
  }

  #budget(): string {
    return seconds(this.#deadline - this.#start);
  }

  async send(message: object): Promise<void> {
    const wire = await this.#wire();
    if (wire.ended) this.fail("the peer had already closed the connection");
    try {
      await wire.write(message);
    } catch (e) {
      this.fail(`sending failed: ${e instanceof Error ? e.message : e}`);
    }
  }

  async sendRaw(bytes: Uint8Array): Promise<void> {
    const wire = await this.#wire();
    if (wire.ended) this.fail("the peer had already closed the connection");
    try {
      await wire.writeRaw(bytes);
    } catch (e) {
      this.fail(`sending failed: ${e instanceof Error ? e.message : e}`);
    }
  }

  async receiveHello(): Promise<PeerHello> {
    const wire = await this.#wire();
    if (wire.peer) return wire.peer;
    const first = await this.#take(
      wire,
      "the peer's hello",
      (l) => l.message.t === "hello",
      {
        strict: true,
        idle: wire.ourHello
          ? undefined
          : `no hello within ${this.#budget()} of connecting, before ours (SPEC 7: hello is sent at once, without waiting)`,
      },
    );
    const m = first.line.message;
    const hello: PeerHello = {
      key: String(m.key),
      v: Number(m.v),
      caps: Array.isArray(m.caps) ? m.caps.map(String) : [],
      raw: first.line.raw,
    };
    if (typeof m.name === "string") hello.name = m.name;
    if (typeof m.about === "string") hello.about = m.about;
    wire.theirHello = first.bytes;
    wire.peer = hello;
    this.#session.notePeer(hello);
    if (hello.v !== 0) {
      this.fail(`the peer's hello has v ${hello.v}; this runner speaks v0`);
    }
    if (hello.key === this.signer.key) {
      this.fail("the peer's hello carries the runner's own key");
    }
    return hello;
  }

  async sendHello(overrides: Record<string, unknown> = {}): Promise<void> {
    const wire = await this.#wire();
    const hello = {
      ...createHello({
        id: this.id(),
        v: 0,
        key: this.signer.key,
        nonce: randomNonce(),
        name: "awp-conform",
        caps: RUNNER_CAPS,
        about: "awp conformance runner",
      }),
      ...overrides,
    };
    try {
      wire.ourHello = await wire.write(hello);
    } catch (e) {
      this.fail(`sending hello failed: ${e instanceof Error ? e.message : e}`);
    }
  }

  async sendAuth(options: { badSignature?: boolean } = {}): Promise<void> {
    const wire = await this.#wire();
    if (!wire.ourHello || !wire.theirHello) {
      throw new Error("sendAuth before both hellos");
    }
    // A bad signature is a real one over the transcript with the hellos
    // swapped: the mistake an implementation is most likely to make.
    const transcript = options.badSignature
      ? authTranscript(wire.theirHello, wire.ourHello)
      : authTranscript(wire.ourHello, wire.theirHello);
    const sig = await this.signer.sign(transcript);
    await this.send(createAuth({ id: this.id(), sig: encodeBase64Url(sig) }));
  }

  async handshake(
    options: { theirsFirst?: boolean; seen?: Record<string, string> } = {},
  ): Promise<Received> {
    const wire = await this.#wire();
    if (!wire.ourHello && !options.theirsFirst) await this.sendHello();
    const peer = await this.receiveHello();
    if (!wire.ourHello) await this.sendHello();
    await this.sendAuth();
    const auth = await this.next(
      "the peer's auth after the hellos",
      (l) => l.message.t === "auth",
    );
    let sig: Uint8Array;
    try {
      sig = decodeBase64(String(auth.message.sig));
    } catch {
      this.fail(
        `the peer's auth sig is not base64: ${
          truncate(String(auth.message.sig), 100)
        }`,
      );
    }
    const transcript = authTranscript(wire.theirHello!, wire.ourHello!);
    if (!(await verify(peer.key, transcript, sig))) {
      this.fail(
        "the peer's auth signature does not verify with its hello key over awp-auth-v0 0x00 its hello 0x00 our hello",
      );
    }
    await this.send(createResume({ id: this.id(), seen: options.seen ?? {} }));
    const resume = await this.next(
      "the peer's resume after auth",
      (l) => l.message.t === "resume",
    );
    wire.open = true;
    return resume;
  }

  next(
    what: string,
    match: (line: Received) => boolean,
    options: NextOptions = {},
  ): Promise<Received> {
    return this.#wire().then((wire) => this.#take(wire, what, match, options))
      .then((e) => e.line);
  }

  async #take(
    wire: Wire,
    what: string,
    match: (line: Received) => boolean,
    options: NextOptions & { strict?: boolean; idle?: string },
  ): Promise<{ line: Received; bytes: Uint8Array }> {
    for (;;) {
      const event = await wire.take(this.#deadline);
      if (!event) {
        this.fail(
          options.idle ??
            `expected ${what}; nothing came within ${this.#budget()}`,
        );
      }
      if (event.kind === "end") {
        const how = event.error
          ? `the connection failed (${event.error.message})`
          : "the peer closed the connection";
        this.fail(`expected ${what}; ${how} instead`);
      }
      if (event.kind === "invalid") this.fail(event.detail);
      const line = event.line;
      if (match(line)) return event;
      if (!options.strict && passable(line)) continue;
      if (options.ignore?.(line)) continue;
      this.fail(`expected ${what}; got ${describe(line)} instead`);
    }
  }

  async expectClose(what: string, options: NextOptions = {}): Promise<void> {
    const wire = await this.#wire();
    for (;;) {
      const event = await wire.take(this.#deadline);
      if (!event) {
        this.fail(`expected ${what}; still open after ${this.#budget()}`);
      }
      if (event.kind === "end") return;
      if (event.kind === "invalid") this.fail(event.detail);
      if (passable(event.line) || options.ignore?.(event.line)) continue;
      this.fail(`expected ${what}; got ${describe(event.line)} instead`);
    }
  }

  async roundTrip(what: string, options: NextOptions = {}): Promise<void> {
    const ping = createPing({ id: this.id() });
    await this.send(ping);
    await this.next(
      `${what} (a pong to our ping ${ping.id})`,
      (l) => l.message.t === "pong" && l.message.re === ping.id,
      options,
    );
  }

  async reconnect(): Promise<void> {
    const session = this.#session;
    session.wire?.close();
    session.wire = undefined;
    if (session.mode === "dial") {
      await this.#wire();
      return;
    }
    let wire: Wire | undefined;
    const waitStart = Date.now();
    try {
      // Reconnecting may take a backoff step or two: the whole budget.
      wire = await session.acceptNext(this.#limit);
    } catch (e) {
      this.fail(e instanceof Error ? e.message : String(e));
    }
    if (!wire) {
      this.fail(
        `the peer did not reconnect within ${
          seconds(Date.now() - waitStart)
        } after the connection dropped`,
      );
    }
    // What follows a reconnect gets the usual timeout again.
    this.#deadline = Math.min(this.#limit, Date.now() + session.timeoutMs);
    this.#start = Date.now();
  }

  fail(detail: string): never {
    throw new ScenarioFailure(detail);
  }

  skip(reason: string): never {
    throw new ScenarioSkip(reason);
  }
}

/** Lines any wait passes over: the runner answers pings itself, and extension types are ignorable (SPEC 5). */
function passable(line: Received): boolean {
  const t = line.message.t;
  return t === "ping" || t === "pong" || !CORE_TYPES.has(t);
}

async function runScenario(
  session: Session,
  scenario: Scenario,
): Promise<ScenarioResult> {
  const start = Date.now();
  const budget = Math.max(session.timeoutMs, scenario.minTimeoutMs ?? 0);
  const deadline = start + budget;
  const ctx = new Context(session, scenario, deadline);
  const result = (
    status: ScenarioResult["status"],
    detail?: string,
  ): ScenarioResult => {
    const r: ScenarioResult = {
      name: scenario.name,
      section: scenario.section,
      doc: scenario.doc,
      status,
      seconds: (Date.now() - start) / 1000,
    };
    if (detail !== undefined) r.detail = detail;
    return r;
  };
  // Skip on caps already known, without a connection for nothing.
  const known = session.wire?.peer?.caps ?? session.firstPeer?.caps;
  const missing = (caps: string[]) =>
    (scenario.needs ?? []).filter((c) => !caps.includes(c));
  if (known && missing(known).length) {
    return result(
      "skip",
      `the peer does not list ${missing(known).join(", ")} in its hello caps`,
    );
  }
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    const body = async () => {
      if (!scenario.raw && !ctx.open) await ctx.handshake();
      const caps = ctx.peer?.caps ?? [];
      if (missing(caps).length) {
        ctx.skip(
          `the peer does not list ${
            missing(caps).join(", ")
          } in its hello caps`,
        );
      }
      await scenario.run(ctx);
    };
    await Promise.race([
      body(),
      new Promise<never>((_, reject) => {
        // A safety net: waits end at the deadline, but a write to a peer that
        // stopped reading would not.
        timer = setTimeout(
          () =>
            reject(
              new ScenarioFailure(`did not finish within ${seconds(budget)}`),
            ),
          budget + 1000,
        );
      }),
    ]);
    const invalid = session.wire?.drainInvalid() ?? [];
    if (invalid.length) return result("fail", invalid[0]);
    return result("ok");
  } catch (e) {
    if (e instanceof ScenarioSkip) return result("skip", e.message);
    if (e instanceof ScenarioFailure) return result("fail", e.message);
    if (e instanceof ConformError) throw e;
    return result(
      "fail",
      `runner error: ${e instanceof Error ? e.message : String(e)}`,
    );
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Selects scenarios by name, in table order; throws {@link ConformError} on
 * an unknown name.
 *
 * @example
 * ```ts
 * import { selectScenarios } from "./runner.ts";
 * console.log(selectScenarios(["bye", "ping"]).map((s) => s.name)); // ["ping", "bye"]
 * ```
 */
export function selectScenarios(names?: string[]): Scenario[] {
  if (!names || names.length === 0) return [...SCENARIOS];
  for (const name of names) {
    if (!SCENARIOS.some((s) => s.name === name)) {
      throw new ConformError(
        `unknown scenario ${JSON.stringify(name)} (known: ${
          SCENARIOS.map((s) => s.name).join(", ")
        })`,
      );
    }
  }
  return SCENARIOS.filter((s) => names.includes(s.name));
}

/**
 * Runs the conformance scenarios against a peer and returns the report.
 * Throws {@link ConformError} (one line) when the run cannot start: a bad
 * address, a refused first connection, a `--run` command that exits or never
 * connects.
 *
 * @example
 * ```ts ignore
 * import { runConformance } from "./runner.ts";
 * const report = await runConformance({ address: "tcp:127.0.0.1:7000" });
 * console.log(report.passed, report.failed);
 * ```
 */
export async function runConformance(
  options: ConformOptions,
): Promise<ConformReport> {
  const started = Date.now();
  if ((options.address === undefined) === (options.listen === undefined)) {
    throw new ConformError(
      "give either the peer's address or --listen ADDR --run CMD",
    );
  }
  if (options.listen !== undefined && !options.run) {
    throw new ConformError("--listen needs --run CMD");
  }
  const scenarios = selectScenarios(options.scenarios);
  const target = options.address ?? options.listen!;
  try {
    parseAddress(target);
  } catch (e) {
    throw new ConformError(e instanceof AddressError ? e.message : String(e));
  }
  const mode = options.address !== undefined ? "dial" : "listen";
  const signer = options.signer ?? await Signer.generate();
  // Compiling the schema takes a while: not on any scenario's clock.
  validateMessage({});
  const session = new Session(mode, signer, options);
  const results: ScenarioResult[] = [];
  const report = (extra: { target: string; command?: string }) =>
    summarize(
      { mode, ...extra, peer: session.firstPeer },
      results,
      (Date.now() - started) / 1000,
    );
  const record = (r: ScenarioResult) => {
    results.push(r);
    options.onResult?.(r);
  };

  if (mode === "dial") {
    // A refused or unreachable peer is a one-line error, not fifteen failures.
    await session.dialNew();
    options.onTarget?.(mode, target);
    for (const scenario of scenarios) {
      record(await runScenario(session, scenario));
      const invalid = await session.teardown();
      const last = results.at(-1)!;
      if (invalid.length && last.status === "ok") {
        last.status = "fail";
        last.detail = invalid[0];
      }
    }
    return report({ target });
  }

  let listener: Listener;
  try {
    listener = await listen(target, (t) => session.accept(t), {
      allowPublic: true,
      ...options.tls,
    });
  } catch (e) {
    throw new ConformError(e instanceof Error ? e.message : String(e));
  }
  const command = options.run!.replaceAll("{addr}", listener.addr);
  try {
    options.onTarget?.(mode, listener.addr, command);
    const argv = splitCommand(options.run!).map((w) =>
      w.replaceAll("{addr}", listener.addr)
    );
    session.spawned = spawnPeer(
      argv,
      command,
      options.driver ?? false,
      options.trace,
    );
    session.driver = session.spawned.driver;
    // Starting a process (a compile, a runtime) can take longer than a scenario.
    const first = await session.acceptNext(
      Date.now() + Math.max(2 * session.timeoutMs, 10_000),
    );
    if (!first) {
      throw new ConformError(
        `the peer command did not connect to ${listener.addr} within ${
          seconds(Math.max(2 * session.timeoutMs, 10_000))
        }`,
      );
    }
    let closedDuring: string | undefined;
    for (const scenario of scenarios) {
      const base = {
        name: scenario.name,
        section: scenario.section,
        doc: scenario.doc,
        seconds: 0,
      };
      if (scenario.breaksConnection) {
        record({
          ...base,
          status: "skip",
          detail:
            "breaks the connection on purpose; run it with the peer listening",
        });
        continue;
      }
      if (closedDuring !== undefined) {
        record({ ...base, status: "skip", detail: closedDuring });
        continue;
      }
      record(await runScenario(session, scenario));
      // Later scenarios need the one connection, open: a failed handshake
      // leaves it in no known state.
      if (!session.wire || session.wire.ended) {
        closedDuring = `the connection closed during ${scenario.name}`;
      } else if (!session.wire.open) {
        closedDuring = `no open connection after ${scenario.name}`;
        session.wire.close();
      }
    }
    const invalid = await session.teardown();
    const last = results.at(-1);
    if (last && invalid.length && last.status === "ok") {
      last.status = "fail";
      last.detail = invalid[0];
    }
    return report({ target: listener.addr, command });
  } finally {
    session.wire?.close();
    session.closeAccepted();
    listener.close();
    await session.spawned?.stop();
    await listener.done;
  }
}
