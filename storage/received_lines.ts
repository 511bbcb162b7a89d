/**
 * {@link ReceivedLines}: what a peer keeps of the content lines it
 * received: dedup, the per-thread `seen` watermark sent in `resume`
 * (SPEC 9.5), and the commit of a received batch with its log entries and
 * thread records, so one line is durable before it is acked.
 *
 * | key | value |
 * |-----|-------|
 * | `["rx", pk, tk, ik]` | `at` (receive time, ms), or `{ at, id }` when `ik` is hashed: dedup of a received content line |
 * | `["thr", pk, tk]` `.seen` | `{ th?, id?, floor?, max? }` last received id; dedup floor; highest id (above it, no `rx` read) |
 *
 * The per-thread marker (`seen`) lives in the thread's row beside its
 * thread record ({@link ThreadRow}), so a commit writes one row per thread
 * it received in, not a `seen` row and a `thr` row. Stores written before
 * kept it in a `["seen", pk, tk]` row: open moves those
 * (`foldSeenRows`).
 *
 * A received line's only row of its own is its `rx` row: its log entry is
 * in its group's log page (`["log", log]`, see {@link TrafficLog}), which
 * its thread's row chains to the thread's earlier pages (the row's `log`,
 * the page's `prev`). Stores written before that chain have `rx` rows
 * `{ at, seq, log }` that index their pages by thread, and stores written
 * before pages `rx` rows of a receive time alone with a log entry and a
 * `logt` row per line: both still read as they are.
 *
 * Dedup is bounded by retention ({@link ReceivedLines.compact}): exact
 * received ids older than a time are forgotten and the thread's `floor`
 * rises to the highest of them; afterwards an id at or below the floor
 * counts as a duplicate. That is exact for senders whose ids increase
 * (NOTES item 3); a sender that reuses lower ids after the retention window
 * would be taken for a replay. What stays per thread is its marker, and
 * that goes too once the thread ended and did not change since
 * ({@link ReceivedLines.forgetEnded}).
 *
 * @module
 */

import { blobKey } from "./blob_records.ts";
import type { GroupCommitter } from "./kv/group_committer.ts";
import { encodeKey, type Key, keyText, threadKey } from "./kv/key.ts";
import { listRecords } from "./kv/split_record.ts";
import type { Tx } from "./kv/tx.ts";
import { requireText } from "./require_text.ts";
import { SeenIndex, type StoredRow } from "./seen_index.ts";
import type {
  IncomingLine,
  LogEntry,
  ReceiveExtras,
  ReceiveOutcome,
} from "./store.ts";
import {
  ensureRecord,
  recordOf,
  takeReceived,
  threadEnded,
  type ThreadRow,
  threadRowKey,
} from "./thread_records.ts";
import type { TrafficLog } from "./traffic_log.ts";
import { CONTENT_TYPES } from "../wire/types.ts";
import { timestamp } from "../wire/time.ts";

/**
 * Most lines in one atomic group: each writes its `rx` row, and up to its
 * thread's row, beside the group's log page (and its
 * parts), under Deno KV's 1,000 mutations per commit.
 */
const GROUP_LINES = 150;
/** Estimated bytes of one group's lines, under Deno KV's 800 KiB commit. */
const GROUP_BYTES = 600_000;

/**
 * A peer's thread rows a resume preloads into the committer's cache at
 * most: a peer with more has its other threads read when their lines come.
 *
 * @example
 * ```ts
 * import { PRELOAD_ROWS } from "./received_lines.ts";
 * console.log(PRELOAD_ROWS); // 512
 * ```
 */
export const PRELOAD_ROWS = 512;

/** `rx` rows a build reads ahead at once, at most. */
const READ_AHEAD_RX = 256;

/** A thread without a marker yet (its first line sets `max`). */
const NO_MARKER = "\u0000none";

/**
 * The `rx` row at `rxKey` as `tx` sees it: read ahead (`ahead`), unless
 * this build wrote it since (then `tx` holds it), or from `tx`.
 */
function rxValue(
  tx: Tx,
  rxKey: Key,
  ahead: Map<string, unknown>,
): Promise<unknown> | unknown {
  const k = encodeKey(rxKey);
  if (ahead.has(k) && !tx.local.has(k)) return ahead.get(k);
  return tx.get(rxKey);
}

/** An `rx` row's receive time and id (`ik` unless hashed), any layout. */
function rxTime(value: unknown, ik: string): { at: number; id: string } {
  if (typeof value === "number") return { at: value, id: ik };
  const rx = value as { at: number; id?: string };
  return { at: rx.at, id: rx.id ?? ik };
}

/** A received chunk line for the log, without its data. */
function elideChunk(line: IncomingLine): string {
  const { data: _, ...rest } = line.message;
  return JSON.stringify(rest);
}

/**
 * Received content lines of a store: dedup, seen, and their commit.
 *
 * @example
 * ```ts ignore
 * const received = new ReceivedLines(committer, log, threads);
 * const [outcome] = await received.receive(peer, [line]);
 * console.log(outcome.duplicate, await received.seen(peer));
 * ```
 */
/**
 * A time (ms) no exact received id (`rx` entry) is older than: retention
 * does not list the `rx` entries while its cut-off is not past it. Written
 * by a new store and by each retention pass that listed them.
 *
 * @example
 * ```ts
 * import { RX_FLOOR } from "./received_lines.ts";
 * console.log(RX_FLOOR.join("/")); // rxfloor
 * ```
 */
export const RX_FLOOR: Key = ["rxfloor"];

export class ReceivedLines {
  #c: GroupCommitter;
  #log: TrafficLog;
  /** Every peer's markers lately resumed with, in memory. */
  #seenIndex = new SeenIndex();

  /** Thread rows of a peer preloaded at most (see #preloadRows). */
  #preloadCap: number;

  /**
   * Lines committed through `committer`, logged in `log`; a resume preloads
   * at most `preloadRows` of the peer's thread rows ({@link PRELOAD_ROWS}).
   */
  constructor(
    committer: GroupCommitter,
    log: TrafficLog,
    preloadRows: number = PRELOAD_ROWS,
  ) {
    this.#c = committer;
    this.#log = log;
    this.#preloadCap = preloadRows;
    committer.observe((mutations, ok) =>
      this.#seenIndex.changed(mutations, ok)
    );
  }

  /**
   * Commits received content lines (group commit): dedup, per-thread seen,
   * thread records, log. Resolve before acking.
   */
  receive(
    peer: string,
    lines: IncomingLine[],
    also: ReceiveExtras = {},
  ): Promise<ReceiveOutcome[]> {
    try {
      requireText(peer, "receive: peer");
      if (!Array.isArray(lines)) {
        throw new TypeError("receive: lines must be an array");
      }
      for (const line of lines) {
        requireText(line?.id, "receive: line id");
        requireText(line.t, "receive: line t");
        if (line.th !== undefined) requireText(line.th, "receive: line th");
        if (typeof line.raw !== "string") {
          throw new TypeError("receive: line raw must be a string");
        }
      }
    } catch (error) {
      return Promise.reject(error);
    }
    const pk = keyText(peer);
    // The `rx` rows are not read ahead: a line above its thread's `max` is
    // new without a read, which is every line of an in-order sender.
    // The thread's row usually comes from the committer's memory
    // (`CommittedCache`): only one not in it is read ahead from KV.
    const prefetch: Key[] = [];
    let last: string | undefined;
    for (const line of lines) {
      const tk = threadKey(line.th);
      if (tk !== last) prefetch.push(threadRowKey(pk, tk));
      last = tk;
    }
    return this.#c.submit(
      false,
      (tx) => this.#build(tx, peer, pk, lines, also),
      prefetch,
    );
  }

  /**
   * Writes the lines in atomic groups of several (up to
   * {@link GROUP_LINES} lines and about {@link GROUP_BYTES}): each group
   * holds its lines' `rx` rows and their log page, and the rows of their
   * threads (marker and record) as of its last line, written once per
   * group rather than once per line. A group commits whole or not at all,
   * so a thread's `max` never lags its `rx` rows (a line above `max` is
   * taken as new without reading its row).
   */
  async #build(
    tx: Tx,
    peer: string,
    pk: string,
    lines: IncomingLine[],
    also: ReceiveExtras,
  ): Promise<ReceiveOutcome[]> {
    const out: ReceiveOutcome[] = [];
    const at = Date.now();
    const now = timestamp(at);
    // In the first line's group: one atomic write with its seen marker.
    for (const record of also.blobs ?? []) {
      await tx.putRecord(blobKey(record), record);
    }
    // This call's view of each thread's row (marker and record).
    const rows = new Map<string, ThreadRow>();
    // The `rx` rows the lines will ask for, read together (not one KV
    // round trip after another, each behind the main thread's work).
    const ahead = await this.#readAhead(tx, pk, lines, rows);
    const dirty = new Set<string>();
    // Threads with a line in the open group (their page pointer moves).
    const paged = new Set<string>();
    // The open group's lines: log entries, and `rx` keys (written with
    // the page's key once it is known; until then dedup asks `pending`).
    const entries: LogEntry[] = [];
    const rxKeys: Key[] = [];
    const pending = new Set<string>();
    let groupBytes = 0;
    const closeGroup = async () => {
      if (entries.length > 0) {
        // The page names each thread's page before it; the thread's row
        // then names this one (see `TrafficLog`: a query by thread walks
        // them back).
        let prev: Record<string, number> | undefined;
        for (const tk of paged) {
          const before = rows.get(tk)!.log;
          if (before !== undefined) (prev ??= {})[tk] = before;
        }
        const log = await this.#log.appendPage(tx, entries, prev);
        for (const tk of paged) {
          rows.get(tk)!.log = log;
          dirty.add(tk);
        }
        for (let i = 0; i < entries.length; i++) {
          const rxKey = rxKeys[i];
          const id = entries[i].id!;
          tx.set(rxKey, rxKey[3] === id ? at : { at, id });
        }
      }
      for (const tk of dirty) {
        await tx.putRecord(threadRowKey(pk, tk), rows.get(tk));
      }
      dirty.clear();
      paged.clear();
      entries.length = 0;
      rxKeys.length = 0;
      pending.clear();
      groupBytes = 0;
      tx.cut();
    };
    for (const line of lines) {
      const text = line.t === "chunk" ? elideChunk(line) : line.raw;
      // The page holds the line as JSON text: at most 6 bytes a character,
      // plus its fields, its `rx` row and its thread's records.
      const bytes = text.length * 6 + 1500;
      if (
        entries.length > 0 &&
        (entries.length >= GROUP_LINES || groupBytes + bytes > GROUP_BYTES)
      ) await closeGroup();
      const tk = threadKey(line.th);
      const rxKey: Key = ["rx", pk, tk, keyText(line.id)];
      let row = rows.get(tk);
      if (!row) {
        row = await tx.getRecord<ThreadRow>(threadRowKey(pk, tk)) ?? {};
        rows.set(tk, row);
      }
      const seen = row.seen;
      const above = seen?.max !== undefined && line.id > seen.max;
      const duplicate = !above && (
        (seen?.floor !== undefined && line.id <= seen.floor) ||
        pending.has(encodeKey(rxKey)) ||
        (await rxValue(tx, rxKey, ahead)) !== undefined
      );
      if (duplicate) {
        out.push({ id: line.id, duplicate });
        continue;
      }
      groupBytes += bytes;
      const entry = this.#log.reserve({
        peer,
        dir: "in",
        t: line.t,
        id: line.id,
        th: line.th,
        line: text,
        at,
      });
      entries.push(entry);
      if (line.th !== undefined) paged.add(tk);
      rxKeys.push(rxKey);
      pending.add(encodeKey(rxKey));
      out.push({ id: line.id, duplicate, seq: entry.seq });
      // `max` is kept from a thread's first record on (a record written
      // before it existed may have seen higher ids: it goes without).
      const max = seen === undefined
        ? line.id
        : seen.max === undefined || line.id < seen.max
        ? seen.max
        : line.id;
      if (line.th !== undefined && CONTENT_TYPES.has(line.t)) {
        row.seen = {
          ...seen,
          th: line.th,
          id: line.id,
          ...(max === undefined ? {} : { max }),
        };
        dirty.add(tk);
      } else if (max !== undefined && max !== seen?.max) {
        row.seen = { ...seen, max };
        dirty.add(tk);
      }
      if (line.th !== undefined && (line.t === "msg" || line.t === "state")) {
        takeReceived(ensureRecord(row, peer, line.th, now), line, now);
        dirty.add(tk);
      }
    }
    await closeGroup();
    return out;
  }

  /**
   * Loads into `rows` the thread row of every thread of `lines`, then reads
   * at once the `rx` rows the build will ask for (by encoded key): a line
   * not above its thread's `max` and not at or below its `floor`, as the
   * lines before it in this call leave them (a new thread's first line).
   * At most {@link READ_AHEAD_RX} of them; the build reads the rest itself.
   */
  async #readAhead(
    tx: Tx,
    pk: string,
    lines: IncomingLine[],
    rows: Map<string, ThreadRow>,
  ): Promise<Map<string, unknown>> {
    const max = new Map<string, string | undefined>();
    const keys: Key[] = [];
    for (const line of lines) {
      const tk = threadKey(line.th);
      let row = rows.get(tk);
      if (!row) {
        row = await tx.getRecord<ThreadRow>(threadRowKey(pk, tk)) ?? {};
        rows.set(tk, row);
        max.set(tk, row.seen ? row.seen.max : NO_MARKER);
      }
      const seen = row.seen;
      const top = max.get(tk);
      if (top !== NO_MARKER && top !== undefined && line.id > top) {
        max.set(tk, line.id);
        continue;
      }
      if (seen?.floor !== undefined && line.id <= seen.floor) continue;
      if (keys.length < READ_AHEAD_RX) {
        keys.push(["rx", pk, tk, keyText(line.id)]);
      }
      // Taken as new, it becomes the thread's `max` when it had none.
      if (top === NO_MARKER) max.set(tk, line.id);
    }
    const ahead = new Map<string, unknown>();
    if (keys.length === 0) return ahead;
    const values = await Promise.all(keys.map((key) => tx.get(key)));
    keys.forEach((key, i) => ahead.set(encodeKey(key), values[i]));
    return ahead;
  }

  /**
   * Per thread, the last content id received from `peer` (for resume):
   * from memory after the first KV list ({@link SeenIndex}).
   */
  async seen(peer: string): Promise<Record<string, string>> {
    const pk = keyText(requireText(peer, "seen: peer"));
    const seen = await this.#seenIndex.seen(pk, () => this.#listRows(pk));
    this.#preloadRows(pk);
    return seen;
  }

  /**
   * Peer `pk`'s thread rows as stored (by thread key); a row split in
   * parts (rare) as its marker alone.
   */
  async #listRows(pk: string): Promise<Map<string, StoredRow>> {
    const out = new Map<string, StoredRow>();
    const range = { prefix: ["thr", pk] };
    let split = false;
    for await (const { key, value } of this.#c.backend.list(range)) {
      if (key.length !== 3) continue;
      if (value instanceof Uint8Array) out.set(key[2] as string, value);
      else if (typeof value === "number") split = true;
    }
    if (!split) return out;
    for await (const r of listRecords(this.#c.backend, range, 3)) {
      const { seen } = r.value as ThreadRow;
      out.set(r.key[2] as string, seen === undefined ? {} : { seen });
    }
    return out;
  }

  /**
   * The peer's thread rows go to the committer's cache as the resume reads
   * them (the peer's next lines are on their way): the first builds read
   * them, and a thread without a row, from memory, not behind a commit on
   * Deno KV's connection. A peer with more than {@link PRELOAD_ROWS} gets
   * that many (its other threads are read when they come).
   */
  #preloadRows(pk: string): void {
    const rows = this.#seenIndex.rows(pk);
    if (rows === undefined) return;
    const cap = this.#preloadCap;
    const entries: Array<[Key, unknown]> = [];
    for (const [tk, value] of rows) {
      if (entries.length >= cap) break;
      entries.push([threadRowKey(pk, tk), value]);
    }
    this.#c.preload(["thr", pk], entries, rows.size <= cap);
  }

  /**
   * Deletes, in `tx`, the marker of threads that ended and did not change
   * since `olderThan` (ms) (their record stays); returns their rows'
   * encoded keys.
   */
  async forgetEnded(tx: Tx, olderThan: number): Promise<Set<string>> {
    const forgotten = new Set<string>();
    const range = { prefix: ["thr"] };
    for await (const { key, value } of listRecords(this.#c.backend, range, 3)) {
      const row = value as ThreadRow;
      const record = recordOf(row);
      if (
        record && threadEnded(record) && Date.parse(record.updated) < olderThan
      ) {
        forgotten.add(encodeKey(key));
        if (row.seen === undefined) continue;
        const { seen: _, ...kept } = row; // the page pointer stays
        await tx.putRecord(key, kept);
        tx.cut();
      }
    }
    return forgotten;
  }

  /**
   * Folds exact received ids older than `end` (ms) into their thread's
   * dedup floor, in `tx`; threads whose seen is in `forgotten` just lose
   * them.
   */
  async compact(tx: Tx, end: number, forgotten: Set<string>): Promise<void> {
    // Nothing that old: no list of every id received (in a burst, that
    // held up the commits and made its garbage survive).
    const floor = await tx.get(RX_FLOOR);
    if (typeof floor === "number" && end <= floor) return;
    const listedAt = Date.now();
    let oldestKept = Infinity;
    for await (
      const { key, value } of this.#c.backend.list({ prefix: ["rx"] })
    ) {
      const [, pk, tk, ik] = key as [string, string, string, string];
      const { at, id } = rxTime(value, ik);
      if (!(at < end)) {
        if (at < oldestKept) oldestKept = at;
        continue;
      }
      tx.delete(key);
      tx.cut();
      const rowKey = threadRowKey(pk, tk);
      if (forgotten.has(encodeKey(rowKey))) continue;
      const row = await tx.getRecord<ThreadRow>(rowKey) ?? {};
      const seen = row.seen ?? {};
      if (seen.floor === undefined || id > seen.floor) {
        row.seen = { ...seen, floor: id };
        await tx.putRecord(rowKey, row);
      }
      tx.cut();
    }
    // Ids received later are newer than the listing.
    tx.set(RX_FLOOR, Math.min(oldestKept, listedAt));
    tx.cut();
  }
}
