/**
 * The WebSocket binding: AWP over `ws://` and `wss://`, behind the same
 * {@link Transport} interface as TCP and Unix sockets, so the connection
 * actor does not know which one it has.
 *
 * The mapping (our binding, written down in the README):
 * - one AWP line is one WebSocket text message, without its "\n";
 * - a text message over 1 MiB is `err too_large`, a binary message or a
 *   text message holding a "\n" is `err bad_frame` (reported through
 *   `onFrameError`; the connection then errs and closes as on TCP);
 * - every other rule of the line layer is unchanged: the transport hands the
 *   owner the same bytes a TCP socket would (each message plus "\n").
 *
 * RFC 6455 runs here over Deno's own sockets (`Deno.connect`,
 * `Deno.connectTls` with `caCerts`, `Deno.listen`, `Deno.listenTls`), with
 * the framing in net/websocket_frames.ts, rather than over the
 * `WebSocket` class and `Deno.upgradeWebSocket`: those read every message
 * as fast as it comes, whatever the owner's pace, so a fast sender grew a
 * slow receiver's memory without bound (measured: +143 MiB over idle for a
 * 50 MiB file, against +42 MiB over TCP), and `WebSocketStream`, which has
 * read backpressure, is behind `--unstable-net` and cannot take a private
 * CA. Here a read waits for the owner and a write for the kernel, both
 * ways (TCP reads ahead by one buffer at most, net/read_ahead.ts). A refused upgrade (any HTTP status but 101, e.g.
 * 502/503/504 from a sleeping host's front) is a {@link TransportError}
 * with `waking` set.
 *
 * @module
 */

import { acceptLoop } from "./accept_loop.ts";
import {
  type Address,
  formatAddress,
  isPrivateHost,
  type WebSocketAddress,
} from "../wire/address.ts";
import { errorText } from "../wire/error_text.ts";
import { MAX_LINE_BYTES } from "../wire/frame.ts";
import {
  acceptKey,
  concat,
  encodeFrame,
  FrameDecoder,
  type FrameEvent,
  frameStart,
  hasNewline,
  hasToken,
  headerSize,
  MAX_HEAD_BYTES,
  OP,
  parseHttpHead,
  writeFrame,
} from "./websocket_frames.ts";
import { ConnectionGate, type ConnectionLimits } from "./connection_gate.ts";
import { softFdLimit } from "./fd_limit.ts";
import { BatchedWriter } from "./batched_writer.ts";
import { writeAll } from "./write_all.ts";
import {
  isIpLiteral,
  socketAddressText as addrText,
  socketErrorReason,
} from "./socket_text.ts";
// A cycle with transport.ts (which dispatches ws: here): safe, as neither
// module uses the other while it is being evaluated.
import {
  type Listener,
  type Transport,
  TransportError,
  type TransportHandlers,
} from "./transport.ts";

/** Options of {@link dialWebSocket}. */
export interface WebSocketDialOptions {
  /** Allow plaintext `ws:` to a public address. */
  allowPublic: boolean;
  /** Aborts the attempt. */
  signal?: AbortSignal;
  /** Extra trusted CA certificates (PEM) for wss, e.g. a private CA. */
  caCerts?: string[];
  /** How long the TCP, TLS and HTTP upgrade may take (30 s). */
  timeoutMs?: number;
}

/** Options of {@link listenWebSocket}. */
export interface WebSocketListenOptions {
  /** Accept plaintext `ws:` on or from public addresses. */
  allowPublic: boolean;
  /** TLS certificate chain (PEM), required for wss. */
  cert?: string;
  /** TLS private key (PEM), required for wss. */
  key?: string;
  /** Bounds on accepted connections, as for TCP (connection_gate.ts). */
  limits?: ConnectionLimits;
}

/** As for TCP (transport.ts): a burst's chunk lines mostly come whole. */
const READ_BYTES = 1024 * 1024;
const IDLE_READ_BYTES = 1024;
/** Lines handed over up to this size get a buffer of their own. */
const SMALL_JOIN_BYTES = 64 * 1024;
/** A frame this big is written into the ring of frames (#frameRoom). */
const RING_FRAME_BYTES = 64 * 1024;
/**
 * The ring: more than one batch of the writer (net/batched_writer.ts cuts
 * at 256 KiB, or one bigger item), a few chunk lines.
 */
const RING_BYTES = 2 * 1024 * 1024;
/** The ring goes once no big frame was written for this long. */
const RING_IDLE_MS = 1_000;
const DIAL_TIMEOUT_MS = 30_000;
/** How long an accepted connection may take to send its upgrade request. */
const UPGRADE_TIMEOUT_MS = 10_000;
/** How long a polite close frame may take before the socket just closes. */
const CLOSE_MS = 1_000;
const NEWLINE = 0x0a;
const NORMAL_CLOSE = new Uint8Array([0x03, 0xe8]); // 1000

/** A {@link Transport} over one WebSocket on a Deno socket (either side). */
export class WebSocketTransport implements Transport {
  readonly localAddr: string;
  readonly remoteAddr: string;
  #conn: Deno.Conn;
  #masked: boolean;
  #decoder: FrameDecoder;
  #leftover: Uint8Array;
  #writer: BatchedWriter;
  #partial: Uint8Array[] = [];
  #partialBytes = 0;
  /** The lines of a big read, joined for `onData` (reused; see #join). */
  #joined: Uint8Array | undefined;
  /** Big frames are framed here, in turn (see #frameRoom). */
  #ring: Uint8Array | undefined;
  #ringAt = 0;
  #ringUsed = 0;
  #started = false;
  #closeSent = false;

  /**
   * Wraps `conn` after the opening handshake; `leftover` holds bytes that
   * came after the HTTP head. A client masks what it sends (RFC 6455 5.3).
   */
  constructor(
    conn: Deno.Conn,
    side: "client" | "server",
    addrs: { local: string; remote: string },
    leftover: Uint8Array = new Uint8Array(0),
  ) {
    this.#conn = conn;
    this.#masked = side === "client";
    this.#decoder = new FrameDecoder(side);
    this.#leftover = leftover;
    this.#writer = new BatchedWriter(conn, {
      encode: (lines) => this.#frameLines(lines),
      onFail: () => this.#closeSocket(),
    });
    this.localAddr = addrs.local;
    this.remoteAddr = addrs.remote;
    if (conn.remoteAddr.transport === "tcp") {
      try {
        (conn as Deno.TcpConn).setNoDelay?.(true);
      } catch { /* TLS conns or not fatal */ }
    }
  }

  get closed(): boolean {
    return this.#writer.closed;
  }

  start(handlers: TransportHandlers): void {
    if (this.#started) throw new Error("transport already started");
    this.#started = true;
    void this.#readLoop(handlers);
  }

  async #readLoop(handlers: TransportHandlers): Promise<void> {
    let error: Error | undefined;
    try {
      let go = true;
      if (this.#leftover.length > 0) {
        go = await this.#handle(handlers, this.#decoder.push(this.#leftover));
      }
      // Reads start small (an idle connection holds 1 KiB) and take 1 MiB
      // at a time from a read that filled its room until a small one.
      let want = IDLE_READ_BYTES;
      while (go && !this.#writer.closed) {
        const room = this.#decoder.space(want);
        const n = await this.#conn.read(room);
        if (n === null) break;
        const events = this.#decoder.wrote(n);
        want = n >= room.length ? READ_BYTES : IDLE_READ_BYTES;
        if (n < IDLE_READ_BYTES) {
          this.#decoder.shrink();
          this.#joined = undefined;
        }
        go = await this.#handle(handlers, events);
      }
    } catch (e) {
      const thrown = e instanceof Error ? e : new Error(errorText(e));
      // Reads interrupted by our own close() are a normal end; our own
      // protocol verdicts ("WebSocket ...") are not.
      if (!this.#writer.closed || thrown.message.startsWith("WebSocket")) {
        error = thrown;
      }
    }
    if (error) this.#fail(error);
    try {
      handlers.onEnd(error);
    } catch { /* the owner's problem; never crash the loop */ }
  }

  /** Hands the lines of one read over as one chunk; false: stop reading. */
  async #handle(
    handlers: TransportHandlers,
    events: FrameEvent[],
  ): Promise<boolean> {
    // Views of the decoder's buffer, valid until the next read.
    const lines: Uint8Array[] = [];
    const deliver = async () => {
      if (lines.length === 0) return;
      const chunk = this.#join(lines);
      lines.length = 0;
      await handlers.onData(chunk);
    };
    for (const ev of events) {
      if (ev.kind === "text") lines.push(ev.bytes);
      else if (ev.kind === "ping") {
        this.#sendRaw(encodeFrame(OP.pong, ev.payload, this.#masked))
          .catch(() => {}); // closing anyway
      } else if (ev.kind === "fault") {
        await deliver();
        if (handlers.onFrameError) {
          // The owner errs and closes; reading on would only discard.
          await handlers.onFrameError(ev.code, ev.detail);
        } else throw new Error(`WebSocket: ${ev.detail}`);
      } else if (ev.kind === "protocol") {
        await deliver();
        await this.#closeWith(ev.status);
        throw new Error(`WebSocket protocol error: ${ev.detail}`);
      } else if (ev.kind === "close") {
        await deliver();
        await this.#closeWith(1000);
        return false;
      }
    }
    await deliver();
    return true;
  }

  /**
   * Lines as the byte stream TCP would carry, each followed by "\n"; a big
   * read's go into one reused buffer (valid, like TCP's, until `onData`
   * settles), so a burst of chunk lines allocates nothing here.
   */
  #join(lines: Uint8Array[]): Uint8Array {
    let size = lines.length;
    for (const l of lines) size += l.length;
    let out: Uint8Array;
    if (size <= SMALL_JOIN_BYTES) out = new Uint8Array(size);
    else {
      if (this.#joined === undefined || this.#joined.length < size) {
        this.#joined = new Uint8Array(Math.max(size, READ_BYTES));
      }
      out = this.#joined.subarray(0, size);
    }
    let at = 0;
    for (const l of lines) {
      out.set(l, at);
      at += l.length;
      out[at++] = NEWLINE;
    }
    return out;
  }

  /** Answers or sends a close frame, waits briefly for it, closes the socket. */
  async #closeWith(status: number): Promise<void> {
    if (!this.#closeSent) {
      this.#closeSent = true;
      const payload = new Uint8Array([status >> 8, status & 255]);
      const sent = this.#sendRaw(encodeFrame(OP.close, payload, this.#masked));
      let timer: ReturnType<typeof setTimeout> | undefined;
      await Promise.race([
        sent.catch(() => {}),
        new Promise<void>((r) => timer = setTimeout(r, CLOSE_MS)),
      ]);
      clearTimeout(timer);
    }
    this.#fail(new Error("transport closed"));
  }

  #sendRaw(frame: Uint8Array): Promise<void> {
    return this.#writer.write(frame, true);
  }

  write(frame: Uint8Array): Promise<void> {
    if (this.#closeSent) return Promise.reject(new Error("transport closed"));
    return this.#writer.write(frame);
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

  /** Each complete line of `bytes` as one text frame; a tail waits. */
  #frameLines(bytes: Uint8Array): Uint8Array {
    const lines: Uint8Array[] = [];
    let start = 0;
    // A big write that is one whole line (a chunk line, as the connection
    // writes them): checked a word at a time, not split byte by byte.
    const last = bytes.length - 1;
    if (
      last >= RING_FRAME_BYTES && bytes[last] === NEWLINE &&
      this.#partial.length === 0 && !hasNewline(bytes.subarray(0, last))
    ) {
      lines.push(bytes.subarray(0, last));
      start = bytes.length;
    }
    while (start < bytes.length) {
      const nl = bytes.indexOf(NEWLINE, start);
      if (nl < 0) break;
      let line = bytes.subarray(start, nl);
      if (this.#partial.length > 0) {
        line = concat([...this.#partial, line]);
        this.#partial = [];
        this.#partialBytes = 0;
      }
      lines.push(line);
      start = nl + 1;
    }
    if (start < bytes.length) {
      // A line split over writes waits for its end; never beyond 2 MiB.
      this.#partialBytes += bytes.length - start;
      if (this.#partialBytes > 2 * MAX_LINE_BYTES) {
        throw new Error("a line longer than 2 MiB without a newline");
      }
      this.#partial.push(bytes.slice(start));
    }
    let size = 0;
    for (const l of lines) {
      size += headerSize(l.length, this.#masked) + l.length;
    }
    if (lines.length === 1 && size >= RING_FRAME_BYTES) {
      const room = this.#frameRoom(size + 3);
      if (room) {
        const at = frameStart(room, lines[0], this.#masked);
        return room.subarray(
          at,
          writeFrame(room, at, OP.text, lines[0], this.#masked),
        );
      }
    } else if (this.#ring && Date.now() - this.#ringUsed > RING_IDLE_MS) {
      this.#ring = undefined; // a blob is over: idle connections stay small
    }
    const out = new Uint8Array(size);
    let at = 0;
    for (const l of lines) {
      at = writeFrame(out, at, OP.text, l, this.#masked);
    }
    return out;
  }

  /**
   * `size` bytes of the ring, after the last ones taken, or from its start
   * when they do not fit; undefined for a frame bigger than the ring. The
   * writer writes a batch before it encodes the next, and a batch's big
   * frames fit in the ring together, so a frame is written before its
   * bytes are taken again (a chunk line costs no allocation).
   */
  #frameRoom(size: number): Uint8Array | undefined {
    if (size > RING_BYTES) return undefined;
    this.#ring ??= new Uint8Array(RING_BYTES);
    this.#ringUsed = Date.now();
    if (this.#ringAt + size > RING_BYTES) this.#ringAt = 0;
    const room = this.#ring.subarray(this.#ringAt, this.#ringAt + size);
    this.#ringAt += size;
    return room;
  }

  flush(): Promise<void> {
    return this.#writer.flush();
  }

  #fail(error: Error): void {
    if (this.#writer.fail(error)) this.#closeSocket();
  }

  #closeSocket(): void {
    try {
      this.#conn.close();
    } catch { /* already closed */ }
  }

  close(): void {
    if (this.#writer.closed) return;
    if (this.#closeSent || this.#writer.writing) {
      // A frame is half written, or close already said: just close.
      this.#fail(new Error("transport closed"));
      return;
    }
    // A polite close frame, best effort and bounded, then the socket.
    this.#closeSent = true;
    const frame = encodeFrame(OP.close, NORMAL_CLOSE, this.#masked);
    this.#writer.fail(new Error("transport closed")); // nothing is queued
    const conn = this.#conn;
    let timer: ReturnType<typeof setTimeout> | undefined;
    void Promise.race([
      conn.write(frame).catch(() => 0),
      new Promise((r) => timer = setTimeout(r, CLOSE_MS)),
    ]).finally(() => {
      clearTimeout(timer);
      try {
        conn.close();
      } catch { /* already closed */ }
    });
  }
}

/** A socket error in one line; a TLS failure says so. */
function reasonText(e: unknown): string {
  const line = socketErrorReason(e);
  return /certificate|tls|handshake/i.test(line) ? `TLS: ${line}` : line;
}

function httpReason(code: number): string {
  const why = code === 502 || code === 503 || code === 504
    ? "host unavailable, maybe waking"
    : "upgrade refused";
  return `HTTP ${code} (${why})`;
}

/** Reads an HTTP head from `conn`; the bytes after it are `rest`. */
async function readHead(
  conn: Deno.Conn,
): Promise<{ start: string; headers: Map<string, string>; rest: Uint8Array }> {
  const buf = new Uint8Array(MAX_HEAD_BYTES);
  let len = 0;
  for (;;) {
    if (len === buf.length) throw new Error("HTTP head too large");
    const n = await conn.read(buf.subarray(len));
    if (n === null) throw new Error("closed during the WebSocket handshake");
    len += n;
    const parsed = parseHttpHead(buf.subarray(0, len));
    if (parsed) {
      return { ...parsed.head, rest: buf.slice(parsed.rest, len) };
    }
  }
}

/** Runs `task`, closing `conn` (which fails the task) after `ms`. */
async function bounded<T>(
  conn: Deno.Conn,
  ms: number,
  signal: AbortSignal | undefined,
  task: () => Promise<T>,
): Promise<{ value?: T; error?: unknown; why?: "timed out" | "aborted" }> {
  let why: "timed out" | "aborted" | undefined;
  const stop = (reason: "timed out" | "aborted") => {
    why ??= reason;
    try {
      conn.close();
    } catch { /* closed */ }
  };
  const timer = setTimeout(() => stop("timed out"), ms);
  const abort = () => stop("aborted");
  signal?.addEventListener("abort", abort, { once: true });
  try {
    return { value: await task() };
  } catch (error) {
    return { error, why };
  } finally {
    clearTimeout(timer);
    signal?.removeEventListener("abort", abort);
  }
}

/**
 * Dials a `ws://` or `wss://` address: TCP (or TLS, verified against the
 * system store plus `caCerts`), then the HTTP/1.1 upgrade. Plain `ws:` to
 * a public address is refused unless `allowPublic` (a host name is checked
 * against the address it reached). An HTTP answer other than 101 is a
 * TransportError with `waking` set.
 *
 * @example
 * ```ts
 * import { dialWebSocket, listenWebSocket } from "./websocket_transport.ts";
 * import { parseAddress, type WebSocketAddress } from "../wire/address.ts";
 * const at = parseAddress("ws://127.0.0.1:0/awp") as WebSocketAddress;
 * const listener = listenWebSocket("ws://127.0.0.1:0/awp", at, (t) => t.close(), {
 *   allowPublic: false,
 * });
 * const addr = listener.addr; // ws://127.0.0.1:PORT/awp
 * const t = await dialWebSocket(addr, parseAddress(addr) as WebSocketAddress, {
 *   allowPublic: false,
 * });
 * t.close();
 * listener.close();
 * await listener.done;
 * ```
 */
export async function dialWebSocket(
  address: string,
  a: WebSocketAddress,
  options: WebSocketDialOptions,
): Promise<Transport> {
  const refusal =
    "plaintext ws: to a public address refused (use wss:, or set allowPublic or AWP_ALLOW_PLAINTEXT=1)";
  const fail = (reason: string, waking = false) =>
    new TransportError(address, "dial", reason, { waking });
  if (
    !a.secure && !options.allowPublic && isIpLiteral(a.host) &&
    !isPrivateHost(a.host)
  ) {
    throw fail(refusal);
  }
  if (options.signal?.aborted) throw fail("aborted");
  let conn: Deno.Conn;
  try {
    conn = a.secure
      ? await Deno.connectTls({
        hostname: a.host,
        port: a.port,
        ...(options.caCerts?.length ? { caCerts: options.caCerts } : {}),
        alpnProtocols: ["http/1.1"],
      })
      : await Deno.connect({
        hostname: a.host,
        port: a.port,
        signal: options.signal,
      });
  } catch (e) {
    throw fail(options.signal?.aborted ? "aborted" : reasonText(e));
  }
  if (
    !a.secure && !options.allowPublic && conn.remoteAddr.transport === "tcp" &&
    !isPrivateHost(conn.remoteAddr.hostname)
  ) {
    conn.close();
    throw fail(refusal);
  }
  const key = btoa(
    String.fromCharCode(...crypto.getRandomValues(new Uint8Array(16))),
  );
  const host = a.host.includes(":") ? `[${a.host}]` : a.host;
  const fallback = a.secure ? 443 : 80;
  const request = `GET ${a.path} HTTP/1.1\r\n` +
    `Host: ${host}${a.port === fallback ? "" : `:${a.port}`}\r\n` +
    "Upgrade: websocket\r\nConnection: Upgrade\r\n" +
    `Sec-WebSocket-Key: ${key}\r\nSec-WebSocket-Version: 13\r\n` +
    "User-Agent: awp-peer\r\n\r\n";
  const result = await bounded(
    conn,
    options.timeoutMs ?? DIAL_TIMEOUT_MS,
    options.signal,
    async () => {
      const bytes = new TextEncoder().encode(request);
      await writeAll(conn, bytes);
      return await readHead(conn);
    },
  );
  if (!result.value) {
    try {
      conn.close();
    } catch { /* closed */ }
    throw fail(result.why ?? reasonText(result.error));
  }
  const head = result.value;
  const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(head.start)?.[1] ?? NaN);
  const reject = (reason: string, waking = false) => {
    try {
      conn.close();
    } catch { /* closed */ }
    return fail(reason, waking);
  };
  if (Number.isNaN(status)) throw reject("not an HTTP answer");
  if (status !== 101) throw reject(httpReason(status), true);
  if (
    !hasToken(head.headers.get("upgrade"), "websocket") ||
    head.headers.get("sec-websocket-accept") !== await acceptKey(key)
  ) {
    throw reject("bad WebSocket handshake answer");
  }
  return new WebSocketTransport(
    conn,
    "client",
    { local: addrText(conn.localAddr), remote: formatAddress(a) },
    head.rest,
  );
}

/**
 * Serves AWP over WebSocket at `a`: upgrades GET requests for the address's
 * path (any query); answers 404 elsewhere and 426 to plain HTTP. wss needs
 * `cert` and `key`. Plain ws on a public address, or from a public client
 * on a wildcard bind, needs `allowPublic`. Closing stops accepting; open
 * connections stay, as with TCP. See {@link dialWebSocket} for an example.
 */
export function listenWebSocket(
  address: string,
  a: WebSocketAddress,
  onTransport: (t: Transport) => void,
  options: WebSocketListenOptions,
): Listener {
  const fail = (reason: string) =>
    new TransportError(address, "listen", reason);
  if (a.secure && !(options.cert && options.key)) {
    throw fail("wss: needs a TLS certificate and key (--cert FILE --key FILE)");
  }
  const wildcard = a.host === "0.0.0.0" || a.host === "::";
  if (
    !a.secure && !options.allowPublic && !wildcard && !isPrivateHost(a.host)
  ) {
    throw fail(
      "plaintext ws: on a public address refused (use wss:, or set allowPublic or AWP_ALLOW_PLAINTEXT=1)",
    );
  }
  let inner: Deno.Listener;
  try {
    inner = a.secure
      ? Deno.listenTls({
        hostname: a.host,
        port: a.port,
        cert: options.cert!,
        key: options.key!,
        alpnProtocols: ["http/1.1"],
      })
      : Deno.listen({ hostname: a.host, port: a.port });
  } catch (e) {
    throw fail(reasonText(e));
  }
  const addr = formatAddress({
    ...a,
    port: (inner.addr as Deno.NetAddr).port,
  } as Address);
  const path = a.path.split("?")[0];
  // The same bounds as TCP; the HTTP upgrade counts as handshake time.
  const gate = new ConnectionGate(options.limits, softFdLimit());
  const loop = acceptLoop(inner, (conn) => {
    const ticket = gate.admitSocket(conn, a.secure || options.allowPublic);
    if (ticket === undefined) return;
    void upgrade(conn, path, addr, (t) => onTransport(gate.wrap(t, ticket)))
      .then((upgraded) => {
        if (!upgraded) ticket.release();
      });
  });
  return { addr, done: loop.done, close: loop.close };
}

/**
 * The server side of the opening handshake on one accepted socket; true
 * once the socket is handed to `onTransport` as a WebSocket.
 */
async function upgrade(
  conn: Deno.Conn,
  path: string,
  addr: string,
  onTransport: (t: Transport) => void,
): Promise<boolean> {
  const result = await bounded(
    conn,
    UPGRADE_TIMEOUT_MS,
    undefined,
    () => readHead(conn),
  );
  const head = result.value;
  if (!head) {
    try {
      conn.close();
    } catch { /* closed */ }
    return false;
  }
  const answer = async (status: string, text: string, extra = "") => {
    const body = `${text}\n`;
    const bytes = new TextEncoder().encode(
      `HTTP/1.1 ${status}\r\nContent-Type: text/plain\r\n` +
        `Content-Length: ${body.length}\r\nConnection: close\r\n${extra}\r\n${body}`,
    );
    try {
      await writeAll(conn, bytes);
    } catch { /* gone */ }
    try {
      conn.close();
    } catch { /* closed */ }
    return false;
  };
  const [method, target] = head.start.split(" ");
  const h = head.headers;
  if (method !== "GET") return answer("405 Method Not Allowed", "GET only");
  if ((target ?? "").split("?")[0] !== path) {
    return answer("404 Not Found", "not an AWP endpoint");
  }
  if (!hasToken(h.get("upgrade"), "websocket")) {
    return answer(
      "426 Upgrade Required",
      "AWP over WebSocket: connect with a WebSocket client",
      "Upgrade: websocket\r\n",
    );
  }
  if (h.get("sec-websocket-version") !== "13") {
    return answer(
      "426 Upgrade Required",
      "WebSocket version 13 only",
      "Sec-WebSocket-Version: 13\r\n",
    );
  }
  const key = h.get("sec-websocket-key");
  if (!hasToken(h.get("connection"), "upgrade") || !key) {
    return answer("400 Bad Request", "not a WebSocket upgrade");
  }
  const bytes = new TextEncoder().encode(
    "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n" +
      `Connection: Upgrade\r\nSec-WebSocket-Accept: ${await acceptKey(
        key,
      )}\r\n\r\n`,
  );
  try {
    await writeAll(conn, bytes);
  } catch {
    try {
      conn.close();
    } catch { /* closed */ }
    return false;
  }
  try {
    onTransport(
      new WebSocketTransport(
        conn,
        "server",
        { local: addr, remote: addrText(conn.remoteAddr) },
        head.rest,
      ),
    );
  } catch { /* a throwing owner must not stop serving */ }
  return true;
}
