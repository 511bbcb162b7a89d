/**
 * The daemon's inbox: Peer events become inbox items here and reach the
 * streams that follow them (`tail`, `wait`, `listen`, requests awaiting
 * their answer); notices wait here until read; `read` shows a conversation
 * from the log.
 *
 * @module
 */

import type { Peer } from "../peer/peer.ts";
import type { PeerEvent, ProgressEvent } from "../peer/peer_events.ts";
import type { LogEntry, ThreadRecord } from "../storage/store.ts";
import { ControlError } from "./control.ts";
import { str } from "./control_args.ts";
import { itemFromEvent, itemFromLog, progressItem } from "./inbox_item.ts";
import type { PeerNames } from "./peer_names.ts";
import type { InboxItem, ProgressItem, WaitResult } from "./protocol.ts";

/** Most notices kept until read; the oldest go first. */
const MAX_NOTICES = 1000;

/** Takes an inbox item and the Peer event it came from. */
export type ItemListener = (item: InboxItem, ev: PeerEvent) => void;

/**
 * Inbox items and notices of one daemon's {@link Peer}.
 *
 * @example
 * ```ts ignore
 * import { Inbox } from "./inbox.ts";
 * const inbox = new Inbox(peer, names, stopped, () => false);
 * for await (const ev of peer.events()) await inbox.publish(ev);
 * ```
 */
export class Inbox {
  readonly #peer: Peer;
  readonly #names: PeerNames;
  readonly #stopped: Promise<void>;
  readonly #isStopped: () => boolean;
  #listeners = new Set<ItemListener>();
  /** Every Peer event, for streams that want more than inbox items (progress). */
  #raw = new Set<(ev: PeerEvent) => void>();
  #notices: InboxItem[] = [];

  /**
   * `stopped` resolves when the daemon stops (streams end), when
   * `isStopped()` turns true.
   */
  constructor(
    peer: Peer,
    names: PeerNames,
    stopped: Promise<void>,
    isStopped: () => boolean,
  ) {
    this.#peer = peer;
    this.#names = names;
    this.#stopped = stopped;
    this.#isStopped = isStopped;
  }

  /** Notices not yet read. */
  get noticeCount(): number {
    return this.#notices.length;
  }

  /**
   * Takes one Peer event: to the raw listeners, then as an inbox item to
   * the notices (when it is one) and the item listeners.
   */
  async publish(ev: PeerEvent): Promise<void> {
    for (const l of this.#raw) l(ev);
    const item = await itemFromEvent(ev, this.#names);
    if (!item) return;
    if (item.event === "notice" && item.kind !== "error") {
      this.#notices.push(item);
      if (this.#notices.length > MAX_NOTICES) this.#notices.shift();
    }
    for (const l of this.#listeners) l(item, ev);
  }

  /** Calls `listener` with every item from now; returns the way to stop. */
  onItem(listener: ItemListener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Streams our Peer's progress events as items while `run` runs. */
  async withProgress<T>(
    wanted: (ev: ProgressEvent) => boolean,
    emit: (item: unknown) => Promise<void>,
    run: (
      flush: (keep?: (i: ProgressItem) => boolean) => Promise<void>,
    ) => Promise<T>,
  ): Promise<T> {
    const queue: ProgressItem[] = [];
    const listener = (ev: PeerEvent) => {
      if (ev.type !== "progress" || !wanted(ev)) return;
      queue.push(progressItem(ev));
    };
    const flush = async (keep?: (i: ProgressItem) => boolean) => {
      // The latest state of each transfer is enough for a bar.
      const latest = new Map<string, ProgressItem>();
      for (const item of queue.splice(0)) {
        if (!keep || keep(item)) latest.set(`${item.dir} ${item.ref}`, item);
      }
      for (const item of latest.values()) await emit(item);
    };
    this.#raw.add(listener);
    try {
      return await run(flush);
    } finally {
      this.#raw.delete(listener);
    }
  }

  #matches(
    item: InboxItem,
    peer: string | undefined,
    th: string | undefined,
  ): boolean {
    return (!peer || item.peer === peer) && (!th || item.th === th);
  }

  /** Marks thread `th` with `peer` read, when it has unread messages. */
  async markRead(peer: string, th: string): Promise<void> {
    const rec = await this.#peer.store.thread(peer, th);
    if (rec && rec.unread > 0) await this.#peer.markRead(peer, th);
  }

  /** Unread messages (per the thread records' counts), oldest first. */
  async unread(
    peer: string | undefined,
    th: string | undefined,
  ): Promise<InboxItem[]> {
    const items: InboxItem[] = [];
    const threads: ThreadRecord[] = (await this.#peer.threads()).filter((t) =>
      t.unread > 0 && (!peer || t.peer === peer) && (!th || t.th === th)
    );
    for (const t of threads) {
      const log = (await this.#peer.log({ peer: t.peer, th: t.th }))
        .filter((e) => e.dir === "in" && e.t === "msg");
      for (const e of log.slice(-t.unread)) {
        const item = await itemFromLog(e, this.#peer, this.#names);
        if (item) items.push(item);
      }
    }
    return items.sort((x, y) => (x.id ?? "").localeCompare(y.id ?? ""));
  }

  /**
   * The errs a peer sent in answer to our msgs (e.g. `forbidden`), each
   * with the thread of the msg it answers.
   */
  async refusals(peer: string): Promise<Array<LogEntry & { th: string }>> {
    const log = await this.#peer.log({ peer });
    const threadOf = new Map<string, string>();
    for (const e of log) {
      if (e.t === "msg" && e.dir === "out" && e.id && e.th) {
        threadOf.set(e.id, e.th);
      }
    }
    const out: Array<LogEntry & { th: string }> = [];
    for (const e of log) {
      if (e.t !== "err" || e.dir !== "in") continue;
      let re: unknown;
      try {
        re = JSON.parse(e.line).re;
      } catch {
        continue;
      }
      const th = typeof re === "string" ? threadOf.get(re) : undefined;
      if (th) out.push({ ...e, th });
    }
    return out;
  }

  async #filters(
    a: Record<string, unknown>,
  ): Promise<{ peer?: string; th?: string }> {
    return {
      peer: str(a.peer) ? await this.#names.key(str(a.peer)!) : undefined,
      th: str(a.thread),
    };
  }

  #takeNotices(peer: string | undefined): InboxItem[] {
    const mine = this.#notices.filter((n) => !peer || n.peer === peer);
    this.#notices = this.#notices.filter((n) => !mine.includes(n));
    return mine;
  }

  /** The `tail` op: the unread items, or (`follow`) every new one until the client leaves. */
  async tail(
    a: Record<string, unknown>,
    emit: (item: unknown) => Promise<void>,
    signal: AbortSignal,
  ) {
    const { peer, th } = await this.#filters(a);
    const all = a.all === true;
    const mark = a.mark === true;
    if (a.follow !== true) {
      const items = [
        ...(await this.unread(peer, th)),
        ...this.#takeNotices(peer),
      ];
      for (const item of items) await emit(item);
      if (mark) {
        for (const i of items) {
          if (i.th && i.event === "message") {
            await this.markRead(i.peer, i.th);
          }
        }
      }
      return { items };
    }
    const queue: Array<InboxItem | ProgressItem> = [];
    let wake: (() => void) | undefined;
    const progress = a.progress === true
      ? (ev: PeerEvent) => {
        if (ev.type !== "progress" || ev.dir !== "in") return;
        if (peer && ev.peer !== peer) return;
        queue.push(progressItem(ev));
        wake?.();
      }
      : undefined;
    if (progress) this.#raw.add(progress);
    const listener = (item: InboxItem) => {
      if (!this.#matches(item, peer, th)) return;
      const content = item.event === "message" || item.event === "state";
      if (!all && !content && item.event !== "notice") return;
      if (!all && item.kind === "error") return;
      queue.push(item);
      wake?.();
    };
    this.#listeners.add(listener);
    const stop = new Promise<void>((r) => {
      if (signal.aborted) r();
      signal.addEventListener("abort", () => r(), { once: true });
      this.#stopped.then(r);
    });
    try {
      while (!signal.aborted) {
        while (queue.length > 0) {
          const item = queue.shift()!;
          await emit(item);
          if (item.event === "progress") continue;
          if (mark && item.th && item.event === "message") {
            await this.markRead(item.peer, item.th);
          }
        }
        await Promise.race([stop, new Promise<void>((r) => wake = r)]);
        wake = undefined;
        if (this.#isStopped()) break;
      }
    } finally {
      this.#listeners.delete(listener);
      if (progress) this.#raw.delete(progress);
    }
    return { items: [] };
  }

  /** The `wait` op: blocks until messages arrive or the peer's state is one of `states`. */
  async wait(
    a: Record<string, unknown>,
    emit: (item: unknown) => Promise<void>,
    signal: AbortSignal,
  ): Promise<WaitResult> {
    const { peer, th } = await this.#filters(a);
    const states = Array.isArray(a.states) ? a.states.map(String) : undefined;
    const timeoutMs = typeof a.timeoutMs === "number" ? a.timeoutMs : 300_000;
    const got: InboxItem[] = [];
    let wake: (() => void) | undefined;
    const listener = (item: InboxItem) => {
      if (!this.#matches(item, peer, th)) return;
      if (item.event === "message" || item.event === "state") {
        got.push(item);
        wake?.();
      }
    };
    this.#listeners.add(listener);
    let emitting = Promise.resolve();
    const progress = a.progress === true
      ? (ev: PeerEvent) => {
        if (ev.type !== "progress" || ev.dir !== "in") return;
        if (peer && ev.peer !== peer) return;
        const item = progressItem(ev);
        emitting = emitting.then(() => emit(item)).catch(() => {});
      }
      : undefined;
    if (progress) this.#raw.add(progress);
    const theirState = async (): Promise<string | undefined> => {
      const recs = (await this.#peer.threads()).filter((t) =>
        t.th === th && (!peer || t.peer === peer)
      );
      return recs.find((r) => r.theirs)?.theirs?.state;
    };
    const finish = async (
      items: InboxItem[],
      timedOut: boolean,
    ): Promise<WaitResult> => {
      for (const i of items) {
        if (i.th && i.event === "message") await this.markRead(i.peer, i.th);
      }
      const all = [...items, ...this.#takeNotices(peer)];
      if (!states) return { items: all, timedOut };
      const state = await theirState();
      return {
        items: all,
        timedOut,
        matched: state !== undefined && states.includes(state),
        ...(state ? { state } : {}),
      };
    };
    try {
      if (states) {
        const now = await theirState();
        if (now && states.includes(now)) return await finish([], false);
      } else {
        const unread = await this.unread(peer, th);
        if (unread.length > 0) return await finish(unread, false);
      }
      let timer: ReturnType<typeof setTimeout> | undefined;
      const timeout = new Promise<"timeout">((r) =>
        timer = setTimeout(() => r("timeout"), timeoutMs)
      );
      const aborted = new Promise<"abort">((r) =>
        signal.addEventListener("abort", () => r("abort"), { once: true })
      );
      try {
        while (got.length === 0) {
          const r = await Promise.race([
            timeout,
            aborted,
            this.#stopped.then(() => "abort" as const),
            new Promise<"item">((res) => wake = () => res("item")),
          ]);
          if (r === "timeout") return await finish([], true);
          if (r === "abort") throw new ControlError("interrupted");
        }
        // Let lines that arrived together land in the same answer.
        await new Promise((r) => setTimeout(r, 50));
        return await finish(got.splice(0), false);
      } finally {
        clearTimeout(timer);
      }
    } finally {
      this.#listeners.delete(listener);
      if (progress) {
        this.#raw.delete(progress);
        await emitting;
      }
    }
  }

  /** The `read` op: a conversation, both directions, oldest first; marks it read. */
  async read(a: Record<string, unknown>): Promise<unknown> {
    const { peer, th } = await this.#filters(a);
    const last = typeof a.last === "number" ? a.last : 50;
    let entries: LogEntry[];
    if (th) {
      const peers = peer ? [peer] : [
        ...new Set(
          (await this.#peer.threads()).filter((t) => t.th === th).map((t) =>
            t.peer
          ),
        ),
      ];
      if (peers.length === 0) throw new ControlError(`unknown thread "${th}"`);
      entries = [];
      for (const p of peers) {
        entries.push(...await this.#peer.log({ peer: p, th }));
      }
    } else {
      entries = await this.#peer.log(peer ? { peer } : {});
    }
    entries = entries.filter((e) => e.t === "msg" || e.t === "state");
    // A refused request (err forbidden) shows in the thread it was sent in.
    for (const p of new Set(entries.map((e) => e.peer))) {
      entries.push(
        ...(await this.refusals(p)).filter((e) => !th || e.th === th),
      );
    }
    // A line replayed after a reconnect is logged again: show it once.
    const seen = new Set<string>();
    entries = entries
      .sort((x, y) => x.seq - y.seq)
      .filter((e) => {
        const id = `${e.dir} ${e.peer} ${e.id}`;
        if (seen.has(id)) return false;
        seen.add(id);
        return true;
      })
      .slice(-last);
    const items: InboxItem[] = [];
    for (const e of entries) {
      const item = await itemFromLog(e, this.#peer, this.#names);
      if (item) items.push(item);
    }
    if (a.mark !== false) {
      const seen = new Set<string>();
      for (const i of items) {
        if (!i.th || seen.has(`${i.peer} ${i.th}`)) continue;
        seen.add(`${i.peer} ${i.th}`);
        await this.markRead(i.peer, i.th);
      }
    }
    return { items };
  }
}
