/**
 * {@link TrafficLog}: the traffic log, every line in and out, kept in
 * Deno KV under bounds.
 *
 * | key | value |
 * |-----|-------|
 * | `["log", seq]` | a {@link LogEntry}, or a {@link LogPage} keyed by its last entry's seq (split records when long) |
 * | `["logt", pk, tk, seq]` | `1`: index by thread of a single entry with a `th`; `{ seqs }`: of a sent page's entries in that thread (`seq` the page's) |
 * | `["thr", pk, tk]` `.log` | the key seq of the thread's newest received page (see `ThreadRecords`) |
 * | `["rx", pk, tk, ik]` | `{ seq, log }` in stores written before the pages' thread chain: index by thread of a received page's entry |
 * | `["seq", "log"]`, `["seq", "logbytes"]` | a checkpoint: the highest seq, and the bytes of line text the log held, as of then |
 * | `["seq", "chain"]` | the highest seq logged before received pages were chained by thread (0 for a store that always chained) |
 *
 * Received content lines are logged a page per atomic group (one row for
 * up to 150 lines): each line's own row is its dedup row `rx`, so a line
 * costs one row, not three (its record, a `logt` and an `rx`). A received
 * page names, per thread it holds, the thread's page before it
 * (`prev`), and the thread's row names its newest: a query by thread
 * walks back from there, reading only the pages that hold the thread's
 * received lines, and none older than `after`. Received pages of a store
 * written before the chain are found by their `rx` rows (`{ seq, log }`),
 * listed only when the query reaches back before `["seq", "chain"]`. Queued lines are logged a page per atomic group of
 * the enqueue too, with one `logt` row per thread of the page: a line's own
 * row is its outbox record. Lines logged by {@link TrafficLog.log} stay one
 * entry per row with a `logt` row; stores written before pages hold only
 * those, and are read as they are.
 *
 * Appends write no counters: the checkpoint is written by each trim (every
 * `min(1000, maxLogEntries / 10)` appends) and each drop, and open
 * ({@link TrafficLog.resume}) adds the entries logged after it.
 *
 * It keeps at most `maxLogEntries` (default 100,000) and `maxLogBytes` of
 * line text (default 256 MiB; over it, the oldest go until 90% is left):
 * every `min(1000, maxLogEntries / 10)` appends a trim deletes the oldest
 * entries with their parts and `logt` keys (a page losing only some of its
 * entries is written again with the rest), so it never holds more than the
 * bound plus one trim interval. Retention ({@link TrafficLog.expire}) also
 * drops entries older than a time, from the oldest on. A query by peer
 * alone scans the log (rare: views read by thread).
 *
 * @module
 */

import type { GroupCommitter } from "./kv/group_committer.ts";
import type { KvBackend } from "./kv/kv_backend.ts";
import { type Key, keyText, threadKey } from "./kv/key.ts";
import { type ListedRecord, listRecords } from "./kv/split_record.ts";
import type { Tx } from "./kv/tx.ts";
import { requireText } from "./require_text.ts";
import type { Direction, LogEntry, LogQuery } from "./store.ts";
import { type ThreadRow, threadRowKey } from "./thread_records.ts";

/**
 * Lines logged together (one atomic group of a `receive` or an enqueue):
 * one log row, keyed by the seq of its last entry. All share the
 * direction; an entry names its peer and time only when they differ from
 * the page's.
 *
 * @example
 * ```ts
 * import { type LogPage, pageEntries } from "./traffic_log.ts";
 * const page: LogPage = {
 *   peer: "ed25519:x", dir: "in", at: 1,
 *   entries: [{ seq: 7, t: "msg", id: "01", th: "t", line: "{}" }],
 * };
 * console.log(pageEntries(page)[0].seq); // 7
 * ```
 */
export interface LogPage {
  /** The remote peer's key. */
  peer: string;
  /** Whether the lines were received or sent. */
  dir: Direction;
  /** ms since the epoch. */
  at: number;
  /** The lines, in seq order. */
  entries: PageEntry[];
  /**
   * Received pages: per thread the page holds (by thread key), the key seq
   * of the thread's page before this one, if any.
   */
  prev?: Record<string, number>;
}

/** A line of a {@link LogPage}: `peer` and `at` when not the page's. */
type PageEntry = Omit<LogEntry, "peer" | "dir" | "at"> & {
  peer?: string;
  at?: number;
};

/**
 * The entries of a log row: a {@link LogEntry}, or each of a
 * {@link LogPage}'s.
 *
 * @example
 * ```ts
 * import { pageEntries } from "./traffic_log.ts";
 * const entry = { seq: 1, peer: "p", dir: "out" as const, t: "bye", line: "{}", at: 1 };
 * console.log(pageEntries(entry).length); // 1
 * ```
 */
export function pageEntries(row: LogEntry | LogPage): LogEntry[] {
  if (!("entries" in row)) return [row];
  return row.entries.map((e) => {
    const entry: LogEntry = {
      seq: e.seq,
      peer: e.peer ?? row.peer,
      dir: row.dir,
      t: e.t,
      line: e.line,
      at: e.at ?? row.at,
    };
    if (e.id !== undefined) entry.id = e.id;
    if (e.th !== undefined) entry.th = e.th;
    return entry;
  });
}

/**
 * The `logt` key prefix of each (peer, thread) among sent `entries`, with
 * their seqs, by peer and thread as text.
 */
function sentThreads(
  entries: LogEntry[],
): Map<string, { index: Key; seqs: number[] }> {
  const out = new Map<string, { index: Key; seqs: number[] }>();
  for (const e of entries) {
    if (e.th === undefined) continue;
    const text = `${e.peer}\n${e.th}`;
    let at = out.get(text);
    if (!at) {
      at = { index: ["logt", keyText(e.peer), threadKey(e.th)], seqs: [] };
      out.set(text, at);
    }
    at.seqs.push(e.seq);
  }
  return out;
}

/**
 * Where a page's entry is logged, as its `rx` row says: its seq and the
 * key seq of its page; undefined for an `rx` row written before pages.
 *
 * @example
 * ```ts
 * import { pagedAt } from "./traffic_log.ts";
 * console.log(pagedAt({ at: 1, seq: 4, log: 6 })); // { seq: 4, log: 6 }
 * console.log(pagedAt(1)); // undefined
 * ```
 */
export function pagedAt(
  rx: unknown,
): { seq: number; log: number } | undefined {
  if (typeof rx !== "object" || rx === null) return undefined;
  const { seq, log } = rx as { seq?: unknown; log?: unknown };
  return typeof seq === "number" && typeof log === "number"
    ? { seq, log }
    : undefined;
}

/**
 * Default bound of the traffic log, in bytes of line text (256 MiB).
 *
 * @example
 * ```ts
 * import { DEFAULT_MAX_LOG_BYTES } from "./traffic_log.ts";
 * console.log(DEFAULT_MAX_LOG_BYTES); // 268435456
 * ```
 */
export const DEFAULT_MAX_LOG_BYTES = 256 * 1024 * 1024;

/**
 * Default bound of the traffic log, in entries.
 *
 * @example
 * ```ts
 * import { DEFAULT_MAX_LOG_ENTRIES } from "./traffic_log.ts";
 * console.log(DEFAULT_MAX_LOG_ENTRIES); // 100000
 * ```
 */
export const DEFAULT_MAX_LOG_ENTRIES = 100_000;

/** The log's checkpoint: the highest seq as of it. */
export const LOG_SEQ: Key = ["seq", "log"];
/** The log's checkpoint: the bytes of line text the log held then. */
export const LOG_BYTES: Key = ["seq", "logbytes"];
/**
 * The highest seq logged before received pages were chained by thread:
 * a query by thread reaching back to it also lists the thread's `rx` rows.
 *
 * @example
 * ```ts
 * import { LOG_CHAIN } from "./traffic_log.ts";
 * console.log(LOG_CHAIN.join("/")); // seq/chain
 * ```
 */
export const LOG_CHAIN: Key = ["seq", "chain"];
const END_SEQ = Number.MAX_SAFE_INTEGER;
// The log is trimmed every this many appends at most (fewer for small bounds).
const TRIM_EVERY = 1000;

/**
 * The bounds of the traffic log.
 *
 * @example
 * ```ts
 * import type { TrafficLogBounds } from "./traffic_log.ts";
 * const bounds: TrafficLogBounds = { maxLogEntries: 10_000 };
 * console.log(bounds.maxLogEntries); // 10000
 * ```
 */
export interface TrafficLogBounds {
  /**
   * Most traffic log entries kept (oldest trimmed first); default
   * {@link DEFAULT_MAX_LOG_ENTRIES}, `Infinity` keeps everything.
   */
  maxLogEntries?: number;
  /**
   * Most traffic log bytes kept (the lines' text, oldest trimmed first,
   * down to 90% of it); default {@link DEFAULT_MAX_LOG_BYTES}.
   */
  maxLogBytes?: number;
}

/**
 * Validates a `maxLogEntries` bound; undefined gives the default. Throws a
 * one-line RangeError.
 *
 * @example
 * ```ts
 * import { checkMaxLog } from "./traffic_log.ts";
 * console.log(checkMaxLog(undefined)); // 100000
 * ```
 */
export function checkMaxLog(value: unknown): number {
  if (value === undefined) return DEFAULT_MAX_LOG_ENTRIES;
  if (
    value !== Infinity &&
    (typeof value !== "number" || !Number.isSafeInteger(value) || value < 1)
  ) {
    throw new RangeError(
      `maxLogEntries must be a positive integer or Infinity, got ${
        typeof value === "string" ? JSON.stringify(value) : String(value)
      }`,
    );
  }
  return value as number;
}

/**
 * The traffic log of a store; appends happen inside other records' writes
 * (a received line's log entry commits with its dedup row).
 *
 * @example
 * ```ts ignore
 * const log = new TrafficLog(committer, { seq: 0, logBytes: 0 }, {});
 * await log.log([{ peer, dir: "out", t: "msg", line: "{}", at: Date.now() }]);
 * console.log((await log.read({ limit: 1 }))[0].seq); // 1
 * ```
 */
export class TrafficLog {
  #c: GroupCommitter;
  #seq: number;
  #maxLog: number;
  #trimEvery: number;
  /** Log appends since the last trim was scheduled. */
  #sinceTrim = 0;
  #maxLogBytes: number;
  /**
   * The highest log seq dropped: trims queued together see the same
   * committed entries, and must not drop (and count) one twice.
   */
  #droppedThrough = 0;
  /** Bytes of line text in the log (see {@link LOG_BYTES}). */
  #logBytes: number;
  /** The checkpoint last written (or read), as far as this process knows. */
  #checkpointed: { seq: number; logBytes: number };
  /**
   * The highest seq logged before received pages were chained by thread
   * ({@link LOG_CHAIN}); unknown (a store not opened through `resume`):
   * every query by thread lists the `rx` rows too.
   */
  #chainFrom: number;
  /** {@link LOG_CHAIN} is known here but not yet in the store. */
  #chainUnwritten = false;

  /**
   * The log written through `committer`, resuming at `seq` with `logBytes`
   * of text. Throws a one-line RangeError for a bad bound.
   */
  constructor(
    committer: GroupCommitter,
    resume: {
      seq: number;
      logBytes: number;
      checkpoint?: { seq: number; logBytes: number };
      chainFrom?: number;
    },
    bounds: TrafficLogBounds,
  ) {
    this.#chainFrom = resume.chainFrom ?? Infinity;
    this.#c = committer;
    this.#maxLog = checkMaxLog(bounds.maxLogEntries);
    this.#maxLogBytes = bounds.maxLogBytes ?? DEFAULT_MAX_LOG_BYTES;
    if (!(this.#maxLogBytes > 0)) {
      throw new RangeError(
        `maxLogBytes must be a positive number or Infinity, got ${bounds.maxLogBytes}`,
      );
    }
    this.#seq = resume.seq;
    this.#logBytes = resume.logBytes;
    this.#checkpointed = resume.checkpoint ?? resume;
    this.#trimEvery = Math.max(
      1,
      Math.min(TRIM_EVERY, Math.ceil(this.#maxLog / 10)),
    );
  }

  /** Appends lines to the log (batched by the caller). */
  log(entries: Omit<LogEntry, "seq">[]): Promise<void> {
    try {
      if (!Array.isArray(entries)) {
        throw new TypeError("log: entries must be an array");
      }
      for (const e of entries) {
        requireText(e?.peer, "log: peer");
        if (e.dir !== "in" && e.dir !== "out") {
          throw new TypeError(`log: dir must be "in" or "out"`);
        }
        requireText(e.t, "log: t");
        if (typeof e.line !== "string") {
          throw new TypeError("log: line must be a string");
        }
        if (!Number.isFinite(e.at)) {
          throw new TypeError("log: at must be a time in ms");
        }
      }
    } catch (error) {
      return Promise.reject(error);
    }
    if (entries.length === 0) return Promise.resolve();
    return this.#c.submit(false, async (tx) => {
      for (const e of entries) {
        await this.append(tx, e);
        tx.cut();
      }
    });
  }

  /**
   * Takes the next seq for `entry` and counts its text; the caller writes
   * it ({@link append}, {@link appendPage}) in the same build. Seqs are
   * taken in commit order, so they increase with the log.
   */
  reserve(entry: Omit<LogEntry, "seq">): LogEntry {
    this.#logBytes += entry.line.length;
    const overBytes = this.#logBytes > this.#maxLogBytes;
    if (++this.#sinceTrim >= this.#trimEvery || overBytes) {
      this.#sinceTrim = 0;
      // Queued behind this op; a store closing meanwhile just skips it.
      this.trim().catch(() => {});
    }
    // Written field by field, not `{ seq, ...entry }`: a spread after a
    // field copies through a slow path into a bigger object, once per line.
    const record: LogEntry = {
      seq: ++this.#seq,
      peer: entry.peer,
      dir: entry.dir,
      t: entry.t,
      line: entry.line,
      at: entry.at,
    };
    if (entry.id !== undefined) record.id = entry.id;
    if (entry.th !== undefined) record.th = entry.th;
    return record;
  }

  /** Appends one entry in `tx`; resolves with its seq. */
  async append(tx: Tx, entry: Omit<LogEntry, "seq">): Promise<number> {
    const record = this.reserve(entry);
    const seq = record.seq;
    await tx.putRecord(["log", seq], record, true);
    // No index by peer alone: one row fewer per line (read scans instead).
    if (entry.th !== undefined) {
      tx.set(["logt", keyText(entry.peer), threadKey(entry.th), seq], 1);
    }
    return seq;
  }

  /**
   * Writes `entries` ({@link reserve}d in order, one direction) as one
   * {@link LogPage} in `tx`. Received ones (`in`) get no thread index row:
   * `prev` (each thread's page before, by thread key) chains the page to
   * the caller's thread rows; sent ones a `logt` row per thread. Resolves
   * with the page's key seq (its last entry's).
   */
  async appendPage(
    tx: Tx,
    entries: LogEntry[],
    prev?: Record<string, number>,
  ): Promise<number> {
    const first = entries[0];
    const page: LogPage = {
      peer: first.peer,
      dir: first.dir,
      at: first.at,
      entries: entries.map((e) => {
        const row: PageEntry = { seq: e.seq, t: e.t, line: e.line };
        if (e.id !== undefined) row.id = e.id;
        if (e.th !== undefined) row.th = e.th;
        if (e.peer !== first.peer) row.peer = e.peer;
        if (e.at !== first.at) row.at = e.at;
        return row;
      }),
    };
    if (prev !== undefined) page.prev = prev;
    const key = entries[entries.length - 1].seq;
    await tx.putRecord(["log", key], page, true);
    if (page.dir === "out") {
      for (const { index, seqs } of sentThreads(entries).values()) {
        tx.set([...index, key], { seqs });
      }
    }
    return key;
  }

  /**
   * Writes the checkpoint, the highest seq and the bytes of text as of now,
   * in `tx`: every entry up to that seq was built before, so it commits
   * before or with it (or this fails with it).
   */
  #checkpoint(tx: Tx): void {
    // Unchanged: no write (opening a store that holds nothing new writes
    // nothing to it).
    if (
      this.#seq === this.#checkpointed.seq &&
      this.#logBytes === this.#checkpointed.logBytes
    ) return;
    this.#checkpointed = { seq: this.#seq, logBytes: this.#logBytes };
    tx.set(LOG_SEQ, this.#seq);
    tx.set(LOG_BYTES, this.#logBytes);
    if (this.#chainUnwritten) {
      this.#chainUnwritten = false;
      tx.set(LOG_CHAIN, this.#chainFrom);
    }
  }

  /**
   * The seq and the bytes of text to resume a log at, from its checkpoint
   * and the entries logged after it (at most a trim interval, unless it
   * crashed before any trim).
   *
   * @example
   * ```ts ignore
   * const resume = await TrafficLog.resume(backend);
   * const log = new TrafficLog(committer, resume, {});
   * ```
   */
  static async resume(
    backend: KvBackend,
  ): Promise<{
    seq: number;
    logBytes: number;
    checkpoint: { seq: number; logBytes: number };
    chainFrom?: number;
  }> {
    const seq = await backend.get(LOG_SEQ);
    const bytes = await backend.get(LOG_BYTES);
    const chain = await backend.get(LOG_CHAIN);
    const from = typeof seq === "number" ? seq : 0;
    const checkpoint = {
      seq: from,
      logBytes: typeof bytes === "number" ? bytes : 0,
    };
    const out: {
      seq: number;
      logBytes: number;
      checkpoint: { seq: number; logBytes: number };
      chainFrom?: number;
    } = { ...checkpoint, checkpoint };
    if (typeof chain === "number") out.chainFrom = chain;
    const range = { start: ["log", from + 1], end: ["log", END_SEQ] };
    for await (const { value } of listRecords(backend, range, 2)) {
      for (const e of pageEntries(value as LogEntry | LogPage)) {
        if (e.seq <= from) continue;
        out.logBytes += e.line.length;
        if (e.seq > out.seq) out.seq = e.seq;
      }
    }
    return out;
  }

  /**
   * Deletes the oldest log entries, with their parts and index keys, down to
   * the bound. Not exclusive: it only reads committed entries, older than
   * any still in the overlay, and nothing else writes them.
   */
  trim(): Promise<void> {
    return this.#c.submit(false, async (tx) => {
      this.#checkpoint(tx);
      const cutoff = this.#seq - this.#maxLog;
      const overBytes = this.#logBytes > this.#maxLogBytes;
      if (cutoff < 1 && !overBytes) return;
      // Over the byte bound: down to 90% of it, so trims stay rare.
      const byteTarget = overBytes ? this.#maxLogBytes * 0.9 : Infinity;
      // To the end: a page keyed past the cut-off may hold entries before it.
      const range = { start: ["log", 0], end: ["log", END_SEQ] };
      for await (const listed of listRecords(this.#c.backend, range, 2)) {
        const kept = await this.#dropWhile(
          tx,
          listed,
          (e) => !(e.seq > cutoff && this.#logBytes <= byteTarget),
        );
        if (kept) break;
      }
    });
  }

  /** Drops entries logged before `olderThan` (ms), from the oldest on. */
  async expire(tx: Tx, olderThan: number): Promise<void> {
    const range = { prefix: ["log"] };
    for await (const listed of listRecords(this.#c.backend, range, 2)) {
      if (await this.#dropWhile(tx, listed, (e) => e.at < olderThan)) break;
    }
  }

  /**
   * Deletes a log row's entries from its first on while `drop` says so,
   * with their parts and index keys; a page keeping some is written again
   * with those. True when it kept one (the caller stops there).
   */
  async #dropWhile(
    tx: Tx,
    { key, value, parts }: ListedRecord,
    drop: (entry: LogEntry) => boolean,
  ): Promise<boolean> {
    const row = value as LogEntry | LogPage;
    const entries = pageEntries(row);
    let dropped = 0;
    let fresh = 0;
    let kept = false;
    for (const e of entries) {
      if (!drop(e)) {
        kept = true;
        break;
      }
      dropped++;
      if (e.seq <= this.#droppedThrough) continue; // a trim before has it
      fresh++;
      this.#droppedThrough = e.seq;
      this.#logBytes = Math.max(0, this.#logBytes - e.line.length);
      if (e.th !== undefined && !("entries" in row)) {
        tx.delete(["logt", keyText(e.peer), threadKey(e.th), e.seq]);
      }
    }
    if (fresh === 0) return kept;
    if (dropped === entries.length) await tx.deleteRecord(key, parts);
    else {
      const page = row as LogPage;
      await tx.putRecord(key, {
        ...page,
        entries: page.entries.slice(dropped),
      });
    }
    if ("entries" in row && row.dir === "out") {
      // The thread index rows of threads the page no longer holds.
      const left = sentThreads(entries.slice(dropped));
      for (const [text, { index }] of sentThreads(entries.slice(0, dropped))) {
        if (!left.has(text)) tx.delete([...index, key[1]]);
      }
    }
    this.#checkpoint(tx);
    tx.cut();
    return kept;
  }

  /** Log entries in `seq` order, filtered by `query`. */
  async read(query: LogQuery = {}): Promise<LogEntry[]> {
    const limit = query.limit ?? Infinity;
    const start = query.after === undefined
      ? 0
      : Math.max(0, Math.floor(query.after) + 1);
    const out: LogEntry[] = [];
    if (limit <= 0 || start > END_SEQ) return out;
    if (query.peer !== undefined && query.th !== undefined) {
      return await this.#readThread(query.peer, query.th, start, limit);
    }
    const range = { start: ["log", start], end: ["log", END_SEQ] };
    for await (const { value } of listRecords(this.#c.backend, range, 2)) {
      for (const entry of pageEntries(value as LogEntry | LogPage)) {
        if (entry.seq < start) continue; // a page's, before `after`
        if (query.th !== undefined && entry.th !== query.th) continue;
        if (query.peer !== undefined && entry.peer !== query.peer) continue;
        out.push(entry);
        if (out.length >= limit) return out;
      }
    }
    return out;
  }

  /**
   * The entries of thread `th` with `peer` from seq `start` on, at most
   * `limit`: received ones by walking the thread's page chain back from
   * its row (only pages holding its lines, none keyed before `start`),
   * sent and single ones by their `logt` rows listed from `start`, and
   * received ones logged before the chain by their `rx` rows.
   */
  async #readThread(
    peer: string,
    th: string,
    start: number,
    limit: number,
  ): Promise<LogEntry[]> {
    const pk = keyText(peer);
    const tk = threadKey(th);
    const found = new Map<number, LogEntry>();
    const take = (value: LogEntry | LogPage | undefined, seqs?: number[]) => {
      if (value === undefined) return;
      const entries = pageEntries(value);
      const wanted = seqs === undefined ? undefined : new Set(seqs);
      for (const e of entries) {
        if (e.seq < start || (wanted && !wanted.has(e.seq))) continue;
        if (e.peer === peer && e.th === th) found.set(e.seq, e);
      }
    };
    // With a limit, the log scanned from `start` may hold the first
    // `limit` entries long before the walk back reaches `start` (a busy
    // thread asked for its oldest lines): both go a row at a time, and the
    // first one done answers.
    const scan = limit === Infinity
      ? undefined
      : this.#scanThread(peer, th, start, limit);
    try {
      // Received pages, newest first, by the chain.
      const row = await this.#c.read<ThreadRow>(threadRowKey(pk, tk));
      let pageKey = row?.log;
      while (
        pageKey !== undefined && pageKey >= start &&
        pageKey > this.#droppedThrough
      ) {
        const scanned = await scan?.next();
        if (scanned?.done) return scanned.value;
        const page = await this.#c.read<LogEntry | LogPage>(["log", pageKey]);
        // Gone: trimmed, and every older page with it.
        if (page === undefined || !("entries" in page)) break;
        take(page);
        pageKey = page.prev?.[tk];
      }
    } finally {
      await scan?.return([]);
    }
    // Seq → key seq of the row holding it: single entries and sent pages
    // by `logt`, received pages before the chain by their `rx` rows.
    const rows = new Map<number, number[]>();
    const hold = (row: number, seq: number) => {
      const seqs = rows.get(row);
      if (seqs) seqs.push(seq);
      else rows.set(row, [seq]);
    };
    const base: Key = ["logt", pk, tk];
    for await (
      const { key, value } of this.#c.backend.list({
        start: [...base, start],
        end: [...base, END_SEQ],
      })
    ) {
      const row = key[key.length - 1] as number;
      const page = value as { seqs?: number[] } | number;
      if (typeof page === "object" && Array.isArray(page.seqs)) {
        for (const seq of page.seqs) if (seq >= start) hold(row, seq);
      } else hold(row, row);
    }
    // Seqs start at 1: a store that always chained (0) lists none.
    if (Math.max(start, 1) <= this.#chainFrom) {
      for await (
        const { value } of this.#c.backend.list({ prefix: ["rx", pk, tk] })
      ) {
        const at = pagedAt(value);
        // Dedup rows outlive their log entries: no read of a trimmed page.
        if (
          at && at.seq >= start && at.seq <= this.#chainFrom &&
          at.seq > this.#droppedThrough && !found.has(at.seq)
        ) hold(at.log, at.seq);
      }
    }
    for (const [row, seqs] of rows) {
      take(await this.#c.read<LogEntry | LogPage>(["log", row]), seqs);
    }
    const out = [...found.values()].sort((a, b) => a.seq - b.seq);
    if (out.length > limit) out.length = limit;
    return out;
  }

  /**
   * The first `limit` entries of thread `th` with `peer` from seq `start`
   * on, by scanning the log in seq order: yields after each row, returns
   * the entries once it has them (or the log ends).
   */
  async *#scanThread(
    peer: string,
    th: string,
    start: number,
    limit: number,
  ): AsyncGenerator<void, LogEntry[]> {
    const out: LogEntry[] = [];
    const range = { start: ["log", start], end: ["log", END_SEQ] };
    for await (const { value } of listRecords(this.#c.backend, range, 2)) {
      for (const entry of pageEntries(value as LogEntry | LogPage)) {
        if (entry.seq < start || entry.peer !== peer || entry.th !== th) {
          continue;
        }
        out.push(entry);
        if (out.length >= limit) return out;
      }
      yield;
    }
    return out;
  }

  /**
   * Marks every received page logged from now on as chained by thread
   * ({@link LOG_CHAIN}), if the store has no mark yet: pages logged before
   * (a store written by an older layout) are found by their `rx` rows.
   * Open calls it once.
   */
  markChain(): void {
    if (this.#chainFrom !== Infinity) return;
    // Every page before now is; the mark rides along with the next
    // checkpoint (no commit of its own). Lost in a crash before, the next
    // open marks a later seq: still after every unchained page.
    this.#chainFrom = this.#seq;
    this.#chainUnwritten = true;
  }
}
