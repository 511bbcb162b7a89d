/**
 * The coding-agent profile inside a Peer (PROFILE.md): classifies the
 * request parts of each received msg against the sender's capabilities,
 * answers forbidden ones with `err forbidden` (after the msg's ack, which
 * the connection already sent), and runs the ones this peer serves in the
 * background, so a long exec never holds up the connection's other lines.
 *
 * The results go back through `reply` (the Peer's `send`, so they are
 * outboxed, acked and replayed like any msg); temporary attachments are
 * removed once `reply` resolved (the blobs were snapshotted into the spool).
 *
 * @module
 */

import {
  findRequests,
  type ProfileCap,
  type ProfileRequest,
  type RequestMsg,
  type ResultReply,
  SERVABLE_CAPS,
  type ServeRecord,
  serveRequest,
} from "./profile.ts";
import type { Attachment } from "./fs_access.ts";

/** How a request part of a msg was classified, for the message event. */
export interface RequestInfo {
  /** The capability the request needs. */
  cap: ProfileCap;
  /** The request part's mime type. */
  mime: string;
  /** The sender holds the capability. */
  allowed: boolean;
  /** Allowed, and this peer performs it itself (a result msg follows). */
  served: boolean;
}

/** Options of {@link RequestServer}. */
export interface RequestServerOptions {
  /** Capabilities served here (`--serve`; none by default). */
  serve?: Iterable<string>;
  /** The served root (`--root`; default the working directory). */
  root?: string;
  /** Directories never served, whatever the root (the awp home). */
  protect?: readonly string[];
  /** Environment variables exec passes on beyond the minimal set. */
  execEnvPass?: readonly string[];
  /** Where exec output and read ranges are written before they go as blobs. */
  spoolDir: string;
  /** Exec timeout override in ms (tests). */
  execTimeoutMs?: number;
  /** The sender's capabilities. */
  capsOf(peer: string, presented: readonly unknown[]): Promise<Set<string>>;
  /** Sends `err forbidden` re the msg (best effort, on the connection). */
  forbid(peer: string, err: { code: string; re: string; detail: string }): void;
  /** Sends a result msg with its attachments; resolves once queued. */
  reply(peer: string, reply: ResultReply, files: Attachment[]): Promise<void>;
  /** Every served request (the serve log). */
  onServed?(record: ServeRecord): void;
  /** A result that could not be queued. */
  onError?(peer: string, detail: string): void;
}

/**
 * Serves profile requests for one Peer.
 *
 * @example
 * ```ts
 * import { RequestServer } from "./peer_requests.ts";
 * const spoolDir = await Deno.makeTempDir();
 * const server = new RequestServer({
 *   spoolDir,
 *   capsOf: () => Promise.resolve(new Set<string>()),
 *   forbid: (_, err) => console.log(err.code), // "forbidden"
 *   reply: () => Promise.resolve(),
 * });
 * const msg = { id: "m1", th: "t1", parts: [{ k: "data", mime: "application/vnd.awp.exec+json", data: { cmd: "ls" } }] };
 * const infos = await server.handle("ed25519:x", msg, []);
 * console.log(infos[0].allowed); // false
 * await server.close();
 * ```
 */
export class RequestServer {
  #o: RequestServerOptions;
  #serve: Set<string>;
  #root: string;
  #running = new Set<Promise<void>>();
  #abort = new AbortController();

  /** Throws a one-line TypeError on a capability that cannot be served. */
  constructor(options: RequestServerOptions) {
    this.#o = options;
    this.#serve = new Set();
    for (const cap of options.serve ?? []) {
      if (!(SERVABLE_CAPS as readonly string[]).includes(cap)) {
        throw new TypeError(
          `serve: unknown capability ${JSON.stringify(cap)} (use ${
            SERVABLE_CAPS.join(", ")
          })`,
        );
      }
      this.#serve.add(cap);
    }
    this.#root = options.root ?? Deno.cwd();
  }

  /** The capabilities served here. */
  get serving(): string[] {
    return [...this.#serve];
  }

  /** Requests being served now. */
  get running(): number {
    return this.#running.size;
  }

  /**
   * Classifies the requests of a received (committed, acked) msg, sends the
   * forbidden errs and starts the served ones. Resolves with what the
   * message event reports; `[]` for a msg without requests. Never throws.
   */
  async handle(
    peer: string,
    msg: RequestMsg,
    presented: readonly unknown[],
  ): Promise<RequestInfo[]> {
    // Cheap test first: most messages carry no request.
    if (findRequests(msg, { caps: new Set(), serve: new Set() }).length === 0) {
      return [];
    }
    let caps: Set<string>;
    try {
      caps = await this.#o.capsOf(peer, presented);
    } catch {
      caps = new Set(); // cannot tell: nothing is allowed
    }
    const requests = findRequests(msg, { caps, serve: this.#serve });
    const forbidden = requests.filter((r) => !r.allowed);
    if (forbidden.length > 0) {
      // One err per msg: `re` names the msg, the detail every missing cap.
      const missing = [...new Set(forbidden.map((r) => r.cap))];
      this.#o.forbid(peer, {
        code: "forbidden",
        re: msg.id,
        detail: `${
          forbidden.map((r) => r.mime).join(", ")
        } requires a grant for ${
          missing.map((c) => JSON.stringify(c)).join(", ")
        }`,
      });
    }
    for (const request of requests) {
      if (request.served) this.#start(peer, msg, request);
    }
    return requests.map((r) => ({
      cap: r.cap,
      mime: r.mime,
      allowed: r.allowed,
      served: r.served,
    }));
  }

  /** Kills running commands and waits for the served requests to finish. */
  async close(): Promise<void> {
    this.#abort.abort();
    while (this.#running.size > 0) {
      await Promise.allSettled([...this.#running]);
    }
  }

  #start(peer: string, msg: RequestMsg, request: ProfileRequest): void {
    if (this.#abort.signal.aborted) return;
    const run = (async () => {
      const outcome = await serveRequest(msg, request, {
        caps: new Set([request.cap]),
        serve: this.#serve,
        root: this.#root,
        ...(this.#o.protect ? { protect: this.#o.protect } : {}),
        ...(this.#o.execEnvPass ? { execEnvPass: this.#o.execEnvPass } : {}),
        peer,
        spoolDir: this.#o.spoolDir,
        execTimeoutMs: this.#o.execTimeoutMs,
        signal: this.#abort.signal,
        log: (record) => this.#o.onServed?.(record),
      });
      try {
        await this.#o.reply(peer, outcome.reply, outcome.attachments);
      } catch (error) {
        this.#o.onError?.(
          peer,
          `result of ${msg.id} not sent: ${
            (error instanceof Error ? error.message : String(error)).split(
              "\n",
            )[0]
          }`,
        );
      } finally {
        for (const a of outcome.attachments) {
          if (a.temporary) await Deno.remove(a.path).catch(() => {});
        }
      }
    })();
    this.#running.add(run);
    void run.finally(() => this.#running.delete(run));
  }
}
