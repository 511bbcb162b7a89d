/**
 * {@link ThreadRecords}: one row per thread with a peer, at
 * `["thr", pk, tk]` (a {@link ThreadRow}): the {@link ThreadRecord}
 * (subject, both sides' soft state, unread count) and the received side's
 * {@link SeenMarker} (dedup and resume, see `ReceivedLines`) and the key of
 * the thread's newest received log page (`log`), so a commit of received
 * lines writes one row per thread, not two. A thread (or the
 * unthreaded lines, `tk` `""`) that received content but no msg or state
 * has a row with the marker alone: it is no thread record, and
 * {@link ThreadRecords.list} and {@link ThreadRecords.get} skip it.
 *
 * Written by received lines (in their own commit, see `ReceivedLines`)
 * and by our own side's changes ({@link ThreadRecords.patch}); a record
 * stored whole ({@link ThreadRecords.put}) keeps the row's marker. Text
 * copied from remote lines is clipped to 4,096 characters.
 *
 * Stores written before the fold have a `["seen", pk, tk]` row per thread
 * for the marker: {@link foldSeenRows} moves each into its thread's row
 * when the store opens.
 *
 * @module
 */

import type { GroupCommitter } from "./kv/group_committer.ts";
import type { KvBackend } from "./kv/kv_backend.ts";
import { type Key, keyText, threadKey } from "./kv/key.ts";
import { listRecords } from "./kv/split_record.ts";
import type { Tx } from "./kv/tx.ts";
import { requireText } from "./require_text.ts";
import type { IncomingLine, ThreadPatch, ThreadRecord } from "./store.ts";
import { timestamp } from "../wire/time.ts";

// Fields copied from remote lines into thread records are clipped.
const CLIP = 4096;
/** Thread states after which a thread's dedup watermark may be forgotten. */
const ENDED_STATES: ReadonlySet<string> = new Set(["done", "failed", "closed"]);

function clip(text: string): string {
  return text.length > CLIP ? text.slice(0, CLIP) : text;
}

/**
 * True when either side of the thread is done, failed or closed.
 *
 * @example
 * ```ts
 * import { threadEnded } from "./thread_records.ts";
 * const now = new Date().toISOString();
 * console.log(threadEnded({ peer: "p", th: "t", created: now, updated: now, unread: 0 })); // false
 * ```
 */
export function threadEnded(record: ThreadRecord): boolean {
  return ENDED_STATES.has(record.mine?.state ?? "") ||
    ENDED_STATES.has(record.theirs?.state ?? "");
}

/**
 * Dedup and resume state of the lines received in one thread (or of the
 * unthreaded ones): the last content id (sent in `resume`), the dedup
 * floor, and the highest id (any higher one is new without a read).
 *
 * @example
 * ```ts
 * import type { SeenMarker } from "./thread_records.ts";
 * const seen: SeenMarker = { th: "t", id: "02", floor: "01", max: "02" };
 * console.log("03" > seen.max!); // true: new without reading its rx row
 * ```
 */
export interface SeenMarker {
  th?: string;
  id?: string;
  floor?: string;
  /** The highest id received in the thread: any higher one is new. */
  max?: string;
}

/**
 * The row at `["thr", pk, tk]`: a thread record (when `created` is set)
 * and the thread's received-side marker (when anything was received).
 *
 * @example
 * ```ts
 * import { recordOf, type ThreadRow } from "./thread_records.ts";
 * const row: ThreadRow = { seen: { max: "01" } };
 * console.log(recordOf(row)); // undefined
 * ```
 */
export type ThreadRow = Partial<ThreadRecord> & {
  seen?: SeenMarker;
  /**
   * The key seq of the newest log page holding a line received in the
   * thread; each page names the one before (`LogPage.prev`), so a query by
   * thread reads only the thread's pages.
   */
  log?: number;
};

/**
 * The thread record a row holds, without its marker; undefined for a row
 * of the marker alone.
 *
 * @example
 * ```ts
 * import { recordOf } from "./thread_records.ts";
 * const now = "2026-01-01T00:00:00.000Z";
 * const row = { peer: "p", th: "t", created: now, updated: now, unread: 2, seen: { id: "01" } };
 * console.log(recordOf(row)); // { peer: "p", th: "t", created: "2026-01-01T00:00:00.000Z", updated: "2026-01-01T00:00:00.000Z", unread: 2 }
 * ```
 */
export function recordOf(
  row: ThreadRow | undefined,
): ThreadRecord | undefined {
  if (row?.created === undefined) return undefined;
  const { seen: _, log: __, ...record } = row;
  return record as ThreadRecord;
}

/**
 * `row` as a thread record of thread `th` with `peer` (created `now` if it
 * held the marker alone), in place.
 *
 * @example
 * ```ts
 * import { ensureRecord } from "./thread_records.ts";
 * const row = ensureRecord({ seen: { max: "01" } }, "p", "t", "2026-01-01T00:00:00.000Z");
 * console.log(row.unread, row.seen?.max); // 0 "01"
 * ```
 */
export function ensureRecord(
  row: ThreadRow,
  peer: string,
  th: string,
  now: string,
): ThreadRow & ThreadRecord {
  if (row.created === undefined) {
    row.peer = peer;
    row.th = th;
    row.created = now;
    row.updated = now;
    row.unread = 0;
  }
  return row as ThreadRow & ThreadRecord;
}

/**
 * The key of the row of thread `tk` (a {@link threadKey}) with the peer
 * `pk` (a `keyText`).
 *
 * @example
 * ```ts
 * import { threadRowKey } from "./thread_records.ts";
 * console.log(threadRowKey("p", "t").join("/")); // thr/p/t
 * ```
 */
export function threadRowKey(pk: string, tk: string): Key {
  return ["thr", pk, tk];
}

/** The key of the record of thread `th` with `peer`. */
function threadRecordKey(peer: string, th: string): Key {
  return threadRowKey(keyText(peer), threadKey(th));
}

/**
 * The thread records of a store.
 *
 * @example
 * ```ts ignore
 * const threads = new ThreadRecords(committer);
 * await threads.patch(peer, "t1", { subject: "hello" });
 * console.log((await threads.get(peer, "t1"))?.subject); // "hello"
 * ```
 */
export class ThreadRecords {
  #c: GroupCommitter;

  /** The records written through `committer`. */
  constructor(committer: GroupCommitter) {
    this.#c = committer;
  }

  /** Thread records, optionally for one peer. */
  async list(peer?: string): Promise<ThreadRecord[]> {
    const rows = await this.#c.collect<ThreadRow>(
      peer === undefined ? ["thr"] : ["thr", keyText(peer)],
      3,
    );
    const out: ThreadRecord[] = [];
    for (const row of rows) {
      const record = recordOf(row);
      if (record) out.push(record);
    }
    return out;
  }

  /** The record of thread `th` with `peer`, or undefined. */
  async get(peer: string, th: string): Promise<ThreadRecord | undefined> {
    return recordOf(
      await this.#c.read<ThreadRow>(threadRecordKey(peer, th)),
    );
  }

  /** Stores a thread record, replacing the previous one (not the marker). */
  put(record: ThreadRecord): Promise<void> {
    try {
      requireText(record?.peer, "putThread: peer");
      requireText(record.th, "putThread: th");
    } catch (error) {
      return Promise.reject(error);
    }
    const key = threadRecordKey(record.peer, record.th);
    return this.#c.submit(false, async (tx) => {
      const { seen, log } = await tx.getRecord<ThreadRow>(key) ?? {};
      const row: ThreadRow = { ...record };
      // Only received lines write the marker and the page pointer.
      delete row.seen;
      delete row.log;
      if (seen !== undefined) row.seen = seen;
      if (log !== undefined) row.log = log;
      await tx.putRecord(key, row);
    }, [key]);
  }

  /** Our side of a thread, read and written in one step of the committer. */
  patch(peer: string, th: string, patch: ThreadPatch): Promise<ThreadRecord> {
    try {
      requireText(peer, "patchThread: peer");
      requireText(th, "patchThread: th");
    } catch (error) {
      return Promise.reject(error);
    }
    const key = threadRecordKey(peer, th);
    return this.#c.submit(false, async (tx) => {
      const now = timestamp();
      const row = ensureRecord(
        await tx.getRecord<ThreadRow>(key) ?? {},
        peer,
        th,
        now,
      );
      if (patch.subject !== undefined && row.subject === undefined) {
        row.subject = clip(patch.subject);
      }
      if (patch.mine) {
        row.mine = { ...patch.mine, state: clip(patch.mine.state) };
        if (patch.mine.note !== undefined) {
          row.mine.note = clip(patch.mine.note);
        }
      }
      if (patch.read) row.unread = 0;
      row.updated = now;
      await tx.putRecord(key, row);
      return recordOf(row)!;
    }, [key]);
  }
}

/**
 * Moves the `seen` rows of a store written before the fold into their
 * threads' rows, in `tx`: each thread's move (its row written with the
 * marker, the `seen` row deleted) is one atomic group, so a crash leaves
 * every thread either moved or not, and the next open moves the rest. A
 * store with no `seen` row is read, not written.
 *
 * @example
 * ```ts ignore
 * await committer.submit(true, (tx) => foldSeenRows(tx, committer.backend));
 * ```
 */
export async function foldSeenRows(
  tx: Tx,
  backend: KvBackend,
): Promise<number> {
  let moved = 0;
  for await (
    const { key, value, parts } of listRecords(backend, {
      prefix: ["seen"],
    }, 3)
  ) {
    const rowKey = threadRowKey(key[1] as string, key[2] as string);
    const row = await tx.getRecord<ThreadRow>(rowKey) ?? {};
    // The `seen` row is the newer: only a layout without the fold writes it.
    const seen = { ...value as SeenMarker };
    const floor = row.seen?.floor;
    if (
      floor !== undefined && (seen.floor === undefined || floor > seen.floor)
    ) {
      seen.floor = floor;
    }
    row.seen = seen;
    await tx.putRecord(rowKey, row);
    await tx.deleteRecord(key, parts);
    tx.cut();
    moved++;
  }
  return moved;
}

/**
 * Applies a received msg (one more unread, the subject if none yet) or
 * state (theirs) to `record`, in place.
 *
 * @example
 * ```ts
 * import { takeReceived } from "./thread_records.ts";
 * const now = "2026-01-01T00:00:00.000Z";
 * const record = { peer: "p", th: "t", created: now, updated: now, unread: 0 };
 * takeReceived(record, { id: "1", t: "msg", th: "t", message: { t: "msg" }, raw: "{}" }, now);
 * console.log(record.unread); // 1
 * ```
 */
export function takeReceived(
  record: ThreadRecord,
  line: IncomingLine,
  now: string,
): void {
  const m = line.message;
  if (line.t === "msg") {
    record.unread += 1;
    if (record.subject === undefined && typeof m.subject === "string") {
      record.subject = clip(m.subject);
    }
  } else if (typeof m.state === "string") {
    record.theirs = {
      state: clip(m.state),
      ts: typeof m.ts === "string" ? m.ts : now,
    };
    if (typeof m.note === "string") record.theirs.note = clip(m.note);
  }
  record.updated = now;
}
