/**
 * The accept loop every listener shares (TCP, Unix, WebSocket): it keeps
 * accepting until closed, and a failed accept (out of file descriptors,
 * EMFILE/ENFILE, or a connection reset before we took it) pauses briefly,
 * with a doubling backoff up to one second, and goes on: a listener never
 * stops accepting for good.
 *
 * @module
 */

/** The first pause after a failed accept, in ms. */
const ACCEPT_BACKOFF_MS = 10;
/** The longest pause between failed accepts, in ms. */
const ACCEPT_BACKOFF_CAP_MS = 1_000;

/**
 * Accepts connections from `listener` and hands each to `take`, until
 * `closed()` is true (accept fails once the listener is closed). A `take`
 * that throws does not stop the loop.
 *
 * @example
 * ```ts
 * import { acceptEach } from "./accept_loop.ts";
 * const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
 * let closed = false;
 * const done = acceptEach(listener, () => closed, (conn) => conn.close());
 * closed = true;
 * listener.close();
 * await done;
 * ```
 */
export async function acceptEach(
  listener: Deno.Listener,
  closed: () => boolean,
  take: (conn: Deno.Conn) => void,
): Promise<void> {
  let backoff = ACCEPT_BACKOFF_MS;
  while (!closed()) {
    let conn: Deno.Conn;
    try {
      conn = await listener.accept();
    } catch {
      if (closed()) break;
      await new Promise((r) => setTimeout(r, backoff));
      backoff = Math.min(backoff * 2, ACCEPT_BACKOFF_CAP_MS);
      continue;
    }
    backoff = ACCEPT_BACKOFF_MS;
    try {
      take(conn);
    } catch { /* a throwing owner must not stop accepting */ }
  }
}

/** A running accept loop: {@link acceptLoop}. */
export interface AcceptLoop {
  /** Resolves once the loop has ended (after close). */
  readonly done: Promise<void>;
  /** Closes the listener (idempotent), then runs `afterClose` once. */
  close(): void;
}

/**
 * {@link acceptEach} until {@link AcceptLoop.close}, which closes `listener`
 * and then runs `afterClose` (e.g. removes a unix socket file).
 *
 * @example
 * ```ts
 * import { acceptLoop } from "./accept_loop.ts";
 * const loop = acceptLoop(
 *   Deno.listen({ hostname: "127.0.0.1", port: 0 }),
 *   (conn) => conn.close(),
 * );
 * loop.close();
 * await loop.done;
 * ```
 */
export function acceptLoop(
  listener: Deno.Listener,
  take: (conn: Deno.Conn) => void,
  afterClose?: () => void,
): AcceptLoop {
  let closed = false;
  return {
    done: acceptEach(listener, () => closed, take),
    close(): void {
      if (closed) return;
      closed = true;
      try {
        listener.close();
      } catch { /* already closed */ }
      afterClose?.();
    },
  };
}
