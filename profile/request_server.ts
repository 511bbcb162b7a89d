/**
 * The coding-agent profile inside a Peer (PROFILE.md): classifies the
 * request parts of each received msg against the sender's capabilities,
 * answers forbidden ones with `err forbidden` and runs the ones this peer
 * serves in the background (at most {@link DEFAULT_MAX_SERVING} at once;
 * the rest wait their turn), so a long exec never holds up the
 * connection's other lines.
 *
 * An acked request is a promise, kept across crashes: every answerable
 * request is journaled in the store ({@link RequestRecord}) before its msg
 * commits, and moves received → running → answered. After a restart,
 * {@link RequestServer.recover} serves what was received but not started,
 * and answers what was running with a result whose `error` says it was
 * interrupted (it is not run again: an exec or a write may have half
 * happened), each exactly once. Answers (results and errs alike) go through
 * the outbox, so a dropped connection loses none of them; temporary
 * attachments are removed once the result is queued (the blobs were
 * snapshotted into the spool).
 *
 * @module
 */

import {
  findRequests,
  hasRequests,
  interruptedReply,
  type ProfileCap,
  type ProfileRequest,
  type RequestMsg,
  type ResultReply,
  SERVABLE_CAPS,
  type ServeRecord,
  serveRequest,
} from "./profile.ts";
import type { Attachment } from "./fs_access.ts";
import type { RequestRecord, Store } from "../storage/store.ts";
import { errorText as oneLine } from "../wire/error_text.ts";

/** Requests served at once by default (`maxServing`); the rest wait. */
export const DEFAULT_MAX_SERVING = 8;
/** Answered journal records are kept this long (so a re-sent msg is not served twice). */
export const ANSWERED_RETENTION_MS = 30 * 86_400_000;

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

/** The err line answering a msg with forbidden requests. */
export interface ForbidErr {
  code: "forbidden";
  /** The request msg's thread (the err is outboxed in it). */
  th: string;
  /** The request msg's id. */
  re: string;
  detail: string;
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
  /** Requests served at once (default {@link DEFAULT_MAX_SERVING}). */
  maxServing?: number;
  /** The journal's home. */
  store: Pick<
    Store,
    "putRequest" | "request" | "requests" | "dropRequest" | "outbox"
  >;
  /** The sender's capabilities. */
  capsOf(peer: string, presented: readonly unknown[]): Promise<Set<string>>;
  /** Queues `err forbidden` re the msg in the outbox; resolves once queued. */
  forbid(peer: string, err: ForbidErr): Promise<void>;
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
 * import { RequestServer } from "./request_server.ts";
 * import { MemoryStore } from "../storage/memory_store.ts";
 * const spoolDir = await Deno.makeTempDir();
 * const server = new RequestServer({
 *   spoolDir,
 *   store: new MemoryStore(),
 *   capsOf: () => Promise.resolve(new Set<string>()),
 *   forbid: (_, err) => Promise.resolve(console.log(err.code)), // "forbidden"
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
  #maxServing: number;
  /** Served requests and answers being queued, for close(). */
  #running = new Set<Promise<void>>();
  /** Records this process has taken on (journal key → true). */
  #claimed = new Set<string>();
  /** Served requests waiting for a slot. */
  #waiting: RequestRecord[] = [];
  #serving = 0;
  /** Serializes journal writes that read first (received, not overwritten). */
  #journal: Promise<unknown> = Promise.resolve();
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
    const max = options.maxServing ?? DEFAULT_MAX_SERVING;
    if (!Number.isSafeInteger(max) || max < 1) {
      throw new TypeError(`maxServing must be a positive integer, got ${max}`);
    }
    this.#maxServing = max;
  }

  /** The capabilities served here. */
  get serving(): string[] {
    return [...this.#serve];
  }

  /** Requests being served now. */
  get running(): number {
    return this.#serving;
  }

  /** Served requests waiting for a slot. */
  get waiting(): number {
    return this.#waiting.length;
  }

  /**
   * Journals the answerable requests of received msgs as `received`, before
   * the msgs commit (so one acked is never forgotten). A record already
   * there (the msg came again) is left as it is. Throws when the journal
   * cannot be written: the msgs must then not commit.
   */
  async journal(
    peer: string,
    msgs: readonly RequestMsg[],
    presented: readonly unknown[],
  ): Promise<void> {
    const records: RequestRecord[] = [];
    for (const msg of msgs) {
      if (!hasRequests(msg)) continue;
      records.push(...await this.#classify(peer, msg, presented));
    }
    if (records.length === 0) return;
    await this.#serially(async () => {
      for (const record of records) {
        const known = await this.#o.store.request(
          record.peer,
          record.re,
          record.part,
        );
        if (known === undefined) await this.#o.store.putRequest(record);
      }
    });
  }

  /**
   * Classifies the requests of a received (committed, acked) msg and
   * answers them: the forbidden ones with an err, the served ones with a
   * result (started now, or when a slot frees). Resolves with what the
   * message event reports; `[]` for a msg without requests. Never throws.
   */
  async handle(
    peer: string,
    msg: RequestMsg,
    presented: readonly unknown[],
  ): Promise<RequestInfo[]> {
    // Cheap test first: most messages carry no request.
    if (!hasRequests(msg)) return [];
    const caps = await this.#capsOf(peer, presented);
    const requests = findRequests(msg, { caps, serve: this.#serve });
    try {
      const records = await this.#serially(async () => {
        const out: RequestRecord[] = [];
        for (const fresh of recordsOf(peer, msg, requests)) {
          const known = await this.#o.store.request(peer, msg.id, fresh.part);
          // Journaled before the commit; written here only when it was not.
          if (known === undefined) await this.#o.store.putRequest(fresh);
          out.push(known ?? fresh);
        }
        return out;
      });
      for (const record of records) this.#take(record);
    } catch (error) {
      this.#o.onError?.(peer, `requests of ${msg.id}: ${oneLine(error)}`);
    }
    return requests.map((r) => ({
      cap: r.cap,
      mime: r.mime,
      allowed: r.allowed,
      served: r.served,
    }));
  }

  /**
   * After a restart: serves the journaled requests received but not
   * started, and answers those that were running when the process died
   * with an "interrupted" result (unless their result was queued already).
   * Forgets answered records older than {@link ANSWERED_RETENTION_MS}.
   * Resolves once every answer is queued or started. Never throws.
   */
  async recover(): Promise<void> {
    let records: RequestRecord[];
    try {
      records = await this.#o.store.requests();
    } catch (error) {
      this.#o.onError?.("", `request journal unreadable: ${oneLine(error)}`);
      return;
    }
    const old = Date.now() - ANSWERED_RETENTION_MS;
    for (const record of records) {
      if (this.#claimed.has(keyOf(record))) continue;
      if (record.state === "answered") {
        if (record.at < old) {
          await this.#o.store.dropRequest(record.peer, record.re, record.part)
            .catch(() => {});
        }
      } else if (record.state === "received") {
        this.#take(record);
      } else {
        this.#claimed.add(keyOf(record));
        this.#track(this.#interrupted(record));
      }
    }
  }

  /** Kills running commands and waits for the served requests to finish. */
  async close(): Promise<void> {
    this.#abort.abort();
    this.#waiting.length = 0;
    while (this.#running.size > 0) {
      await Promise.allSettled([...this.#running]);
    }
  }

  async #capsOf(
    peer: string,
    presented: readonly unknown[],
  ): Promise<Set<string>> {
    try {
      return await this.#o.capsOf(peer, presented);
    } catch {
      return new Set(); // cannot tell: nothing is allowed
    }
  }

  async #classify(
    peer: string,
    msg: RequestMsg,
    presented: readonly unknown[],
  ): Promise<RequestRecord[]> {
    const caps = await this.#capsOf(peer, presented);
    return recordsOf(
      peer,
      msg,
      findRequests(msg, { caps, serve: this.#serve }),
    );
  }

  #serially<T>(task: () => Promise<T>): Promise<T> {
    const next = this.#journal.then(task);
    this.#journal = next.catch(() => {});
    return next;
  }

  #track(work: Promise<void>): void {
    this.#running.add(work);
    void work.finally(() => this.#running.delete(work));
  }

  /** Answers a record this process has not taken on yet, if still due. */
  #take(record: RequestRecord): void {
    const key = keyOf(record);
    if (record.state !== "received" || this.#claimed.has(key)) return;
    if (this.#abort.signal.aborted) return;
    this.#claimed.add(key);
    if (record.kind === "forbid") {
      this.#track(this.#answerForbidden(record));
      return;
    }
    // Waiting requests are held by key; their data stays in the journal.
    this.#waiting.push({ ...record, data: null });
    this.#next();
  }

  #next(): void {
    while (
      this.#serving < this.#maxServing && this.#waiting.length > 0 &&
      !this.#abort.signal.aborted
    ) {
      const record = this.#waiting.shift()!;
      this.#serving++;
      const work = this.#serveOne(record).finally(() => {
        this.#serving--;
        this.#next();
      });
      this.#track(work);
    }
  }

  async #answerForbidden(record: RequestRecord): Promise<void> {
    try {
      await this.#o.forbid(record.peer, {
        code: "forbidden",
        th: record.th,
        re: record.re,
        detail: String(record.data),
      });
      await this.#mark(record, "answered");
    } catch (error) {
      this.#o.onError?.(
        record.peer,
        `err forbidden re ${record.re} not queued: ${oneLine(error)}`,
      );
    }
  }

  async #serveOne(waiting: RequestRecord): Promise<void> {
    let record: RequestRecord;
    try {
      const stored = await this.#o.store.request(
        waiting.peer,
        waiting.re,
        waiting.part,
      );
      if (stored?.state !== "received") return; // answered meanwhile
      record = stored;
      await this.#mark(record, "running");
    } catch (error) {
      this.#o.onError?.(
        waiting.peer,
        `request ${waiting.re} not started: ${oneLine(error)}`,
      );
      return;
    }
    const msg: RequestMsg = {
      id: record.re,
      th: record.th,
      parts: [],
    };
    const request: ProfileRequest = {
      part: record.part,
      mime: record.mime,
      cap: record.cap as ProfileCap,
      data: record.data,
      allowed: true,
      served: true,
    };
    const outcome = await serveRequest(msg, request, {
      caps: new Set([request.cap]),
      serve: this.#serve,
      root: this.#root,
      ...(this.#o.protect ? { protect: this.#o.protect } : {}),
      ...(this.#o.execEnvPass ? { execEnvPass: this.#o.execEnvPass } : {}),
      peer: record.peer,
      spoolDir: this.#o.spoolDir,
      execTimeoutMs: this.#o.execTimeoutMs,
      signal: this.#abort.signal,
      log: (r) => this.#o.onServed?.(r),
    });
    try {
      if (this.#abort.signal.aborted) {
        // Shutting down: the record stays running, and the next start
        // answers it as interrupted (the command was killed).
        return;
      }
      await this.#o.reply(record.peer, outcome.reply, outcome.attachments);
      await this.#mark(record, "answered");
    } catch (error) {
      this.#o.onError?.(
        record.peer,
        `result of ${record.re} not sent: ${oneLine(error)}`,
      );
    } finally {
      for (const a of outcome.attachments) {
        if (a.temporary) await Deno.remove(a.path).catch(() => {});
      }
    }
  }

  /** A request that was running when the process died. */
  async #interrupted(record: RequestRecord): Promise<void> {
    try {
      // The result may have been queued just before the crash, and the
      // record not marked yet: the outbox tells.
      const queued = (await this.#o.store.outbox(record.peer)).some((e) =>
        e.t === (record.kind === "forbid" ? "err" : "msg") &&
        e.th === record.th && e.fields.re === record.re
      );
      if (!queued) {
        if (record.kind === "forbid") {
          await this.#o.forbid(record.peer, {
            code: "forbidden",
            th: record.th,
            re: record.re,
            detail: String(record.data),
          });
        } else {
          await this.#o.reply(record.peer, interruptedReply(record), []);
        }
      }
      await this.#mark(record, "answered");
    } catch (error) {
      this.#o.onError?.(
        record.peer,
        `interrupted result of ${record.re} not sent: ${oneLine(error)}`,
      );
    }
  }

  #mark(record: RequestRecord, state: RequestRecord["state"]): Promise<void> {
    record.state = state;
    record.at = Date.now();
    return this.#o.store.putRequest(
      state === "answered" ? { ...record, data: null } : record,
    );
  }
}

function keyOf(r: { peer: string; re: string; part: number }): string {
  return `${r.peer} ${r.re} ${r.part}`;
}

/**
 * The journal records of a msg's requests: one per served part, and one
 * for all its forbidden parts (one err per msg: `re` names the msg, the
 * detail every missing capability). Allowed requests not served here are
 * the agent's to answer: no record.
 */
function recordsOf(
  peer: string,
  msg: RequestMsg,
  requests: readonly ProfileRequest[],
): RequestRecord[] {
  const at = Date.now();
  const out: RequestRecord[] = [];
  const forbidden = requests.filter((r) => !r.allowed);
  if (forbidden.length > 0) {
    const missing = [...new Set(forbidden.map((r) => r.cap))];
    out.push({
      peer,
      re: msg.id,
      th: msg.th,
      part: forbidden[0].part,
      kind: "forbid",
      cap: forbidden[0].cap,
      mime: forbidden[0].mime,
      data: `${forbidden.map((r) => r.mime).join(", ")} requires a grant for ${
        missing.map((c) => JSON.stringify(c)).join(", ")
      }`,
      state: "received",
      at,
    });
  }
  for (const r of requests) {
    if (!r.served) continue;
    out.push({
      peer,
      re: msg.id,
      th: msg.th,
      part: r.part,
      kind: "serve",
      cap: r.cap,
      mime: r.mime,
      data: r.data,
      state: "received",
      at,
    });
  }
  return out;
}
