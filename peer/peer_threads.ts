/**
 * The thread side of a {@link Peer}: one actor per thread (created on first
 * use, fed every msg and state line in and out), the seq-ordered emission of
 * received `message` and `state` events, and the `events({ after })` replay
 * from the traffic log.
 *
 * @module
 */

import { type Actor, createActor } from "npm:xstate@^5.33.3";
import type { Connection, ReceivedLine } from "../actors/connection.ts";
import type { ActorInspection, Delivery } from "../actors/supervisor.ts";
import { type ThreadMachine, threadMachine } from "../actors/thread_machine.ts";
import {
  EventQueue,
  messageEvent,
  type PeerEvent,
  type PeerMessageEvent,
  type ReceivedBlob,
  type RequestInfo,
  type StateEvent,
  stateEvent,
} from "./peer_events.ts";
import type {
  LogEntry,
  Store,
  ThreadPatch,
  ThreadRecord,
} from "../storage/store.ts";
import { errorText } from "../wire/error_text.ts";
import { timestamp } from "../wire/time.ts";
import type { BlobPart, Msg, State } from "../wire/types.ts";

/** A thread's actor (see thread_machine.ts). */
export type ThreadActor = Actor<ThreadMachine>;

/** What a thread actor is fed: a msg or state line in or out, or READ. */
export type ThreadActorEvent = Parameters<ThreadActor["send"]>[0];

const LOG_BATCH = 256;
/** A thread's record is rewritten at most this often by sends alone. */
const TOUCH_EVERY_MS = 1_000;
/** How many threads' last write times are kept for that. */
const TOUCHED_MEMORY = 10_000;

/** What {@link PeerThreads} needs from its Peer. */
export interface PeerThreadsOptions {
  /** Thread records and the traffic log (for replay) are read here. */
  store: Store;
  /** Shows the thread actors, when given. */
  inspect?: ActorInspection;
  /** The inspector parent of a peer's threads (its connection). */
  parentId(peer: string): string;
  /** Reports a Peer event (message, state, blob, replay error). */
  emit(event: PeerEvent): void;
  /** True once the Peer is closing. */
  closing(): boolean;
  /** A received msg/state line, for the extensions (mirror). */
  onLine(
    peer: string,
    message: Record<string, unknown> & { t: string },
  ): Promise<void>;
  /** Resolves a received msg's blob part to its file. */
  resolveBlob(
    peer: string,
    part: BlobPart,
    conn: Connection,
  ): Promise<ReceivedBlob>;
  /** A logged msg's blob part as stored (replay). */
  replayBlob(peer: string, part: BlobPart): Promise<ReceivedBlob>;
  /** Serves the requests a committed msg makes (profile caps). */
  requests(peer: string, m: Msg, conn: Connection): Promise<RequestInfo[]>;
}

/**
 * The threads of one Peer: their actors by `${peer} ${th}`, and the
 * received msg/state events, emitted in seq order.
 *
 * @example
 * ```ts ignore
 * const threads = new PeerThreads({ store, parentId, emit, closing, onLine, resolveBlob, replayBlob, requests });
 * threads.afterCommit(lines); // fresh lines hold their event's turn
 * await threads.deliver(delivery); // each line, then its event in seq order
 * ```
 */
export class PeerThreads {
  #o: PeerThreadsOptions;
  #store: Store;
  #actors = new Map<string, Promise<ThreadActor>>();
  /** Seqs of received msg/state lines committed here whose event is not out yet, ascending. */
  #pendingSeqs: number[] = [];
  #seqWaiters = new Map<number, () => void>();
  /** When each thread record was last written by {@link writeOurSide}. */
  #threadTouched = new Map<string, number>();
  /** Msgs fed to their actor with their batch ({@link afterCommit}), not one by one. */
  #fedInBatch = new WeakSet<object>();
  /** Where thread actors are shown; set at construction or by {@link attach}. */
  #inspect: ActorInspection | undefined;

  /** Sets up the (empty) thread table. */
  constructor(options: PeerThreadsOptions) {
    this.#o = options;
    this.#store = options.store;
    this.#inspect = options.inspect;
  }

  /**
   * Shows the thread actors in `inspect` from now on: those already running
   * are registered (once their creation settles), later ones get its observer.
   *
   * @example
   * ```ts ignore
   * threads.attach(hub); // hub.actors() then lists each thread
   * ```
   */
  attach(inspect: ActorInspection): void {
    if (this.#inspect === inspect) return;
    this.#inspect = inspect;
    for (const [id, p] of this.#actors) {
      const peer = id.slice(0, id.indexOf(" "));
      const th = id.slice(id.indexOf(" ") + 1);
      void p.then((a) => {
        this.#show(a, peer);
        return this.#sync(a, peer, th);
      }).catch(() => {});
    }
  }

  /**
   * Puts the stored record in the actor's view (the store is its writer;
   * the actor's own count may have seen a line twice: one committed before
   * the actor loaded the record, then fed to it).
   */
  async #sync(a: ThreadActor, peer: string, th: string): Promise<void> {
    const record = await this.#store.thread(peer, th);
    if (record && !this.#closing) a.send({ type: "STORED", record });
  }

  #show(a: ThreadActor, peer: string): void {
    const record = a.getSnapshot().context.record;
    this.#inspect?.register(a, {
      kind: "thread",
      label: `thread ${record.subject ?? record.th}`,
      parentId: this.#o.parentId(peer),
    });
  }

  get #closing(): boolean {
    return this.#o.closing();
  }

  #emit(event: PeerEvent): void {
    this.#o.emit(event);
  }

  #actorOptions(): { inspect?: ActorInspection["observer"] } {
    return this.#inspect ? { inspect: this.#inspect.observer } : {};
  }

  /**
   * The thread's actor, created on first use from its stored record. Held
   * in a Map rather than spawned as children of one machine: xstate copies
   * a parent's children on each change, quadratic over many threads.
   */
  #threadActor(peer: string, th: string): Promise<ThreadActor> {
    const id = `${peer} ${th}`;
    let actor = this.#actors.get(id);
    if (actor) return actor;
    actor = (async () => {
      const record = await this.#store.thread(peer, th);
      const a = createActor(threadMachine, {
        input: { peer, th, ...(record ? { record } : {}) },
        ...this.#actorOptions(),
      });
      this.#show(a, peer);
      return a.start();
    })();
    this.#actors.set(id, actor);
    actor.catch(() => this.#actors.delete(id));
    return actor;
  }

  /**
   * Feeds a durable msg or state line to its thread's actor. The store stays
   * the record's writer (receive counts unread atomically with the commit);
   * the actor is the thread's behaviour and what the inspector shows.
   */
  async feed(peer: string, th: string, event: ThreadActorEvent): Promise<void> {
    if (this.#closing) return;
    const actor = await this.#threadActor(peer, th);
    // Without an inspector no one sees the actor's record, and a msg of ours
    // after its first changes only its `updated` (the store's record keeps
    // that): no step per sent msg. An inspector attaching syncs the record.
    if (
      event.type === "MSG_OUT" && !this.#inspect &&
      actor.getSnapshot().context.msgs > 0
    ) return;
    actor.send(event);
    // Only an inspector sees the actor's record: keep it the stored one
    // then (a read per received line), and not otherwise.
    if (
      this.#inspect && (event.type === "MSG_IN" || event.type === "STATE_IN")
    ) {
      await this.#sync(actor, peer, th);
    }
  }

  /**
   * Our side of a thread record: subject on the first msg, our state, read.
   * The only writer of a thread record besides `store.receive`, which
   * writes the remote's side in the commit of each received line.
   */
  writeOurSide(
    peer: string,
    th: string,
    change: ThreadPatch,
  ): Promise<void> | undefined {
    // A burst of sends in one thread writes its record once a second, not
    // once a msg: only `updated` (for retention, in days) would change.
    // Then nothing is written, and no promise made (undefined).
    const id = `${peer} ${th}`;
    const now = Date.now();
    const onlyTouch = change.subject === undefined && !change.mine &&
      !change.read;
    const last = this.#threadTouched.get(id);
    if (onlyTouch && last !== undefined && now - last < TOUCH_EVERY_MS) {
      return undefined;
    }
    return this.#writeOurSide(peer, th, change, id, now);
  }

  async #writeOurSide(
    peer: string,
    th: string,
    change: ThreadPatch,
    id: string,
    now: number,
  ): Promise<void> {
    // Noted before the write: the sends of a burst ask together, before the
    // first write resolves, and must not each write (and step the actor).
    this.#threadTouched.delete(id);
    this.#threadTouched.set(id, now);
    if (this.#threadTouched.size > TOUCHED_MEMORY) {
      this.#threadTouched.delete(this.#threadTouched.keys().next().value!);
    }
    let record: ThreadRecord;
    try {
      record = await this.#store.patchThread(peer, th, change);
    } catch (error) {
      if (this.#threadTouched.get(id) === now) this.#threadTouched.delete(id);
      throw error;
    }
    (await this.#actors.get(id)?.catch(() => undefined))?.send({
      type: "STORED",
      record,
    });
  }

  /** Marks the thread read: its record, then its actor (if running). */
  async markRead(peer: string, th: string): Promise<void> {
    await this.writeOurSide(peer, th, { read: true });
  }

  /**
   * The fresh content lines just committed: each msg/state holds its
   * event's turn, so events leave in seq order; and each thread's run of
   * msgs goes to its actor in one event (`MSGS_IN`), not a step per msg.
   * While inspected, lines are fed one by one on delivery (each then
   * syncs the actor's record with the store).
   */
  afterCommit(peer: string, lines: ReceivedLine[]): void {
    const runs = new Map<string, Msg[]>();
    for (const line of lines) {
      const t = line.message.t;
      if (line.seq !== undefined && (t === "msg" || t === "state")) {
        this.#hold(line.seq);
      }
      if (this.#inspect || this.#closing) continue;
      if (t === "msg") {
        const m = line.message as Msg;
        const run = runs.get(m.th);
        if (run) run.push(m);
        else runs.set(m.th, [m]);
        this.#fedInBatch.add(m);
      } else if (t === "state") {
        // A state ends the thread's run: it is fed on delivery, in order.
        const th = (line.message as State).th;
        const run = runs.get(th);
        if (run) this.#feedRun(peer, th, run);
        runs.delete(th);
      }
    }
    for (const [th, run] of runs) this.#feedRun(peer, th, run);
  }

  /** Feeds a thread's run of msgs in one event (delivery skips them). */
  #feedRun(peer: string, th: string, messages: Msg[]): void {
    this.#threadActor(peer, th).then(
      (actor) => actor.send({ type: "MSGS_IN", messages }),
      () => {
        // The record could not be read: delivery feeds them one by one.
        for (const m of messages) this.#fedInBatch.delete(m);
      },
    );
  }

  /** A delivered msg or state line: its actor, blobs, requests, then its event. */
  async deliver(d: Delivery): Promise<void> {
    const seq = d.seq ?? 0;
    try {
      await this.#threadLine(d, seq);
    } finally {
      this.#release(seq);
    }
  }

  async #threadLine(d: Delivery, seq: number): Promise<void> {
    const ts = timestamp();
    if (d.message.t === "state" || d.message.t === "msg") {
      const m = d.message as Msg | State;
      if (!this.#fedInBatch.delete(m)) {
        await this.feed(
          d.peer,
          m.th,
          m.t === "msg"
            ? { type: "MSG_IN", message: m }
            : { type: "STATE_IN", message: m },
        );
      }
      await this.#o.onLine(
        d.peer,
        m as unknown as Record<string, unknown> & { t: string },
      );
    }
    if (d.message.t === "state") {
      await this.#turn(seq);
      this.#emit(stateEvent(d.peer, ts, d.message as State, seq));
      return;
    }
    if (d.message.t !== "msg") return;
    const m = d.message as Msg;
    const blobs: ReceivedBlob[] = [];
    for (const part of m.parts) {
      if (part.k !== "blob") continue;
      const blob = await this.#o.resolveBlob(
        d.peer,
        part as BlobPart,
        d.connection,
      );
      blobs.push(blob);
      this.#emit({
        type: "blob",
        peer: d.peer,
        ts: timestamp(),
        dir: "in",
        th: m.th,
        ...blob,
      });
    }
    // The msg is committed and acked; requests are answered after that.
    const requests = await this.#o.requests(d.peer, m, d.connection);
    await this.#turn(seq);
    this.#emit(messageEvent(d.peer, ts, m, blobs, seq, requests));
  }

  #hold(seq: number): void {
    const list = this.#pendingSeqs;
    let i = list.length;
    while (i > 0 && list[i - 1] > seq) i--;
    list.splice(i, 0, seq);
  }

  /** Resolves once every earlier held seq has had its event (or failed). */
  #turn(seq: number): Promise<void> {
    const head = this.#pendingSeqs[0];
    if (head === undefined || head >= seq || this.#closing) {
      return Promise.resolve();
    }
    return new Promise((resolve) => this.#seqWaiters.set(seq, resolve));
  }

  #release(seq: number): void {
    const i = this.#pendingSeqs.indexOf(seq);
    if (i < 0) return;
    this.#pendingSeqs.splice(i, 1);
    const head = this.#pendingSeqs[0];
    const wake = head === undefined ? undefined : this.#seqWaiters.get(head);
    if (wake) {
      this.#seqWaiters.delete(head);
      wake();
    }
  }

  /**
   * `events({ after })`: the received msgs and states the log holds past
   * `after`, rebuilt, then the live events of `live` (subscribed before the
   * log was read) minus those already replayed.
   */
  replayThenLive(
    live: EventQueue<PeerEvent>,
    after: number,
  ): EventQueue<PeerEvent> {
    const out: EventQueue<PeerEvent> = new EventQueue(() => void live.return());
    const replayed = new Set<number>();
    const run = async () => {
      try {
        let cursor = after;
        let more = true;
        while (more && !out.closed) {
          const page = await this.#store.readLog({
            after: cursor,
            limit: LOG_BATCH,
          });
          more = page.length === LOG_BATCH;
          for (const entry of page) {
            cursor = entry.seq;
            if (entry.dir !== "in") continue;
            if (entry.t !== "msg" && entry.t !== "state") continue;
            // Its event is on the way live, and every later one after it.
            if (this.#pendingSeqs.includes(entry.seq)) {
              more = false;
              break;
            }
            const event = await this.#replayEvent(entry);
            if (!event || out.closed) continue;
            replayed.add(entry.seq);
            out.push(event);
          }
        }
      } catch (error) {
        out.push({
          type: "error",
          peer: "",
          ts: timestamp(),
          code: "replay",
          detail: `events: replay after ${after} failed: ${errorText(error)}`,
          remote: false,
        });
      }
      for await (const e of live) {
        const seen = (e.type === "message" || e.type === "state") &&
          replayed.delete(e.seq);
        if (!seen) out.push(e);
      }
      out.close();
    };
    void run();
    return out;
  }

  /** The event a logged msg or state line had (or would have had). */
  async #replayEvent(
    entry: LogEntry,
  ): Promise<PeerMessageEvent | StateEvent | undefined> {
    let m: Msg | State;
    try {
      m = JSON.parse(entry.line);
    } catch {
      return undefined; // not a whole line: nothing to rebuild
    }
    const ts = timestamp(entry.at);
    if (m.t === "state") return stateEvent(entry.peer, ts, m, entry.seq);
    if (m.t !== "msg" || !Array.isArray(m.parts)) return undefined;
    const blobs: ReceivedBlob[] = [];
    for (const part of m.parts) {
      if (part.k === "blob") {
        blobs.push(await this.#o.replayBlob(entry.peer, part as BlobPart));
      }
    }
    return messageEvent(entry.peer, ts, m, blobs, entry.seq, []);
  }

  /** Stops every thread actor (at close, after the work in flight). */
  async stop(): Promise<void> {
    for (const p of this.#actors.values()) {
      (await p.catch(() => undefined))?.stop();
    }
    this.#actors.clear();
  }
}
