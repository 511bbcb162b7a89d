/**
 * Byte transports for the plain bindings (SPEC 4.2): TCP and Unix sockets;
 * `ws:`/`wss:` addresses go to the WebSocket binding
 * (net/websocket_transport.ts) behind the same interface.
 *
 * A {@link Transport} moves already-encoded frames; framing and meaning live
 * in `wire/` and the connection actor. Reads are a `conn.read()` loop (not
 * `conn.readable`, whose end closes the whole socket and would break
 * half-close); writes are queued and batched, and each write's promise
 * resolves only once the kernel accepted its bytes, so a slow reader pushes
 * back on writers that await.
 *
 * Plain TCP to or from a public address is refused unless opted in with
 * `allowPublic` or `AWP_ALLOW_PLAINTEXT=1` (NOTES item 13).
 *
 * @module
 */

import { acceptLoop } from "./accept_loop.ts";
import { type Address, isPrivateHost, parseAddress } from "../wire/address.ts";
import { BatchedWriter, type WriteDone } from "./batched_writer.ts";
export type { WriteDone };
import { readAhead, type ReadAheadHandlers } from "./read_ahead.ts";
import { ConnectionGate, type ConnectionLimits } from "./connection_gate.ts";
import { softFdLimit } from "./fd_limit.ts";
import {
  isIpLiteral,
  socketAddressText as addrText,
  socketErrorReason as reasonOf,
} from "./socket_text.ts";
import { dialWebSocket, listenWebSocket } from "./websocket_transport.ts";
import { connectionClock } from "./timer_wheel.ts";

/** What the owner of a {@link Transport} is told. */
export interface TransportHandlers {
  /**
   * Bytes read. The view is valid until the returned promise settles (or,
   * for a plain return, until `onData` returns): the transport reads into
   * the same buffer again afterwards, so an owner that keeps bytes copies
   * them (the line reader does).
   */
  onData(chunk: Uint8Array): void | Promise<void>;
  onEnd(error?: Error): void;
  /**
   * A framing violation below the line layer (the WebSocket binding: a
   * binary message, a newline inside a message, a message over 1 MiB).
   * The owner answers as it does to the same fault in a byte stream (err,
   * then close). Byte-stream transports never call it.
   */
  onFrameError?(
    code: "bad_frame" | "too_large",
    detail: string,
  ): void | Promise<void>;
}

/** A connected byte stream carrying encoded frames. */
export interface Transport {
  /** Our end, e.g. "tcp:127.0.0.1:5000" or "unix:/path". */
  readonly localAddr: string;
  /** The other end. */
  readonly remoteAddr: string;
  /**
   * Starts the `conn.read()` loop. The loop awaits `onData` before reading
   * more (read backpressure). `onEnd` is called once, at EOF, on a read
   * error, or after {@link Transport.close}.
   */
  start(handlers: TransportHandlers): void;
  /**
   * The remote passed auth: it no longer counts as unauthenticated against
   * the listener's bounds (accepted transports only).
   */
  authenticated?(): void;
  /**
   * The session is open (`on`): lines written in a burst may wait for the
   * end of the turn to share a syscall (`BatchedWriter.holdBursts`); before
   * it, every line (the handshake's) goes at once.
   */
  holdBursts?(on: boolean): void;
  /**
   * Holds the writes until the matching `uncork` (`BatchedWriter.cork`):
   * what is queued meanwhile goes out in one write.
   */
  cork?(): void;
  /** Ends a `cork`: what queued meanwhile is written. */
  uncork?(): void;
  /**
   * Queues one encoded frame (ends in "\n"); frames queued while a write is
   * in flight are batched into one larger write. Resolves when written.
   * Rejects after close.
   */
  write(frame: Uint8Array): Promise<void>;
  /**
   * {@link write} with a callback instead of a promise (see
   * `BatchedWriter.writeThen`): `done(error, tag)` once written or dropped.
   */
  writeThen?(frame: Uint8Array, done: WriteDone, tag: number): void;
  /** Resolves when every queued frame has been written (or dropped by close). */
  flush(): Promise<void>;
  /** Closes the socket (idempotent); pending writes are dropped (rejected). */
  close(): void;
  /** True once closed by us or after a write failed. */
  readonly closed: boolean;
}

/** An open listening socket. */
export interface Listener {
  /** The bound address, with the real port when listening on port 0. */
  readonly addr: string;
  /** Stops accepting (idempotent); removes a unix socket file we created. */
  close(): void;
  /** Resolves once the accept loop has ended (after close). */
  readonly done: Promise<void>;
}

/** Options of {@link dial}. */
export interface DialOptions {
  /** Allow plaintext TCP to a public address (else env AWP_ALLOW_PLAINTEXT=1). */
  allowPublic?: boolean;
  /** Aborts the connect attempt. */
  signal?: AbortSignal;
  /** wss: extra trusted CA certificates (PEM), e.g. a private CA. */
  caCerts?: string[];
}

/** Options of {@link listen}. */
export interface ListenOptions {
  /** Accept plaintext TCP from public addresses (else env AWP_ALLOW_PLAINTEXT=1). */
  allowPublic?: boolean;
  /** wss: the TLS certificate chain (PEM). */
  cert?: string;
  /** wss: the TLS private key (PEM). */
  key?: string;
  /** Bounds on open and unauthenticated connections (see connection_gate.ts). */
  limits?: ConnectionLimits;
}

/** A dial or listen failure, with a one-line message naming the address. */
export class TransportError extends Error {
  /** The address text involved. */
  readonly address: string;
  /**
   * The host answered HTTP but refused the WebSocket upgrade (502, 503,
   * 504...): a sleeping host being woken. Retried like any failed dial.
   */
  readonly waking: boolean;
  /**
   * @example
   * ```ts
   * import { TransportError } from "./transport.ts";
   * const e = new TransportError("tcp:127.0.0.1:1", "dial", "connection refused");
   * console.assert(e.message === "dial tcp:127.0.0.1:1: connection refused");
   * ```
   */
  constructor(
    address: string,
    op: string,
    reason: string,
    options: { waking?: boolean } = {},
  ) {
    super(`${op} ${address}: ${reason}`);
    this.name = "TransportError";
    this.address = address;
    this.waking = options.waking ?? false;
  }
}

/**
 * Read buffer during a burst: a blob's chunk lines (~350 KB) then mostly
 * arrive whole in one read, and a 20 MiB blob takes ~20 reads, not ~320.
 */
const READ_BYTES = 1024 * 1024;
/** Read buffer of a connection that is not receiving a burst. */
const IDLE_READ_BYTES = 1024;
/** Read buffer of a connection that receives only pings (80-115 bytes a line). */
const STILL_READ_BYTES = 256;
/**
 * Read ahead at most one read buffer: a small line arriving behind a blob
 * waits for no more than that here (a Unix socket's pieces then hold a few
 * chunk lines; 512 KiB measured slower there).
 */
const READ_SIZES = {
  idle: IDLE_READ_BYTES,
  still: STILL_READ_BYTES,
  burst: READ_BYTES,
  ahead: READ_BYTES,
};

function plaintextAllowed(option: boolean | undefined): boolean {
  if (option) return true;
  try {
    return Deno.env.get("AWP_ALLOW_PLAINTEXT") === "1";
  } catch {
    return false; // no env permission: not opted in
  }
}

/** How to allow it, for people at the CLI (the library's option is `allowPublic`). */
const PLAINTEXT_HINT =
  "run the peer with AWP_ALLOW_PLAINTEXT=1 in its environment, e.g. awp down; AWP_ALLOW_PLAINTEXT=1 awp up";

const publicRefusal =
  `plaintext TCP to a public address refused: ${PLAINTEXT_HINT}`;

/**
 * What writes still queued at our own close reject with: one error for
 * every close (a new one captured a stack, ~10 µs per connection).
 */
const TRANSPORT_CLOSED = new Error("transport closed");

/**
 * How long a dialed socket closed by us with a read pending waits for the
 * peer's FIN before it closes anyway (see `ConnTransport.close`).
 */
export const LINGER_MS = 1_000;

/**
 * A {@link Transport} over a Deno.Conn (TCP or Unix); it is its read loop's
 * handlers itself (no wrapper per connection) and passes what it reads on.
 */
class ConnTransport implements Transport, ReadAheadHandlers {
  readonly localAddr: string;
  readonly remoteAddr: string;
  #conn: Deno.Conn;
  #writer: BatchedWriter;
  #started = false;
  #handlers: TransportHandlers | undefined;
  /** The read loop has started and not ended: a read may be pending. */
  #reading = false;
  /** Our close half-closes first when a read is pending (dialed sockets). */
  #halfClose: boolean;
  /** The wheel timer that closes a half-closed socket after LINGER_MS. */
  #linger: unknown;

  constructor(conn: Deno.Conn, options: { halfClose?: boolean } = {}) {
    this.#conn = conn;
    this.#halfClose = options.halfClose ?? false;
    this.#writer = new BatchedWriter(conn, {
      reason: reasonOf,
      onFail: () => this.#closeSocket(),
    });
    this.localAddr = addrText(conn.localAddr);
    this.remoteAddr = addrText(conn.remoteAddr);
    if (conn.localAddr.transport === "tcp") {
      try {
        // We batch ourselves; Nagle would only add latency to small frames.
        (conn as Deno.TcpConn).setNoDelay(true);
      } catch { /* not fatal */ }
    }
  }

  get closed(): boolean {
    return this.#writer.closed;
  }

  start(handlers: TransportHandlers): void {
    if (this.#started) throw new Error("transport already started");
    this.#started = true;
    this.#handlers = handlers;
    this.#reading = true;
    // Small while the peer sends little (an idle connection holds only
    // one such buffer); during a burst it reads ahead, into a second
    // buffer, while the owner takes the first.
    void readAhead(this, READ_SIZES, this);
  }

  /** For the read loop: bytes read go to the owner. */
  onData(chunk: Uint8Array): void | Promise<void> {
    return this.#handlers!.onData(chunk);
  }

  /** For the read loop: it ended (no read pending any more). */
  onEnd(error?: Error): void {
    this.#reading = false;
    // Half-closed by us: the peer's FIN (or the linger) ended it.
    if (this.#writer.closed) this.#closeSocket();
    this.#handlers!.onEnd(error);
  }

  /** For the read loop (read_ahead.ts): the socket's next bytes. */
  read(p: Uint8Array): Promise<number | null> {
    return this.#conn.read(p);
  }

  write(frame: Uint8Array): Promise<void> {
    return this.#writer.write(frame);
  }

  writeThen(frame: Uint8Array, done: WriteDone, tag: number): void {
    this.#writer.writeThen(frame, done, tag);
  }

  holdBursts(on: boolean): void {
    this.#writer.holdBursts(on);
  }

  cork(): void {
    this.#writer.cork();
  }

  uncork(): void {
    this.#writer.uncork();
  }

  flush(): Promise<void> {
    return this.#writer.flush();
  }

  close(): void {
    if (!this.#writer.fail(TRANSPORT_CLOSED)) return;
    if (!this.#halfClose || !this.#reading) return this.#closeSocket();
    // A read is pending: closing the socket under it makes Deno reject it
    // with an error whose stack it captures (~0.1 ms of the dialer's CPU a
    // close, profiled), only for the read loop to drop it. Our FIN goes
    // now instead; the peer's FIN ends the read with an EOF and the socket
    // closes then (onEnd), or after LINGER_MS whatever the peer does.
    try {
      this.#conn.closeWrite();
    } catch {
      return this.#closeSocket();
    }
    this.#linger = connectionClock.setTimeout(
      () => this.#closeSocket(),
      LINGER_MS,
    );
  }

  #closeSocket(): void {
    if (this.#linger !== undefined) {
      connectionClock.clearTimeout(this.#linger);
      this.#linger = undefined;
    }
    try {
      this.#conn.close();
    } catch { /* already closed */ }
  }
}

/**
 * Connects to `address` (`tcp:HOST:PORT` or `unix:/path`). Plain TCP to a
 * public address is refused unless `allowPublic` or AWP_ALLOW_PLAINTEXT=1;
 * a host name is checked against the address it resolved to. Errors are
 * {@link TransportError}s with one line, e.g.
 * "dial tcp:127.0.0.1:1: connection refused".
 *
 * @example
 * ```ts
 * import { dial, listen } from "./transport.ts";
 * const listener = await listen("tcp:127.0.0.1:0", (t) => t.close());
 * const t = await dial(listener.addr);
 * t.close();
 * listener.close();
 * await listener.done;
 * ```
 */
export async function dial(
  address: string,
  options: DialOptions = {},
): Promise<Transport> {
  const a: Address = parseAddress(address);
  const allowPublic = plaintextAllowed(options.allowPublic);
  if (a.kind === "ws") {
    return dialWebSocket(address, a, { ...options, allowPublic });
  }
  if (
    a.kind === "tcp" && !allowPublic && isIpLiteral(a.host) &&
    !isPrivateHost(a.host)
  ) {
    throw new TransportError(address, "dial", publicRefusal);
  }
  if (options.signal?.aborted) {
    throw new TransportError(address, "dial", "aborted");
  }
  let conn: Deno.Conn;
  try {
    if (a.kind === "unix") {
      conn = await Deno.connect({ transport: "unix", path: a.path });
    } else {
      conn = await Deno.connect({
        hostname: a.host,
        port: a.port,
        signal: options.signal,
      });
    }
  } catch (e) {
    const reason = options.signal?.aborted ? "aborted" : reasonOf(e);
    throw new TransportError(address, "dial", reason);
  }
  if (
    a.kind === "tcp" && !allowPublic &&
    conn.remoteAddr.transport === "tcp" &&
    !isPrivateHost(conn.remoteAddr.hostname)
  ) {
    conn.close();
    throw new TransportError(address, "dial", publicRefusal);
  }
  // Our peer, not a stranger: its FIN is waited for briefly at our close.
  return new ConnTransport(conn, { halfClose: true });
}

/**
 * A TCP or Unix socket bound and listening before its owner can serve it
 * ({@link bind}): connections that come meanwhile wait in the kernel's
 * backlog instead of being refused, and {@link listen} serves them first
 * once given the socket. A restarting peer binds first and opens its store
 * and warms up after: a dialer probing it meanwhile connects at once and
 * is answered when the peer is ready, instead of being refused and
 * waiting for its next probe (bench/README.md, "conn2").
 *
 * @example
 * ```ts
 * import { bind, listen } from "./transport.ts";
 * const bound = await bind("tcp:127.0.0.1:0");
 * const listener = await listen(bound, (t) => t.close());
 * console.assert(listener.addr === bound.addr);
 * listener.close();
 * await listener.done;
 * ```
 */
export class BoundSocket {
  /** The address as given to {@link bind} (`tcp:HOST:0` stays so). */
  readonly address: string;
  /** The bound address, with the real port (as a Listener's `addr`). */
  readonly addr: string;
  /** The parsed address. */
  readonly parsed: Address;
  #socket: Deno.Listener | undefined;

  /**
   * A socket bound at `address` (`parsed`), or none for a WebSocket
   * address; made by {@link bind}.
   */
  constructor(address: string, parsed: Address, socket?: Deno.Listener) {
    this.address = address;
    this.parsed = parsed;
    this.#socket = socket;
    this.addr = socket === undefined
      ? address
      : parsed.kind === "unix"
      ? `unix:${parsed.path}`
      : addrText(socket.addr);
  }

  /**
   * The socket, once: the listener that serves it owns it from then on.
   * Undefined for a WebSocket address (bound by {@link listen} itself).
   */
  take(): Deno.Listener | undefined {
    const socket = this.#socket;
    this.#socket = undefined;
    return socket;
  }

  /** Closes a socket never served (idempotent); removes its unix file. */
  close(): void {
    const socket = this.take();
    if (socket === undefined) return;
    try {
      socket.close();
    } catch { /* closed already */ }
    if (this.parsed.kind !== "unix") return;
    try {
      Deno.removeSync(this.parsed.path);
    } catch { /* gone already */ }
  }
}

/**
 * Binds `address` and listens without accepting yet: a {@link BoundSocket}
 * for {@link listen}. Fails as `listen` would (in use, public address
 * without `allowPublic`...). A `ws:`/`wss:` address is not bound here
 * (its server starts in `listen`).
 *
 * @example
 * ```ts
 * import { bind } from "./transport.ts";
 * const bound = await bind("tcp:127.0.0.1:0");
 * console.assert(/^tcp:127\.0\.0\.1:\d+$/.test(bound.addr));
 * bound.close();
 * ```
 */
export async function bind(
  address: string,
  options: {
    /** Bind a public address for plaintext TCP (else AWP_ALLOW_PLAINTEXT=1). */
    allowPublic?: boolean;
  } = {},
): Promise<BoundSocket> {
  const a = parseAddress(address);
  if (a.kind === "ws") return new BoundSocket(address, a);
  const allowPublic = plaintextAllowed(options.allowPublic);
  if (a.kind === "unix") {
    return new BoundSocket(address, a, await listenUnix(address, a.path));
  }
  const wildcard = a.host === "0.0.0.0" || a.host === "::";
  if (!allowPublic && !wildcard && !isPrivateHost(a.host)) {
    throw new TransportError(
      address,
      "listen",
      `plaintext TCP on a public address refused: ${PLAINTEXT_HINT}`,
    );
  }
  try {
    return new BoundSocket(
      address,
      a,
      Deno.listen({ hostname: a.host, port: a.port }),
    );
  } catch (e) {
    throw new TransportError(address, "listen", reasonOf(e));
  }
}

/**
 * Listens on `address` (or serves a socket {@link bind} bound before) and
 * hands each accepted connection to
 * `onTransport` (not started: the owner calls `start`). `tcp:HOST:0` picks a
 * free port, reported in `addr`. Binding a public IP, or accepting a TCP
 * peer from a public address on a wildcard bind, needs `allowPublic` or
 * AWP_ALLOW_PLAINTEXT=1 (refused peers are closed at once). A stale unix
 * socket file (nobody accepting) is replaced.
 *
 * @example
 * ```ts
 * import { listen } from "./transport.ts";
 * const listener = await listen("tcp:127.0.0.1:0", (t) => t.close());
 * console.assert(/^tcp:127\.0\.0\.1:\d+$/.test(listener.addr));
 * listener.close();
 * await listener.done;
 * ```
 */
export async function listen(
  address: string | BoundSocket,
  onTransport: (t: Transport) => void,
  options: ListenOptions = {},
): Promise<Listener> {
  const bound = typeof address === "string"
    ? await bind(address, options)
    : address;
  const a = bound.parsed;
  const allowPublic = plaintextAllowed(options.allowPublic);
  const inner = bound.take();
  if (inner === undefined) {
    if (a.kind !== "ws") {
      throw new TransportError(
        bound.address,
        "listen",
        "socket already served",
      );
    }
    return listenWebSocket(bound.address, a, onTransport, {
      ...options,
      allowPublic,
    });
  }
  const gate = new ConnectionGate(options.limits, softFdLimit());
  const loop = acceptLoop(inner, (conn) => {
    const ticket = gate.admitSocket(conn, allowPublic);
    if (ticket === undefined) return;
    onTransport(gate.wrap(new ConnTransport(conn), ticket));
  }, () => {
    if (a.kind !== "unix") return;
    try {
      Deno.removeSync(a.path);
    } catch { /* gone already */ }
  });
  return { addr: bound.addr, done: loop.done, close: loop.close };
}

async function listenUnix(
  address: string,
  path: string,
): Promise<Deno.Listener> {
  try {
    return Deno.listen({ transport: "unix", path });
  } catch (e) {
    if (!(e instanceof Deno.errors.AddrInUse)) {
      throw new TransportError(address, "listen", reasonOf(e));
    }
  }
  // In use: a live listener, or a stale file left by a killed process.
  try {
    const probe = await Deno.connect({ transport: "unix", path });
    probe.close();
    throw new TransportError(address, "listen", "address already in use");
  } catch (e) {
    if (e instanceof TransportError) throw e;
  }
  try {
    Deno.removeSync(path);
    return Deno.listen({ transport: "unix", path });
  } catch (e) {
    throw new TransportError(address, "listen", reasonOf(e));
  }
}
