/**
 * {@link ThreadRecords}: one {@link ThreadRecord} per thread with a peer
 * (subject, both sides' soft state, unread count), at `["thr", pk, tk]`.
 *
 * Written by received msg and state lines (in their own commit, see
 * `ReceivedLines`) and by our own side's changes ({@link ThreadRecords.patch});
 * text copied from remote lines is clipped to 4,096 characters.
 *
 * @module
 */

import type { GroupCommitter } from "./kv/group_committer.ts";
import { type Key, keyText, threadKey } from "./kv/key.ts";
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

/** The key of the record of thread `th` with `peer`. */
function threadRecordKey(peer: string, th: string): Key {
  return ["thr", keyText(peer), threadKey(th)];
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
  list(peer?: string): Promise<ThreadRecord[]> {
    return this.#c.collect<ThreadRecord>(
      peer === undefined ? ["thr"] : ["thr", keyText(peer)],
      3,
    );
  }

  /** The record of thread `th` with `peer`, or undefined. */
  get(peer: string, th: string): Promise<ThreadRecord | undefined> {
    return this.#c.read<ThreadRecord>(threadRecordKey(peer, th));
  }

  /** Stores a thread record, replacing the previous one. */
  put(record: ThreadRecord): Promise<void> {
    try {
      requireText(record?.peer, "putThread: peer");
      requireText(record.th, "putThread: th");
    } catch (error) {
      return Promise.reject(error);
    }
    return this.#c.put(threadRecordKey(record.peer, record.th), record);
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
      const record = await tx.getRecord<ThreadRecord>(key) ??
        { peer, th, created: now, updated: now, unread: 0 };
      if (patch.subject !== undefined && record.subject === undefined) {
        record.subject = clip(patch.subject);
      }
      if (patch.mine) {
        record.mine = { ...patch.mine, state: clip(patch.mine.state) };
        if (patch.mine.note !== undefined) {
          record.mine.note = clip(patch.mine.note);
        }
      }
      if (patch.read) record.unread = 0;
      record.updated = now;
      await tx.putRecord(key, record);
      return record;
    }, [key]);
  }

  /** A received msg (one more unread) or state (theirs), written in `tx`. */
  async touch(
    tx: Tx,
    peer: string,
    line: IncomingLine,
    now: string,
  ): Promise<void> {
    const record = await this.current(tx, peer, line.th as string, now);
    takeReceived(record, line, now);
    await this.write(tx, record);
  }

  /** The thread's record as `tx` sees it, or a new one created `now`. */
  async current(
    tx: Tx,
    peer: string,
    th: string,
    now: string,
  ): Promise<ThreadRecord> {
    return await tx.getRecord<ThreadRecord>(threadRecordKey(peer, th)) ??
      { peer, th, created: now, updated: now, unread: 0 };
  }

  /** Writes `record` in `tx`. */
  async write(tx: Tx, record: ThreadRecord): Promise<void> {
    await tx.putRecord(threadRecordKey(record.peer, record.th), record);
  }
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
