/**
 * {@link TrafficLog}: the traffic log's writer. Every line in and out after
 * the handshake is batched into the store's log (received content lines
 * are logged by `store.receive`, in their own commit), and turned into a
 * `line` event while line events are on.
 *
 * @module
 */

import type { LineEvent, LineMessage, PeerEvent } from "./peer_events.ts";
import type { LogEntry, Store } from "../storage/store.ts";
import { timestamp } from "../wire/time.ts";
import { CONTENT_TYPES, MESSAGE_TYPES } from "../wire/types.ts";

/** The types this peer understands; others are ignored (and not logged). */
const KNOWN_TYPES: ReadonlySet<string> = new Set(MESSAGE_TYPES);

/** Received lines store.receive logs itself (content, and private). */
const LOGGED_BY_RECEIVE: ReadonlySet<string> = new Set([
  ...CONTENT_TYPES,
  "private",
]);
/** Handshake lines: no `line` event (they come before the peer is known, or are the resume). */
const HANDSHAKE: ReadonlySet<string> = new Set(["hello", "auth", "resume"]);
/**
 * Liveness lines: not written to the traffic log (a ping per connection
 * every 30 s would otherwise be a KV commit each; 10,000 idle connections
 * made a busy store). Nor is the resume: a commit on every handshake.
 */
const LIVENESS: ReadonlySet<string> = new Set(["ping", "pong"]);
const LOG_BATCH = 256;

/**
 * Batches traffic-log entries into the store, one write per microtask turn.
 *
 * @example
 * ```ts
 * import { TrafficLog } from "./traffic_log.ts";
 * import { openStore } from "../storage/open_store.ts";
 * const store = await openStore({ memory: true });
 * const log = new TrafficLog(store, () => {});
 * log.line("ed25519:x", "out", '{"t":"bye"}', { t: "bye" });
 * await log.flush();
 * console.log((await store.readLog({})).length); // 1
 * store.close();
 * ```
 */
export class TrafficLog {
  #store: Store;
  #emit: (event: PeerEvent) => void;
  #buffer: Omit<LogEntry, "seq">[] = [];
  #flushing: Promise<void> | undefined;
  /** Emit a `line` event for every line, or those accepted (`PeerOptions.lineEvents`). */
  lineEvents: boolean | ((dir: "in" | "out", t: string) => boolean) = false;

  /** Writes to `store`'s log; `line` events go to `emit`. */
  constructor(store: Store, emit: (event: PeerEvent) => void) {
    this.#store = store;
    this.#emit = emit;
  }

  /**
   * Every line after the handshake goes to the traffic log, batched (the
   * received content lines are logged by store.receive, in their commit,
   * and `logged` outbox entries by the store when queued).
   */
  line(
    peer: string | undefined,
    dir: "in" | "out",
    raw: string,
    parsed?: Record<string, unknown>,
    logged = false,
  ): void {
    // Without the parsed line: a local note, or a line the connection refused.
    const m = parsed;
    if (!peer || m === undefined || typeof m.t !== "string") return;
    let bare: Record<string, unknown> | undefined;
    if (m.t === "chunk") {
      const { data: _, ...rest } = m;
      bare = rest;
    } else if (dir === "in" && !KNOWN_TYPES.has(m.t)) {
      // Ignored (unknown type): its body is not ours to keep; only a note.
      bare = {
        t: m.t.slice(0, 64),
        ...(typeof m.id === "string" ? { id: m.id.slice(0, 64) } : {}),
        ignored: true,
        bytes: raw.length,
      };
    }
    const events = this.lineEvents;
    if (
      events && !HANDSHAKE.has(m.t) &&
      (events === true || events(dir, m.t))
    ) {
      this.#emit(
        {
          type: "line",
          peer,
          ts: timestamp(),
          dir,
          message: (bare ?? m) as LineMessage,
        } satisfies LineEvent,
      );
    }
    if (logged || (dir === "in" && LOGGED_BY_RECEIVE.has(m.t))) return;
    if (LIVENESS.has(m.t) || HANDSHAKE.has(m.t)) return;
    // Acks have no log rows: one per content line would double the log's
    // writes, and the acked line's own row and the `acked` event say it.
    if (m.t === "ack") return;
    const line = bare ? JSON.stringify(bare) : raw;
    this.#buffer.push({
      peer,
      dir,
      t: m.t,
      ...(typeof m.id === "string" ? { id: m.id } : {}),
      ...(typeof m.th === "string" ? { th: m.th } : {}),
      line,
      at: Date.now(),
    });
    if (!this.#flushing) {
      queueMicrotask(() => void this.flush().catch(() => {}));
    }
  }

  /** Writes the batched log lines; resolves when all are written. */
  flush(): Promise<void> {
    if (!this.#flushing && this.#buffer.length === 0) {
      return Promise.resolve();
    }
    this.#flushing ??= (async () => {
      try {
        while (this.#buffer.length > 0) {
          const batch = this.#buffer.splice(0, LOG_BATCH);
          await this.#store.log(batch);
        }
      } finally {
        this.#flushing = undefined;
      }
    })();
    return this.#flushing;
  }
}
