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
 * Dialing uses the standard `WebSocket` client (wss verifies against the
 * system CA store, or `caCerts` through `Deno.createHttpClient`); a refused
 * upgrade (an HTTP status instead of 101, e.g. 502/503/504 from a sleeping
 * host's front) is a {@link TransportError} with `waking` set. Listening is
 * `Deno.serve` with `Deno.upgradeWebSocket`, plain or with TLS.
 *
 * Backpressure: `WebSocket` has none of its own, and `WebSocketStream` is
 * behind `--unstable-net` in Deno 2.9 and cannot take a private CA, so
 * writes watch `bufferedAmount`: a write resolves once its lines went to
 * the socket with less than {@link HIGH_WATER_BYTES} still buffered, and
 * otherwise waits for it to drain. Received messages queue while the owner
 * is busy and are handed over in batches (one chunk of many lines), which
 * keeps the group commit of the line layer as effective as on TCP.
 *
 * @module
 */

import {
  formatAddress,
  isPrivateHost,
  type WebSocketAddress,
} from "../wire/address.ts";
import { MAX_LINE_BYTES } from "../wire/frame.ts";
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
}

/** The socket may hold this much unsent before writes wait (4 MiB). */
export const HIGH_WATER_BYTES = 4 * 1024 * 1024;
/** Received messages are handed over in chunks of about this size. */
const BATCH_CHARS = 256 * 1024;
/** A message this long may be over 1 MiB once UTF-8 encoded: check alone. */
const SURE_FIT_CHARS = Math.floor(MAX_LINE_BYTES / 3);
const DIAL_TIMEOUT_MS = 30_000;
const NEWLINE = 0x0a;

const encoder = new TextEncoder();
const decoder = new TextDecoder();

type Inbound = string | { code: "bad_frame" | "too_large"; detail: string };

interface Pending {
  bytes: Uint8Array;
  resolve(): void;
  reject(error: Error): void;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** A {@link Transport} over one WebSocket (client or server side). */
export class WebSocketTransport implements Transport {
  readonly localAddr: string;
  readonly remoteAddr: string;
  #ws: WebSocket;
  #open: Promise<boolean>;
  #handlers: TransportHandlers | undefined;
  #inbound: Inbound[] = [];
  #delivering = false;
  #stopReading = false;
  /** Set once the socket closed under us: onEnd follows the queued input. */
  #ended: { error?: Error } | undefined;
  #endCalled = false;
  #queue: Pending[] = [];
  #partial: Uint8Array[] = [];
  #partialBytes = 0;
  #writing = false;
  #closed = false;
  #idle: Array<() => void> = [];

  /**
   * Wraps `ws` (open, or still connecting on the server side); messages
   * that arrive before {@link start} are kept.
   */
  constructor(ws: WebSocket, localAddr: string, remoteAddr: string) {
    this.#ws = ws;
    this.localAddr = localAddr;
    this.remoteAddr = remoteAddr;
    this.#open = ws.readyState === WebSocket.OPEN
      ? Promise.resolve(true)
      : new Promise((resolve) => {
        ws.addEventListener("open", () => resolve(true), { once: true });
        ws.addEventListener("close", () => resolve(false), { once: true });
      });
    ws.addEventListener("message", (e) => this.#onMessage(e));
    ws.addEventListener("close", (e) => this.#onClose(e));
  }

  get closed(): boolean {
    return this.#closed;
  }

  start(handlers: TransportHandlers): void {
    if (this.#handlers) throw new Error("transport already started");
    this.#handlers = handlers;
    void this.#pump();
  }

  #onMessage(e: MessageEvent): void {
    if (this.#closed || this.#stopReading) return;
    const data: unknown = e.data;
    if (typeof data !== "string") {
      this.#inbound.push({
        code: "bad_frame",
        detail: "binary WebSocket message (AWP lines are text messages)",
      });
      this.#stopReading = true;
    } else if (data.length > MAX_LINE_BYTES) {
      this.#inbound.push({
        code: "too_large",
        detail: `line of at least ${data.length} bytes exceeds 1 MiB`,
      });
      this.#stopReading = true;
    } else if (data.includes("\n")) {
      this.#inbound.push({
        code: "bad_frame",
        detail: "a newline inside a WebSocket message (one line per message)",
      });
      this.#stopReading = true;
    } else this.#inbound.push(data);
    void this.#pump();
  }

  #onClose(e: CloseEvent): void {
    if (this.#closed) return;
    // 1000 (normal), 1001 (going away) and 1005 (no code) are a clean end.
    const clean = e.code === 1000 || e.code === 1001 || e.code === 1005;
    this.#ended = clean ? {} : {
      error: new Error(
        `WebSocket closed (${e.code}${e.reason ? ` ${e.reason}` : ""})`,
      ),
    };
    this.#failWrites(new Error("transport closed"));
    void this.#pump();
  }

  /** Hands queued input to the owner, one batch at a time. */
  async #pump(): Promise<void> {
    const handlers = this.#handlers;
    if (!handlers || this.#delivering) return;
    this.#delivering = true;
    try {
      while (this.#inbound.length > 0 && !this.#closed) {
        const head = this.#inbound[0];
        if (typeof head !== "string") {
          this.#inbound = [];
          if (handlers.onFrameError) {
            await handlers.onFrameError(head.code, head.detail);
          } else {
            this.#ended = { error: new Error(head.detail) };
            this.#shut();
          }
          break;
        }
        const lines = this.#takeBatch();
        const chunk = encoder.encode(lines.join("\n") + "\n");
        if (lines.length === 1 && chunk.length - 1 > MAX_LINE_BYTES) {
          this.#inbound = [{
            code: "too_large",
            detail: `line of at least ${chunk.length - 1} bytes exceeds 1 MiB`,
          }];
          this.#stopReading = true;
          continue;
        }
        await handlers.onData(chunk);
      }
    } catch (error) {
      this.#ended ??= {
        error: error instanceof Error ? error : new Error(String(error)),
      };
      this.#shut();
    } finally {
      this.#delivering = false;
    }
    if (this.#ended && (this.#inbound.length === 0 || this.#closed)) {
      this.#end();
    }
  }

  /** Consecutive text messages up to BATCH_CHARS; a long one goes alone. */
  #takeBatch(): string[] {
    const lines: string[] = [];
    let chars = 0;
    let n = 0;
    while (n < this.#inbound.length) {
      const next = this.#inbound[n];
      if (typeof next !== "string") break;
      const long = next.length > SURE_FIT_CHARS;
      if (n > 0 && (long || chars + next.length > BATCH_CHARS)) break;
      lines.push(next);
      chars += next.length;
      n++;
      if (long) break;
    }
    this.#inbound.splice(0, n);
    return lines;
  }

  #end(): void {
    if (this.#endCalled || !this.#handlers) return;
    this.#endCalled = true;
    try {
      this.#handlers.onEnd(this.#ended?.error);
    } catch { /* the owner's problem */ }
  }

  write(frame: Uint8Array): Promise<void> {
    if (this.#closed || this.#ended) {
      return Promise.reject(new Error("transport closed"));
    }
    return new Promise<void>((resolve, reject) => {
      this.#queue.push({ bytes: frame, resolve, reject });
      if (!this.#writing) void this.#writeLoop();
    });
  }

  async #writeLoop(): Promise<void> {
    this.#writing = true;
    try {
      if (!await this.#open) {
        this.#failWrites(new Error("WebSocket closed before it opened"));
        return;
      }
      while (this.#queue.length > 0 && !this.#closed) {
        const pending = this.#queue[0];
        const ok = await this.#sendLines(pending.bytes);
        if (!ok) return;
        this.#queue.shift();
        pending.resolve();
      }
    } catch (e) {
      const error = new Error(
        `write failed: ${e instanceof Error ? e.message : String(e)}`,
      );
      this.#failWrites(error);
      this.#shut();
    } finally {
      this.#writing = false;
      if (this.#queue.length === 0) {
        for (const wake of this.#idle.splice(0)) wake();
      }
    }
  }

  /** Sends each complete line of `bytes` as one text message. */
  async #sendLines(bytes: Uint8Array): Promise<boolean> {
    let start = 0;
    for (;;) {
      const nl = bytes.indexOf(NEWLINE, start);
      if (nl < 0) break;
      while (this.#ws.bufferedAmount >= HIGH_WATER_BYTES) {
        await sleep(1);
        if (this.#closed || this.#ended) return false;
      }
      if (this.#closed || this.#ended) return false;
      const line = this.#partial.length === 0
        ? bytes.subarray(start, nl)
        : this.#joinPartial(bytes.subarray(start, nl));
      this.#ws.send(decoder.decode(line));
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
    return true;
  }

  #joinPartial(last: Uint8Array): Uint8Array {
    const out = new Uint8Array(this.#partialBytes + last.length);
    let at = 0;
    for (const piece of this.#partial) {
      out.set(piece, at);
      at += piece.length;
    }
    out.set(last, at);
    this.#partial = [];
    this.#partialBytes = 0;
    return out;
  }

  flush(): Promise<void> {
    if (!this.#writing && this.#queue.length === 0) return Promise.resolve();
    return new Promise((resolve) => this.#idle.push(resolve));
  }

  #failWrites(error: Error): void {
    for (const p of this.#queue.splice(0)) p.reject(error);
    for (const wake of this.#idle.splice(0)) wake();
  }

  /** Closes the socket; what was sent before still goes out first. */
  #shut(): void {
    try {
      this.#ws.close(1000);
    } catch { /* already closing */ }
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#inbound = [];
    this.#failWrites(new Error("transport closed"));
    this.#shut();
    this.#ended ??= {};
    if (!this.#delivering) queueMicrotask(() => this.#end());
    else void Promise.resolve().then(() => this.#end());
  }
}

function isIpLiteral(host: string): boolean {
  return host.includes(":") || /^[0-9.]+$/.test(host);
}

/** The URL the WebSocket client dials (port always spelled out). */
function urlOf(a: WebSocketAddress): string {
  const host = a.host.includes(":") ? `[${a.host}]` : a.host;
  return `${a.secure ? "wss" : "ws"}://${host}:${a.port}${a.path}`;
}

/**
 * Dials a `ws://` or `wss://` address with the standard WebSocket client.
 * Plain `ws:` to a public address is refused unless `allowPublic` (a host
 * name is checked against the address a TCP connect reaches). An HTTP
 * answer other than 101 is a TransportError with `waking` set.
 */
export async function dialWebSocket(
  address: string,
  a: WebSocketAddress,
  options: WebSocketDialOptions,
): Promise<WebSocketTransport> {
  const refusal =
    "plaintext ws: to a public address refused (use wss:, or set allowPublic or AWP_ALLOW_PLAINTEXT=1)";
  if (!a.secure && !options.allowPublic && !isPrivateHost(a.host)) {
    if (isIpLiteral(a.host)) throw new TransportError(address, "dial", refusal);
    let probe: Deno.TcpConn;
    try {
      probe = await Deno.connect({
        hostname: a.host,
        port: a.port,
        signal: options.signal,
      });
    } catch (e) {
      throw new TransportError(address, "dial", reasonText(e));
    }
    const remote = probe.remoteAddr.hostname;
    probe.close();
    if (!isPrivateHost(remote)) {
      throw new TransportError(address, "dial", refusal);
    }
  }
  if (options.signal?.aborted) {
    throw new TransportError(address, "dial", "aborted");
  }
  const client = options.caCerts?.length
    ? Deno.createHttpClient({ caCerts: options.caCerts })
    : undefined;
  let ws: WebSocket;
  try {
    ws = new WebSocket(urlOf(a), client ? { client } : undefined);
  } catch (e) {
    client?.close();
    throw new TransportError(address, "dial", reasonText(e));
  }
  // Once open, the client goes with the socket; a failed dial closes it below.
  let opened = false;
  if (client) {
    ws.addEventListener("close", () => {
      if (opened) client.close();
    }, { once: true });
  }
  const failure = await new Promise<
    { reason: string; waking?: boolean } | undefined
  >((resolve) => {
    const timer = setTimeout(
      () => resolve({ reason: "timed out" }),
      options.timeoutMs ?? DIAL_TIMEOUT_MS,
    );
    const abort = () => resolve({ reason: "aborted" });
    options.signal?.addEventListener("abort", abort, { once: true });
    const settle = (
      value: { reason: string; waking?: boolean } | undefined,
    ) => {
      clearTimeout(timer);
      options.signal?.removeEventListener("abort", abort);
      resolve(value);
    };
    ws.addEventListener("open", () => {
      opened = true;
      settle(undefined);
    }, { once: true });
    ws.addEventListener("error", (e) => settle(dialFailure(e)), {
      once: true,
    });
    ws.addEventListener("close", () => settle({ reason: "closed" }), {
      once: true,
    });
  });
  if (failure) {
    try {
      ws.close();
    } catch { /* not open */ }
    const known = failure.waking ||
      /^(connection refused|aborted|timed out|TLS)/.test(failure.reason);
    const status = known ? undefined : await httpStatus(a, client);
    client?.close();
    if (status !== undefined) {
      throw new TransportError(address, "dial", httpReason(status), {
        waking: true,
      });
    }
    throw new TransportError(address, "dial", failure.reason, {
      waking: failure.waking,
    });
  }
  return new WebSocketTransport(ws, "ws:client", formatAddress(a));
}

/**
 * The HTTP status the address answers a plain GET with, or undefined when
 * nothing answers. Over TLS Deno's client takes HTTP/2 when offered, and a
 * refused HTTP/2 upgrade is only "stream error" in the error event: this
 * one extra request, made only after a failed dial, tells a sleeping host's
 * front (502/503/504) or a refused upgrade from a dead address.
 */
async function httpStatus(
  a: WebSocketAddress,
  client: Deno.HttpClient | undefined,
): Promise<number | undefined> {
  const url = urlOf(a).replace(/^ws/, "http");
  try {
    const response = await fetch(url, {
      ...(client ? { client } : {}),
      signal: AbortSignal.timeout(10_000),
    });
    await response.body?.cancel();
    return response.status;
  } catch {
    return undefined;
  }
}

function httpReason(code: number): string {
  const why = code === 502 || code === 503 || code === 504
    ? "host unavailable, maybe waking"
    : "upgrade refused";
  return `HTTP ${code} (${why})`;
}

/** Reads Deno's error event: "... failed to connect to WebSocket: Invalid status code: 503". */
function dialFailure(e: Event): { reason: string; waking?: boolean } {
  const message = e instanceof ErrorEvent ? e.message : "";
  const status = /status code:?\s*(\d{3})/i.exec(message);
  if (status) return { reason: httpReason(Number(status[1])), waking: true };
  if (/tcp connect error|connection refused/i.test(message)) {
    return { reason: "connection refused" };
  }
  if (/certificate|tls|handshake/i.test(message)) {
    return { reason: `TLS: ${lastPart(message)}` };
  }
  return { reason: lastPart(message) || "failed" };
}

function lastPart(message: string): string {
  const line = message.split("\n")[0];
  return line.replace(/^.*failed to connect to WebSocket:\s*/i, "").trim();
}

function reasonText(e: unknown): string {
  if (e instanceof Deno.errors.ConnectionRefused) return "connection refused";
  const message = e instanceof Error ? e.message : String(e);
  return message.split("\n")[0].trim() || "failed";
}

/**
 * Serves AWP over WebSocket at `a` with `Deno.serve`: upgrades requests for
 * the address's path (any query), answers 404 elsewhere and 426 to plain
 * HTTP. wss needs `cert` and `key`. Plain ws on a public address, or from a
 * public client on a wildcard bind, needs `allowPublic`. Closing stops new
 * upgrades at once; the HTTP server itself stops when its last WebSocket
 * has closed (Deno's shutdown would close them all).
 */
export function listenWebSocket(
  address: string,
  a: WebSocketAddress,
  onTransport: (t: Transport) => void,
  options: WebSocketListenOptions,
): Listener {
  if (a.secure && !(options.cert && options.key)) {
    throw new TransportError(
      address,
      "listen",
      "wss: needs a TLS certificate and key (--cert FILE --key FILE)",
    );
  }
  const wildcard = a.host === "0.0.0.0" || a.host === "::";
  if (
    !a.secure && !options.allowPublic && !wildcard && !isPrivateHost(a.host)
  ) {
    throw new TransportError(
      address,
      "listen",
      "plaintext ws: on a public address refused (use wss:, or set allowPublic or AWP_ALLOW_PLAINTEXT=1)",
    );
  }
  const path = a.path.split("?")[0];
  let closing = false;
  let live = 0;
  let server: Deno.HttpServer<Deno.NetAddr>;
  const stopIfIdle = () => {
    if (closing && live === 0) void server.shutdown().catch(() => {});
  };
  const handler = (
    request: Request,
    info: Deno.ServeHandlerInfo<Deno.NetAddr>,
  ): Response => {
    if (closing) return new Response("listener closed\n", { status: 503 });
    if (new URL(request.url).pathname !== path) {
      return new Response("not an AWP endpoint\n", { status: 404 });
    }
    if (request.headers.get("upgrade")?.toLowerCase() !== "websocket") {
      return new Response(
        "AWP over WebSocket: connect with a WebSocket client\n",
        { status: 426, headers: { upgrade: "websocket" } },
      );
    }
    // Read before the upgrade: the request is gone after it.
    const remote = info.remoteAddr;
    if (!a.secure && !options.allowPublic && !isPrivateHost(remote.hostname)) {
      return new Response("plaintext from a public address refused\n", {
        status: 403,
      });
    }
    const { socket, response } = Deno.upgradeWebSocket(request);
    live++;
    socket.addEventListener("close", () => {
      live--;
      stopIfIdle();
    }, { once: true });
    const remoteText = formatAddress({
      kind: "tcp",
      host: remote.hostname,
      port: remote.port,
    });
    try {
      onTransport(new WebSocketTransport(socket, addr, remoteText));
    } catch { /* a throwing owner must not stop serving */ }
    return response;
  };
  try {
    server = Deno.serve({
      hostname: a.host,
      port: a.port,
      ...(a.secure ? { cert: options.cert!, key: options.key! } : {}),
      onListen() {},
      onError: () => new Response("internal error\n", { status: 500 }),
    }, handler);
  } catch (e) {
    throw new TransportError(address, "listen", listenReason(e));
  }
  const addr = formatAddress({ ...a, port: server.addr.port });
  const done = Promise.withResolvers<void>();
  return {
    addr,
    done: done.promise,
    close(): void {
      if (closing) return;
      closing = true;
      stopIfIdle();
      done.resolve();
    },
  };
}

function listenReason(e: unknown): string {
  if (e instanceof Deno.errors.AddrInUse) return "address already in use";
  if (e instanceof Deno.errors.AddrNotAvailable) return "address not available";
  if (e instanceof Deno.errors.PermissionDenied) return "permission denied";
  return reasonText(e);
}
