/**
 * The daemon's control socket: newline-delimited JSON over a private Unix
 * socket. One request per connection, `{"op":"send","args":{...}}`; the
 * daemon answers with zero or more `{"item":...}` lines (streams: tail,
 * wait, listen) and ends with `{"ok":true,"result":...}` or
 * `{"ok":false,"error":"one line","code":N}`. A client that hangs up ends
 * its stream.
 *
 * @module
 */

import { LineReader } from "../wire/line_reader.ts";
import { ensureSocketDir } from "./home.ts";
import { writeAll } from "../net/write_all.ts";
import { errorText } from "../wire/error_text.ts";

/** One request to the daemon. */
export interface ControlRequest {
  op: string;
  args: Record<string, unknown>;
}

/** A failure with the exit code the CLI should use (1 error, 2 usage/timeout, 3 no daemon). */
export class ControlError extends Error {
  /** Process exit code for this failure. */
  readonly code: number;
  /**
   * @example
   * ```ts
   * import { ControlError } from "./control.ts";
   * console.log(new ControlError("unknown peer", 1).code); // 1
   * ```
   */
  constructor(message: string, code = 1) {
    super(message);
    this.name = "ControlError";
    this.code = code;
  }
}

/** No daemon is running for this home (exit 3). */
export class NoDaemonError extends ControlError {
  /**
   * @example
   * ```ts
   * import { NoDaemonError } from "./control.ts";
   * console.log(new NoDaemonError("/tmp/h").code); // 3
   * ```
   */
  constructor(home: string) {
    super(`no daemon running for ${home} (start it with: awp up)`, 3);
    this.name = "NoDaemonError";
  }
}

/** Handles one request; `emit` streams an item; `signal` aborts when the client leaves. */
export type ControlHandler = (
  request: ControlRequest,
  emit: (item: unknown) => Promise<void>,
  signal: AbortSignal,
) => Promise<unknown>;

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** The listening side, in the daemon. */
export class ControlServer {
  readonly #listener: Deno.UnixListener;
  readonly #path: string;
  readonly #conns = new Set<Deno.UnixConn>();
  readonly #tasks = new Set<Promise<void>>();
  #closed = false;
  #accepting: Promise<void> | undefined;

  private constructor(listener: Deno.UnixListener, path: string) {
    this.#listener = listener;
    this.#path = path;
  }

  /**
   * Listens on `path` (mode 0600; a stale socket file is replaced) and
   * serves `handler`.
   *
   * @example
   * ```ts
   * import { ControlServer, controlCall } from "./control.ts";
   * const dir = await Deno.makeTempDir();
   * const server = await ControlServer.listen(`${dir}/c.sock`, async (req) => req.op);
   * console.log(await controlCall(`${dir}/c.sock`, dir, "ping", {})); // "ping"
   * await server.close();
   * await Deno.remove(dir, { recursive: true });
   * ```
   */
  static async listen(
    path: string,
    handler: ControlHandler,
  ): Promise<ControlServer> {
    await ensureSocketDir(path);
    await Deno.remove(path).catch(() => {});
    const listener = Deno.listen({ transport: "unix", path });
    await Deno.chmod(path, 0o600);
    const server = new ControlServer(listener, path);
    server.#accepting = server.#accept(handler);
    return server;
  }

  /** The socket path. */
  get path(): string {
    return this.#path;
  }

  async #accept(handler: ControlHandler): Promise<void> {
    try {
      for await (const conn of this.#listener) {
        if (this.#closed) {
          conn.close();
          break;
        }
        this.#conns.add(conn);
        const task = this.#serve(conn, handler).finally(() => {
          this.#conns.delete(conn);
          this.#tasks.delete(task);
        });
        this.#tasks.add(task);
      }
    } catch (error) {
      if (!this.#closed) throw error;
    }
  }

  async #serve(conn: Deno.UnixConn, handler: ControlHandler): Promise<void> {
    const reader = new LineReader();
    const buf = new Uint8Array(65536);
    let request: ControlRequest | undefined;
    let rest: Uint8Array[] = [];
    const closeQuietly = () => {
      try {
        conn.close();
      } catch { /* already closed */ }
    };
    try {
      while (!request) {
        const n = await conn.read(buf);
        if (n === null) return closeQuietly();
        for (const ev of reader.push(buf.subarray(0, n))) {
          if (ev.kind !== "line") {
            throw new ControlError("control request too large");
          }
          if (!request) request = parseRequest(decoder.decode(ev.bytes));
          else rest.push(ev.bytes);
        }
      }
      rest = [];
      const abort = new AbortController();
      // Keep reading: EOF means the client left, which ends a stream.
      const watch = (async () => {
        try {
          while ((await conn.read(buf)) !== null) { /* ignore extra input */ }
        } catch { /* closed */ }
        abort.abort();
      })();
      const write = async (value: unknown) => {
        if (abort.signal.aborted) return;
        await writeAll(conn, encoder.encode(JSON.stringify(value) + "\n"));
      };
      let reply: unknown;
      try {
        const result = await handler(
          request,
          (item) => write({ item }),
          abort.signal,
        );
        reply = { ok: true, result: result ?? null };
      } catch (error) {
        reply = errorReply(error);
      }
      await write(reply).catch(() => {});
      closeQuietly();
      await watch;
    } catch (error) {
      await writeAll(
        conn,
        encoder.encode(JSON.stringify(errorReply(error)) + "\n"),
      ).catch(() => {});
      closeQuietly();
    }
  }

  /** Stops listening, hangs up on clients and removes the socket file. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    try {
      this.#listener.close();
    } catch { /* already closed */ }
    for (const c of this.#conns) {
      try {
        c.close();
      } catch { /* already closed */ }
    }
    await this.#accepting?.catch(() => {});
    await Promise.allSettled([...this.#tasks]);
    await Deno.remove(this.#path).catch(() => {});
  }
}

function errorReply(
  error: unknown,
): { ok: false; error: string; code: number } {
  const code = error instanceof ControlError ? error.code : 1;
  return { ok: false, error: errorText(error), code };
}

function parseRequest(text: string): ControlRequest {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new ControlError("control request is not JSON");
  }
  const v = value as { op?: unknown; args?: unknown };
  if (typeof v !== "object" || v === null || typeof v.op !== "string") {
    throw new ControlError("control request needs a string op");
  }
  const args = typeof v.args === "object" && v.args !== null
    ? v.args as Record<string, unknown>
    : {};
  return { op: v.op, args };
}

/**
 * Sends one request to the daemon listening on `path` (for `home`, named in
 * errors) and resolves with its result; `onItem` receives streamed items.
 * Rejects with {@link NoDaemonError} when nothing listens, and with
 * {@link ControlError} carrying the daemon's one-line error otherwise.
 *
 * @example
 * ```ts
 * import { controlCall, NoDaemonError } from "./control.ts";
 * const dir = await Deno.makeTempDir();
 * await controlCall(`${dir}/none.sock`, dir, "status", {}).catch((e) => console.log(e instanceof NoDaemonError)); // true
 * await Deno.remove(dir, { recursive: true });
 * ```
 */
export async function controlCall(
  path: string,
  home: string,
  op: string,
  args: Record<string, unknown>,
  onItem?: (item: unknown) => void | Promise<void>,
  signal?: AbortSignal,
): Promise<unknown> {
  let conn: Deno.UnixConn;
  try {
    conn = await Deno.connect({ transport: "unix", path });
  } catch (error) {
    if (
      error instanceof Deno.errors.NotFound ||
      error instanceof Deno.errors.ConnectionRefused
    ) {
      throw new NoDaemonError(home);
    }
    if (error instanceof Deno.errors.PermissionDenied) {
      throw new ControlError(`permission denied on the control socket ${path}`);
    }
    throw error;
  }
  const onAbort = () => {
    try {
      conn.close();
    } catch { /* closed */ }
  };
  signal?.addEventListener("abort", onAbort, { once: true });
  try {
    await writeAll(conn, encoder.encode(JSON.stringify({ op, args }) + "\n"));
    const reader = new LineReader({ maxLineBytes: 64 * 1024 * 1024 });
    const buf = new Uint8Array(65536);
    while (true) {
      let n: number | null;
      try {
        n = await conn.read(buf);
      } catch (error) {
        if (signal?.aborted) throw new ControlError("interrupted", 1);
        throw error;
      }
      if (n === null) {
        if (signal?.aborted) throw new ControlError("interrupted", 1);
        throw new ControlError(
          "the daemon closed the control connection without answering",
        );
      }
      for (const ev of reader.push(buf.subarray(0, n))) {
        if (ev.kind !== "line") {
          throw new ControlError("control reply too large");
        }
        const msg = JSON.parse(decoder.decode(ev.bytes)) as {
          item?: unknown;
          ok?: boolean;
          result?: unknown;
          error?: string;
          code?: number;
        };
        if ("item" in msg) {
          await onItem?.(msg.item);
          continue;
        }
        if (msg.ok) return msg.result;
        throw new ControlError(msg.error ?? "daemon error", msg.code ?? 1);
      }
    }
  } finally {
    signal?.removeEventListener("abort", onAbort);
    onAbort();
  }
}
