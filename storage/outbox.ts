/**
 * {@link Outbox}: the lines we sent that wait for their ack, per peer, in
 * Deno KV (`["ob", pk, id]`: the entry without `peer`, a split record when
 * long), with their ids (`["id", "last"]`: the highest id committed).
 *
 * Ids are allocated at call time from one {@link IdGenerator}, and the
 * highest one is written in the same commit as the entry, so id order =
 * outbox order = send order, also across restarts (NOTES item 3).
 *
 * The outbox has no index rows: an {@link OutboxIndex} in memory (thread,
 * type, queue time and parts of each entry) is rebuilt from the `ob`
 * records on open, so an enqueue costs one row and an ack one delete, with
 * no reads. Entries leave on ack (cumulatively for chunks and introductions
 * of the thread, and for grants and introductions to the peer in any
 * thread, see `Store.acked`), on {@link Outbox.dropBlob}, on replay when the
 * remote's `seen` covers them, or on retention ({@link Outbox.expire}).
 *
 * Resume replay ({@link Outbox.replayPages}) reads the records from KV in
 * pages as the connection asks for them, so replaying an outbox of any
 * length holds one page (≤ 1,000 entries, ≤ 4 MiB) at a time.
 *
 * @module
 */

import type { GroupCommitter } from "./kv/group_committer.ts";
import { type Key, keyText, threadKey } from "./kv/key.ts";
import { listRecords } from "./kv/split_record.ts";
import type { Tx } from "./kv/tx.ts";
import { OutboxIndex, type OutboxMeta } from "./outbox_index.ts";
import { requireText } from "./require_text.ts";
import {
  entryLine,
  type LogEntry,
  type OutboxDraft,
  type OutboxEntry,
  type Queued,
} from "./store.ts";
import type { TrafficLog } from "./traffic_log.ts";
import { IdGenerator, idTime } from "../wire/id.ts";
import { timestamp } from "../wire/time.ts";

/** Where the highest outbox id committed is kept. */
export const LAST_ID: Key = ["id", "last"];

/**
 * How far an entry's id may run ahead of the last id known durable and
 * still be written before its own commit ({@link Queued.early}: less than
 * this); ids after a restart start this far past the last committed one,
 * so they pass every id written but never committed before a crash (NOTES
 * item 3), and one they repeat (a restart within this time, crashing again)
 * was never written.
 */
export const EARLY_WRITE_MS = 5_000;

/**
 * Most entries in one atomic group of an enqueue: each writes its record
 * (and its parts), and the group once its log page, a thread index row per
 * thread and the highest id, under Deno KV's 1,000 mutations.
 */
const GROUP_ENTRIES = 100;
/** Estimated bytes of one group's entries, under Deno KV's 800 KiB commit. */
const GROUP_BYTES = 600_000;

/** Acked entries wait this long for a commit to ride along before their own. */
const DROP_DELAY_MS = 25;
/** Acked entries waiting that make a commit of their own at once. */
const DROPS_AT_ONCE = 512;

/** Most entries in one replay page. */
const REPLAY_PAGE_ENTRIES = 1_000;
/**
 * Entries in the first replay page; each next page doubles, up to
 * {@link REPLAY_PAGE_ENTRIES}. Small first: its lines are on the wire (and
 * the remote commits them) while the rest is still read from KV.
 */
const REPLAY_FIRST_PAGE = 64;
/** Most stored bytes in one replay page (a page of big lines is shorter). */
const REPLAY_PAGE_BYTES = 4 * 1024 * 1024;

/** An outbox entry as stored: without `peer`, which is in the key. */
type StoredEntry = Omit<OutboxEntry, "peer">;

/**
 * Queued calls built and committed together by one committer op: the
 * calls of a burst share it (up to {@link GROUP_ENTRIES} entries) instead
 * of each making its op, closures and promises.
 */
interface QueueBatch {
  /** Each call's peer key text and entries, in call order. */
  pks: string[];
  calls: OutboxEntry[][];
  /** Entries in it so far. */
  size: number;
  /** Calls in it not written early (see `Outbox.#late`). */
  late: number;
  /** Time of its highest id. */
  lastTime: number;
  /** Its lowest and highest ids (its calls' ids are between, in order). */
  firstId: string;
  lastId: string;
  /** Resolves once its commit is durable; rejects when it failed. */
  durable: Promise<void>;
  /** Settles after `durable`, once the outbox has noted the outcome. */
  settled: Promise<void>;
}

/** The index entry of a stored outbox entry split into `parts`. */
function metaOf(e: StoredEntry, parts: number): OutboxMeta {
  const meta: OutboxMeta = {
    id: e.id,
    t: e.t,
    tk: e.th === undefined ? null : threadKey(e.th),
    q: e.queuedAt,
    n: parts,
  };
  if (e.t === "chunk" && typeof e.fields.ref === "string") {
    meta.ref = e.fields.ref;
  }
  return meta;
}

/** The traffic-log row of a queued entry: its wire line (a chunk's without data). */
function logRow(e: OutboxEntry): Omit<LogEntry, "seq"> {
  const row: Omit<LogEntry, "seq"> = {
    peer: e.peer,
    dir: "out",
    t: e.t,
    id: e.id,
    line: JSON.stringify(entryLine(e)),
    at: e.queuedAt,
  };
  if (e.th !== undefined) row.th = e.th;
  return row;
}

/** Deletes one outbox record and its parts (already out of the index). */
function dropEntry(tx: Tx, pk: string, id: string, parts: number): void {
  tx.dropRecord(["ob", pk, id], parts);
  tx.cut();
}

/**
 * The outbox of a store, and the ids it allocates.
 *
 * @example
 * ```ts ignore
 * const outbox = new Outbox(committer, undefined);
 * await outbox.load();
 * const [entry] = await outbox.enqueue(peer, [{ fields: { t: "msg", th: "t1", parts: [] } }]);
 * for await (const page of outbox.replayPages(peer, {})) console.log(page[0].id === entry.id);
 * ```
 */
export class Outbox {
  #c: GroupCommitter;
  #log: TrafficLog | undefined;
  #ids: IdGenerator;
  /** The outbox's index, kept in step with every enqueue and drop. */
  #index = new OutboxIndex();
  /** Time of the highest id known durable (-1: none yet). */
  #durableTime: number;
  /**
   * Batches whose commit is not settled yet, in id order: an ack of an id
   * in one of them waits for its settling (a range per batch, not an entry
   * per id).
   */
  #unsettled: QueueBatch[] = [];
  /** Queued entries not early: they (and later ones) go out once durable. */
  #late = 0;
  /** The batch later calls join, until its build starts. */
  #batch: QueueBatch | undefined;
  /** Acked entries whose delete waits for the next commit. */
  #drops: Array<{ pk: string; meta: OutboxMeta }> = [];
  #dropTimer: ReturnType<typeof setTimeout> | undefined;

  /**
   * The outbox written through `committer`; ids continue after `lastId`,
   * {@link EARLY_WRITE_MS} past it. Each entry's `out` row goes to `log`
   * in its enqueue's commit.
   */
  constructor(
    committer: GroupCommitter,
    lastId: string | undefined,
    log?: TrafficLog,
  ) {
    this.#c = committer;
    this.#log = log;
    this.#ids = new IdGenerator({ last: lastId, skipMs: EARLY_WRITE_MS });
    this.#durableTime = lastId === undefined ? -1 : idTime(lastId) ?? -1;
  }

  /** Rebuilds the index from the `ob` records (on open). */
  load(): Promise<void> {
    return this.#c.submit(true, async () => {
      const range = { prefix: ["ob"] };
      for await (
        const { key, value, parts } of listRecords(this.#c.backend, range, 3)
      ) {
        this.#index.add(key[1] as string, metaOf(value as StoredEntry, parts));
      }
    });
  }

  /** A fresh id, greater than every id handed out before. */
  nextId(): string {
    return this.#ids.next();
  }

  /**
   * Allocates ids and timestamps for `drafts` and commits them to `peer`'s
   * outbox; resolves once durable, with the entries in id order. (Their
   * caller writes them after that: no later entry is written before them.)
   */
  enqueue(peer: string, drafts: OutboxDraft[]): Promise<OutboxEntry[]> {
    try {
      return this.#queue(peer, drafts, false).durable;
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /**
   * {@link enqueue} without waiting: the entries have their ids at once
   * (in call order), their commit is under way, and {@link Queued.early}
   * says whether they may be written before it (never when `mayBeEarly` is
   * false). Throws (a one-line TypeError) on a bad draft, having queued
   * nothing.
   */
  queue(peer: string, drafts: OutboxDraft[], mayBeEarly = true): Queued {
    return this.#queue(peer, drafts, mayBeEarly);
  }

  #queue(peer: string, drafts: OutboxDraft[], mayBeEarly: boolean): Queued {
    requireText(peer, "enqueue: peer");
    if (!Array.isArray(drafts)) {
      throw new TypeError("enqueue: drafts must be an array");
    }
    const queuedAt = Date.now();
    const ts = timestamp(queuedAt);
    const entries: OutboxEntry[] = [];
    // Ids are taken now, in call order; commits happen in the same order.
    for (const draft of drafts) {
      entries.push(this.#entry(peer, draft, ts, queuedAt));
    }
    if (entries.length === 0) {
      return { entries, durable: Promise.resolve(entries), early: true };
    }
    const pk = keyText(peer);
    // Indexed now, in id order; an ack of one waits for this commit.
    for (const e of entries) this.#index.add(pk, metaOf(e, 0));
    const lastTime = idTime(entries[entries.length - 1].id) ?? Infinity;
    const early = mayBeEarly && this.#late === 0 && this.#durableTime >= 0 &&
      lastTime < this.#durableTime + EARLY_WRITE_MS;
    let batch = this.#batch;
    if (batch === undefined || batch.size >= GROUP_ENTRIES) {
      batch = this.#batch = this.#openBatch();
    }
    batch.pks.push(pk);
    batch.calls.push(entries);
    batch.size += entries.length;
    if (lastTime > batch.lastTime) batch.lastTime = lastTime;
    if (batch.calls.length === 1) batch.firstId = entries[0].id;
    batch.lastId = entries[entries.length - 1].id;
    if (!early) {
      batch.late++;
      this.#late++;
    }
    return { entries, durable: batch.durable.then(() => entries), early };
  }

  /**
   * A batch for the calls to come: one committer op builds them all, and
   * one settling updates the outbox after its commit.
   */
  #openBatch(): QueueBatch {
    const batch = {
      pks: [],
      calls: [],
      size: 0,
      late: 0,
      lastTime: -Infinity,
      firstId: "",
      lastId: "",
    } as unknown as QueueBatch;
    this.#unsettled.push(batch);
    batch.durable = this.#c.submit(false, (tx) => this.#build(tx, batch));
    const settle = () => {
      // Never built (the store closed): later calls open a batch of their own.
      if (this.#batch === batch) this.#batch = undefined;
      const at = this.#unsettled.indexOf(batch);
      if (at >= 0) this.#unsettled.splice(at, 1);
      this.#late -= batch.late;
    };
    batch.settled = batch.durable.then(() => {
      if (batch.lastTime > this.#durableTime) {
        this.#durableTime = batch.lastTime;
      }
      settle();
    }, () => {
      batch.calls.forEach((entries, i) => {
        for (const e of entries) this.#index.remove(batch.pks[i], e.id);
      });
      settle();
    });
    return batch;
  }

  /** Writes `batch`'s entries (closed to later calls now) in `tx`. */
  async #build(tx: Tx, batch: QueueBatch): Promise<void> {
    if (this.#batch === batch) this.#batch = undefined;
    // Acked entries waiting for a commit ride along with this one.
    for (const d of this.#takeDrops()) dropEntry(tx, d.pk, d.meta.id, d.meta.n);
    let inGroup = 0;
    let groupBytes = 0;
    let lastId = "";
    // The open group's log entries: one page, written as the group closes.
    const logged: LogEntry[] = [];
    const closeGroup = async () => {
      if (logged.length > 0) await this.#log?.appendPage(tx, logged);
      logged.length = 0;
      tx.set(LAST_ID, lastId);
      tx.cut();
      inGroup = 0;
      groupBytes = 0;
    };
    for (let c = 0; c < batch.calls.length; c++) {
      const pk = batch.pks[c];
      for (const entry of batch.calls[c]) {
        const { peer: _, ...stored } = entry;
        const row = logRow(entry);
        // The entry and its log row each hold the line: at most 3 bytes a
        // character each, plus keys and fields.
        const bytes = row.line.length * 6 + 1500;
        if (
          inGroup > 0 &&
          (inGroup >= GROUP_ENTRIES || groupBytes + bytes > GROUP_BYTES)
        ) await closeGroup();
        inGroup++;
        groupBytes += bytes;
        const parts = await tx.putRecord(["ob", pk, stored.id], stored, true);
        if (parts > 0) {
          const meta = this.#index.get(pk, entry.id);
          if (meta) meta.n = parts;
        }
        // Its traffic-log row, once, with it (not again on each write):
        // in its group's page.
        if (this.#log) logged.push(this.#log.reserve(row));
        lastId = entry.id;
      }
    }
    // The group's page, and the highest id as of its last entry, once.
    if (inGroup > 0) await closeGroup();
  }

  #entry(
    peer: string,
    draft: OutboxDraft,
    ts: string,
    queuedAt: number,
  ): OutboxEntry {
    const fields = draft?.fields;
    if (
      typeof fields !== "object" || fields === null ||
      typeof fields.t !== "string"
    ) {
      throw new TypeError("enqueue: each draft needs fields with a string t");
    }
    if (fields.th !== undefined && typeof fields.th !== "string") {
      throw new TypeError("enqueue: fields.th must be a string");
    }
    const { id: _id, ts: _ts, ...rest } = fields;
    if (fields.t === "chunk") {
      if (draft.chunk === undefined) {
        throw new TypeError(
          "enqueue: a chunk draft needs a ChunkSource (chunk data is never outboxed)",
        );
      }
      delete rest.data;
    }
    const entry: OutboxEntry = {
      peer,
      id: this.#ids.next(),
      ts,
      t: fields.t,
      fields: rest as OutboxEntry["fields"],
      queuedAt,
    };
    if (fields.th !== undefined) entry.th = fields.th;
    if (draft.chunk !== undefined) entry.chunk = { ...draft.chunk };
    return entry;
  }

  /** True while the line `id` to `peer` waits for its ack. */
  has(peer: string, id: string): boolean {
    return this.#index.get(keyText(peer), id) !== undefined;
  }

  /** How many entries wait for `peer` (from the index). */
  count(peer: string): number {
    return this.#index.size(keyText(peer));
  }

  /** Every unacked entry for `peer`, in id order. */
  async list(peer: string): Promise<OutboxEntry[]> {
    const out: OutboxEntry[] = [];
    const pk = keyText(requireText(peer, "outbox: peer"));
    const range = { prefix: ["ob", pk] };
    for await (const { value } of listRecords(this.#c.backend, range, 3)) {
      const e = value as StoredEntry;
      // An acked entry whose delete is not committed yet is already gone.
      if (this.#index.get(pk, e.id)) out.push({ ...e, peer });
    }
    return out;
  }

  /** {@link Outbox.replayPages}, all pages in one array. */
  async replay(
    peer: string,
    seen: Record<string, string>,
    onCovered?: (entry: OutboxEntry) => void,
  ): Promise<OutboxEntry[]> {
    const out: OutboxEntry[] = [];
    for await (const page of this.replayPages(peer, seen, onCovered)) {
      for (const e of page) out.push(e);
    }
    return out;
  }

  /**
   * The entries to replay after the remote's `resume`, in id order, read
   * from KV a page at a time as the consumer asks: in threads listed in
   * `seen` those with a greater id, in unlisted threads all. Entries at or
   * below their thread's seen id are dropped (the remote has them durably)
   * and told to `onCovered` once their drop is durable, never yielded
   * (SPEC 9.5). Everything queued before the call is committed before the
   * listing starts; an entry committed while it runs may be listed or not
   * (a backend may list a snapshot), never out of id order.
   */
  async *replayPages(
    peer: string,
    seen: Record<string, string>,
    onCovered?: (entry: OutboxEntry) => void,
  ): AsyncGenerator<OutboxEntry[]> {
    const pk = keyText(peer);
    // Only indexed entries are replayed: none, nothing to list (most
    // handshakes).
    if (this.#index.size(pk) === 0) return;
    await this.#c.submit(true, () => undefined);
    let page: OutboxEntry[] = [];
    let bytes = 0;
    let pageEntries = REPLAY_FIRST_PAGE;
    let covered: Array<{ entry: OutboxEntry; parts: number }> = [];
    const dropCovered = async () => {
      const drops = covered;
      covered = [];
      if (drops.length === 0) return;
      await this.#c.submit(false, (tx) => {
        for (const d of drops) dropEntry(tx, pk, d.entry.id, d.parts);
      });
      for (const d of drops) onCovered?.(d.entry);
    };
    try {
      const range = { prefix: ["ob", pk] };
      for await (
        const listed of listRecords(this.#c.backend, range, 3)
      ) {
        const e = listed.value as StoredEntry;
        // Acked already, its delete not committed yet: not sent again.
        if (!this.#index.get(pk, e.id)) continue;
        const last = e.th !== undefined && Object.hasOwn(seen, e.th)
          ? seen[e.th]
          : undefined;
        if (typeof last === "string" && e.id <= last) {
          this.#index.remove(pk, e.id);
          covered.push({ entry: { ...e, peer }, parts: listed.parts });
        } else {
          page.push({ ...e, peer });
          bytes += listed.bytes;
        }
        if (
          page.length >= pageEntries || bytes >= REPLAY_PAGE_BYTES ||
          covered.length >= REPLAY_PAGE_ENTRIES
        ) {
          await dropCovered();
          if (page.length > 0) {
            const full = page;
            page = [];
            bytes = 0;
            pageEntries = Math.min(2 * pageEntries, REPLAY_PAGE_ENTRIES);
            yield full;
          }
        }
      }
      await dropCovered();
      if (page.length > 0) yield page;
    } finally {
      // Stopped early (the connection closed): covered entries out of the
      // index still leave KV.
      await dropCovered();
    }
  }

  /**
   * Handles an ack of `id` to `peer`: drops the entry and what it acks
   * cumulatively; true when the id was in the outbox. The index answers at
   * once; only the deletes go to the committer, so acks arriving together
   * share one commit and read nothing. The entry's own thread counts,
   * whatever `th` the ack carried.
   */
  acked(peer: string, id: string): Promise<boolean> {
    // An entry written before its commit (Queued.early) counts as sent once
    // that commit is durable: its ack is taken after it, never before.
    // (Earlier entries, acked with it cumulatively, committed before it.)
    for (const batch of this.#unsettled) {
      if (id >= batch.firstId && id <= batch.lastId) {
        return batch.settled.then(() => this.#take(peer, id));
      }
    }
    return Promise.resolve(this.#take(peer, id));
  }

  /**
   * An ack, taken: the index drops the entries at once; their deletes ride
   * along with the next commit (or one of their own, soon).
   */
  #take(peer: string, id: string): boolean {
    const pk = keyText(peer);
    const drops = this.#index.ackDrops(pk, id);
    if (drops.length === 0) return false;
    for (const meta of drops) this.#drops.push({ pk, meta });
    if (this.#drops.length >= DROPS_AT_ONCE) this.flushDrops();
    else {
      this.#dropTimer ??= setTimeout(() => {
        this.#dropTimer = undefined;
        this.flushDrops();
      }, DROP_DELAY_MS);
    }
    return true;
  }

  #takeDrops(): Array<{ pk: string; meta: OutboxMeta }> {
    if (this.#dropTimer !== undefined) {
      clearTimeout(this.#dropTimer);
      this.#dropTimer = undefined;
    }
    return this.#drops.splice(0);
  }

  /**
   * Commits the deletes of acked entries now (on close, or when many wait).
   * Dying before means one replay each, acked again as a duplicate.
   */
  flushDrops(): Promise<void> {
    const drops = this.#takeDrops();
    if (drops.length === 0) return Promise.resolve();
    const done = this.#c.submit(false, (tx) => {
      for (const d of drops) dropEntry(tx, d.pk, d.meta.id, d.meta.n);
    });
    done.catch(() => {}); // the entries are replayed and acked again
    return done;
  }

  /** Removes the outbox chunk entries of `ref` to `peer` (refused blob). */
  dropBlob(peer: string, ref: string): Promise<number> {
    try {
      requireText(peer, "dropBlob: peer");
      requireText(ref, "dropBlob: ref");
    } catch (error) {
      return Promise.reject(error);
    }
    const pk = keyText(peer);
    const drops = this.#index.list(pk).filter((m) =>
      m.t === "chunk" && m.ref === ref
    );
    for (const m of drops) this.#index.remove(pk, m.id);
    if (drops.length === 0) return Promise.resolve(0);
    return this.#c.submit(false, (tx) => {
      for (const m of drops) dropEntry(tx, pk, m.id, m.n);
      return drops.length;
    });
  }

  /** Drops, in `tx`, every entry queued before `end` (ms); returns how many. */
  expire(tx: Tx, end: number): number {
    let count = 0;
    for (const pk of this.#index.peers()) {
      for (const m of this.#index.list(pk)) {
        if (m.q >= end) continue;
        this.#index.remove(pk, m.id);
        dropEntry(tx, pk, m.id, m.n);
        count++;
      }
    }
    return count;
  }
}
