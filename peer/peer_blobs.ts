/**
 * The blob side of a {@link Peer}: one actor per transfer (incoming and
 * outgoing), the sinks that write received chunks to disk, and how a msg's
 * blob parts resolve to files.
 *
 * @module
 */

import { type Actor, createActor } from "npm:xstate@^5.33.3";
import type { Connection, ReceivedLine } from "../actors/connection.ts";
import type { ActorInspection } from "../actors/supervisor.ts";
import {
  type BlobProgress,
  chunkSentEvent,
  type IncomingBlobMachine,
  incomingBlobMachine,
  type OutgoingBlobMachine,
  outgoingBlobMachine,
  sinkEvent,
} from "../actors/blob_machine.ts";
import { BlobBudget, type UnfinishedBlobLimits } from "./blob_budget.ts";
import type { PeerEvent, ReceivedBlob } from "./peer_events.ts";
import type { BlobRecord, OutboxEntry, Store } from "../storage/store.ts";
import {
  type Appended,
  BlobSink,
  type ChunkResult,
} from "../storage/blob_sink.ts";
import { discardSpooled } from "../storage/spool.ts";
import { warmSha256 } from "../storage/sha256.ts";
import { releaseChunkBytes } from "../wire/chunk_line.ts";
import { KEY_PREFIX } from "../wire/keys.ts";
import { timestamp } from "../wire/time.ts";
import type { BlobPart, Chunk } from "../wire/types.ts";

/** How many refusals of our own blobs are remembered for the ack race. */
const MAX_REFUSED_KEPT = 10_000;
/**
 * Received chunk bytes waiting to be written to their files before reading
 * waits: the only chunk data a receiver holds in memory. 1 MiB (four
 * chunks) keeps the decoded buffers within `wire/chunk_line.ts`'s pool, so
 * a transfer reuses them instead of making garbage buffers (2 MiB: ~23
 * buffers allocated per 50 MiB blob, +4 MiB external memory at the peak;
 * fresh memory also costs page faults, which made the receiver slower).
 */
const MAX_UNWRITTEN = 1024 * 1024;
/**
 * Chunk bytes written and not yet synced before reading waits for a sync:
 * on disk, not in memory; it bounds how long one fsync (and the acks
 * behind it) can take, and how far apart a transfer's stored records are
 * (a resume after a kill starts at most about this far back).
 */
const MAX_UNSYNCED = 4 * 1024 * 1024;
/**
 * A batch of chunks of a blob still arriving is synced once its blob has
 * this much written and not synced (the chunks written meanwhile ride
 * along), or after {@link BATCH_FILL_MS}: one fsync (and one commit of
 * seen markers) per ~2 MiB, whatever the pace of reading. Synced batch by
 * batch as read, a receiver whose writes keep up synced every chunk or
 * two over a Unix socket (reads of ~200 KB): 38 fsyncs and 37 KV commits
 * per 20 MiB against 8 and 14, and more CPU per byte than the writes
 * saved.
 */
const FILL_BYTES = 2 * 1024 * 1024;
/** How long a batch waits for {@link FILL_BYTES} (chunks are not acked). */
const BATCH_FILL_MS = 20;

type OutBlobActor = Actor<OutgoingBlobMachine>;
type InBlobActor = Actor<IncomingBlobMachine>;

/** A directory name for a peer's received blobs (refs are chosen by it). */
function peerDir(key: string): string {
  return key.startsWith(KEY_PREFIX) ? key.slice(KEY_PREFIX.length) : key;
}

export {
  DEFAULT_UNFINISHED,
  type UnfinishedBlobLimits,
} from "./blob_budget.ts";

/** What {@link PeerBlobs} needs from its Peer. */
export interface PeerBlobsOptions {
  /** Blob records are kept here. */
  store: Store;
  /** Received files go under `${blobsDir}/<peer>/`. */
  blobsDir: string;
  /** Largest blob accepted, in bytes. */
  maxBlobBytes: number;
  /** Bytes of unfinished incoming blobs kept per peer, and in total. */
  unfinished?: UnfinishedBlobLimits;
  /** Shows the transfer actors, when given. */
  inspect?: ActorInspection;
  /** The inspector parent of a peer's transfers (its connection). */
  parentId(peer: string): string;
  /** Reports a Peer event (progress, blob). */
  emit(event: PeerEvent): void;
  /** Reports a local error event. */
  localError(peer: string, code: string, detail: string, ref?: string): void;
  /** True once the Peer is closing. */
  closing(): boolean;
}

/**
 * The transfers of one Peer, by `${peer} ${ref}` and direction.
 *
 * @example
 * ```ts ignore
 * const blobs = new PeerBlobs({ store, blobsDir, maxBlobBytes, parentId, emit, localError, closing });
 * await blobs.takeChunk(peer, conn, chunk); // before the chunk commits
 * const got = await blobs.resolve(peer, blobPart, conn); // when its msg arrives
 * ```
 */
export class PeerBlobs {
  #o: PeerBlobsOptions;
  #store: Store;
  #maxBlob: number;
  #blobsDir: string;
  #sinks = new Map<string, Promise<BlobSink>>();
  // Record writes that complete blobs do not wait for (see resolve).
  #metaWrites = new Set<Promise<void>>();
  /** Chunks taken on arrival, by their parsed message, until their batch. */
  #taken = new WeakMap<
    Chunk,
    Promise<Appended & { sink: BlobSink; over?: string }>
  >();
  /** The arrivals' order: each takes its sink after the one before. */
  #arrivals: Promise<void> = Promise.resolve();
  /** Bytes of arrived chunks not yet written, and who waits for room. */
  #unwritten = 0;
  #writeWaiters: Array<() => void> = [];
  /** Batches waiting for more of their blob to be written (see #fill). */
  #fillWaiters: Array<() => void> = [];
  /** Sinks written since their last sync. */
  #touchedSinks = new Set<BlobSink>();
  /** Bounds on unfinished blobs, and the bytes they hold. */
  #budget: BlobBudget;
  /**
   * Our blobs the remote refused (`peer ref` → detail): the err can come
   * before the transfer's actor exists and before the msg's ack.
   */
  #refusedOut = new Map<string, string>();
  /** Transfer actors by `${peer} ${ref}`, one Map per direction. */
  #outBlobs = new Map<string, Promise<OutBlobActor>>();
  #inBlobs = new Map<string, Promise<InBlobActor>>();
  /** Where transfer actors are shown; set at construction or by {@link attach}. */
  #inspect: ActorInspection | undefined;
  /** Each transfer actor's tree label, for a hub attached later. */
  #labels = new WeakMap<OutBlobActor | InBlobActor, string>();

  /** Sets up the (empty) transfer tables. */
  constructor(options: PeerBlobsOptions) {
    this.#o = options;
    this.#store = options.store;
    this.#maxBlob = options.maxBlobBytes;
    this.#blobsDir = options.blobsDir;
    this.#budget = new BlobBudget(
      options.store,
      this.#maxBlob,
      options.unfinished,
    );
    this.#inspect = options.inspect;
  }

  /**
   * Shows the transfer actors in `inspect` from now on: running ones are
   * registered (once their creation settles), later ones get its observer.
   *
   * @example
   * ```ts ignore
   * blobs.attach(hub); // hub.actors() then lists each live transfer
   * ```
   */
  attach(inspect: ActorInspection): void {
    if (this.#inspect === inspect) return;
    this.#inspect = inspect;
    for (const blobs of [this.#outBlobs, this.#inBlobs]) {
      for (const [id, p] of blobs) {
        const peer = id.slice(0, id.indexOf(" "));
        void p.then((a) => this.#show(a, peer), () => {});
      }
    }
  }

  #show(actor: OutBlobActor | InBlobActor, peer: string): void {
    this.#inspect?.register(actor, {
      kind: "blob",
      label: this.#labels.get(actor) ?? "blob",
      parentId: this.#parentId(peer),
    });
  }

  get #closing(): boolean {
    return this.#o.closing();
  }

  #emit(event: PeerEvent): void {
    this.#o.emit(event);
  }

  #localError(peer: string, code: string, detail: string, ref?: string): void {
    this.#o.localError(peer, code, detail, ref);
  }

  #parentId(peer: string): string {
    return this.#o.parentId(peer);
  }

  #actorOptions(): { inspect?: ActorInspection["observer"] } {
    return this.#inspect ? { inspect: this.#inspect.observer } : {};
  }

  /** The connection to `peer` closed: its transfers pause. */
  disconnected(peer: string): void {
    for (const blobs of [this.#outBlobs, this.#inBlobs]) {
      for (const [id, p] of blobs) {
        if (!id.startsWith(`${peer} `)) continue;
        void p.then((a) => a.send({ type: "DISCONNECTED" }), () => {});
      }
    }
  }

  /** The msg carrying `refs` to `peer` was acked: those transfers are done. */
  acked(peer: string, refs: string[]): void {
    for (const ref of refs) {
      void this.#outBlobs.get(`${peer} ${ref}`)?.then(
        (a) => a.send({ type: "ACKED" }),
        () => {},
      );
    }
  }

  /**
   * `peer` refused our blob `ref` (err blob_refused): its chunks leave the
   * outbox, the record is marked refused and a `blob` event (dir out) goes out.
   */
  async refused(peer: string, ref: string, detail: string): Promise<void> {
    this.#noteRefused(`${peer} ${ref}`, detail);
    // The actor hears it first: the err came before any later ack of the
    // msg, and awaiting the store here would let that ack overtake it.
    void this.#outBlobs.get(`${peer} ${ref}`)?.then(
      (a) => a.send({ type: "REFUSED", detail }),
      () => {},
    );
    // The transfer stops: its chunks leave the outbox (the msg still goes).
    await this.#store.dropBlob(peer, ref);
    const record = await this.#store.blob(peer, ref, "out");
    // The refusal may come after the msg's ack (it is sent when the chunks
    // are processed), so a transfer already marked complete is refused too.
    if (!record || record.status === "refused") return;
    await this.#store.putBlob({
      ...record,
      status: "refused",
      updated: Date.now(),
    });
    await discardSpooled(record.path).catch(() => {});
    this.#emit({
      type: "blob",
      peer,
      ts: timestamp(),
      dir: "out",
      ref,
      size: record.size,
      status: "refused",
      detail,
      ...(record.th !== undefined ? { th: record.th } : {}),
      ...(record.name !== undefined ? { name: record.name } : {}),
      ...(record.mime !== undefined ? { mime: record.mime } : {}),
    });
  }

  /** Stops every transfer actor (after the pending record writes). */
  async stop(): Promise<void> {
    await Promise.allSettled(this.#metaWrites);
    for (const actors of [this.#outBlobs, this.#inBlobs]) {
      for (const p of actors.values()) (await p.catch(() => undefined))?.stop();
      actors.clear();
    }
  }

  /** Starts a transfer actor: progress becomes a Peer event, done leaves the Map. */
  #startBlob<A extends OutBlobActor | InBlobActor>(
    blobs: Map<string, Promise<A>>,
    id: string,
    actor: A,
    peer: string,
    label: string,
  ): A {
    this.#labels.set(actor, label);
    this.#show(actor, peer);
    actor.on("progress", (p: BlobProgress) =>
      this.#emit({
        type: "progress",
        peer: p.peer,
        ts: timestamp(),
        ref: p.ref,
        dir: p.dir,
        bytes: p.bytes,
        total: p.total,
        rate: p.rate,
        status: p.status,
        ...(p.th !== undefined ? { th: p.th } : {}),
        ...(p.name !== undefined ? { name: p.name } : {}),
      }));
    (actor as OutBlobActor).subscribe({
      next: (snapshot) => {
        if (snapshot.status === "done") blobs.delete(id);
      },
      error: () => blobs.delete(id),
    });
    actor.start();
    return actor;
  }

  /** The actor of our blob `ref` to `peer`, started on first use. */
  outgoing(
    peer: string,
    ref: string,
    input: { th?: string; name?: string; size: number },
  ): Promise<OutBlobActor> {
    const id = `${peer} ${ref}`;
    let actor = this.#outBlobs.get(id);
    if (actor) return actor;
    const a = createActor(outgoingBlobMachine, {
      input: { peer, ref, ...input },
      ...this.#actorOptions(),
    });
    actor = Promise.resolve(
      this.#startBlob(this.#outBlobs, id, a, peer, `out ${input.name ?? ref}`),
    );
    this.#outBlobs.set(id, actor);
    const detail = this.#refusedOut.get(id);
    if (detail !== undefined) a.send({ type: "REFUSED", detail });
    return actor;
  }

  /**
   * Whether `peer` refused our blob `ref`. Checked right before a record is
   * marked complete: the msg's ack may come before or after the refusal.
   */
  wasRefused(peer: string, ref: string): boolean {
    return this.#refusedOut.has(`${peer} ${ref}`);
  }

  #noteRefused(id: string, detail: string): void {
    // Bounded: refusals of our own blobs, kept for the race with the ack.
    if (this.#refusedOut.size >= MAX_REFUSED_KEPT) {
      this.#refusedOut.delete(this.#refusedOut.keys().next().value!);
    }
    this.#refusedOut.set(id, detail);
  }

  #incomingBlob(
    peer: string,
    ref: string,
    sink: BlobSink,
  ): Promise<InBlobActor> {
    const id = `${peer} ${ref}`;
    let actor = this.#inBlobs.get(id);
    if (actor) return actor;
    const record = sink.record;
    const a = createActor(incomingBlobMachine, {
      input: {
        peer,
        ref,
        ...(record.th !== undefined ? { th: record.th } : {}),
        ...(record.name !== undefined ? { name: record.name } : {}),
        total: sink.size,
        bytes: sink.bytes,
      },
      ...this.#actorOptions(),
    });
    actor = Promise.resolve(
      this.#startBlob(this.#inBlobs, id, a, peer, `in ${record.name ?? ref}`),
    );
    this.#inBlobs.set(id, actor);
    return actor;
  }

  /** A chunk line was written: its transfer (resumed from its record) moves. */
  async chunkSent(peer: string, entry: OutboxEntry): Promise<void> {
    const event = chunkSentEvent(entry);
    const ref = entry.fields.ref;
    if (!event || typeof ref !== "string" || this.#closing) return;
    let actor = this.#outBlobs.get(`${peer} ${ref}`);
    if (!actor) {
      const record = await this.#store.blob(peer, ref, "out");
      if (!record || record.status !== "active") return;
      actor = this.outgoing(peer, ref, {
        size: record.size,
        ...(record.th !== undefined ? { th: record.th } : {}),
        ...(record.name !== undefined ? { name: record.name } : {}),
      });
    }
    (await actor).send(event);
  }

  /** A replayed msg's blob: as stored, or finished now if it can be. */
  async replay(peer: string, part: BlobPart): Promise<ReceivedBlob> {
    const record = await this.#store.blob(peer, part.ref, "in");
    const base = missingBlob(part);
    switch (record?.status) {
      case "complete":
        return {
          ...base,
          status: "complete",
          path: record.path,
          ...(record.sha256 !== undefined ? { sha256: record.sha256 } : {}),
        };
      case "refused":
        return { ...base, status: "refused", detail: "refused" };
      case "failed":
        return { ...base, status: "failed", detail: "failed" };
      default:
        // Killed between the msg's commit and its blob's completion.
        return await this.resolve(peer, part);
    }
  }

  /** The sink of an incoming blob, made (or resumed from its record) once. */
  #sinkFor(peer: string, ref: string, th?: string): Promise<BlobSink> {
    const id = `${peer} ${ref}`;
    let sink = this.#sinks.get(id);
    if (sink) return sink;
    sink = (async () => {
      const reading = this.#store.blob(peer, ref, "in");
      // The sink's hash loads node:crypto, which holds this thread: the
      // record's read (and then the temp file's creation) runs meanwhile.
      warmSha256();
      const record = await reading;
      // A record picks up a transfer cut by a reconnect or a restart.
      return record
        ? await BlobSink.resume(record, { maxBytes: this.#maxBlob })
        : await BlobSink.open({
          peer,
          ref,
          dir: `${this.#blobsDir}/${peerDir(peer)}`,
          th,
          maxBytes: this.#maxBlob,
        });
    })();
    this.#sinks.set(id, sink);
    sink.catch(() => this.#sinks.delete(id));
    return sink;
  }

  /**
   * A valid chunk line as it arrives, before its commit: its bytes go to
   * its sink's file at once (no sync; {@link takeChunks} syncs a whole
   * batch) and leave memory, so a batch waiting for its commit holds no
   * chunk data. Resolves with nothing, or returns a promise that holds
   * reading while too many bytes wait to be written or synced.
   */
  arrive(peer: string, line: ReceivedLine): Promise<void> | undefined {
    const chunk = line.message as Chunk;
    const bytes = line.bytes;
    // The write keeps the bytes until done; the line (queued for its
    // commit) lets go of them now.
    delete line.bytes;
    const size = bytes?.byteLength ?? decodedBytes([chunk]);
    this.#unwritten += size;
    // Arrivals take their sinks in order (a sink writes in call order).
    const step = this.#arrivals.then(() =>
      this.#arrive(peer, chunk, bytes, size)
    );
    this.#arrivals = step.then(() => {}, () => {});
    const taken = step.then((a) => a.written.then((w) => ({ ...a, ...w })))
      .finally(() => {
        this.#unwritten -= size;
        this.#wake();
        for (const wake of this.#fillWaiters.splice(0)) wake();
      });
    taken.catch(() => {}); // awaited by takeChunks
    this.#taken.set(chunk, taken);
    return this.#pressure();
  }

  /** Finds the chunk's sink, checks the budget, queues the write. */
  async #arrive(
    peer: string,
    chunk: Chunk,
    bytes: Uint8Array | undefined,
    adding: number,
  ): Promise<{ sink: BlobSink; over?: string; written: Promise<Appended> }> {
    const id = `${peer} ${chunk.ref}`;
    const sink = await this.#sinkFor(peer, chunk.ref, chunk.th);
    // Counted now, so the next arrival's budget sees it; checked only while
    // the sink is active.
    const over = await this.#budget.take(
      peer,
      chunk.ref,
      sink.bytes,
      adding,
      sink.status === "active",
    );
    if (over !== undefined) {
      await sink.discard();
      this.#sinks.delete(id);
      await this.#budget.drop(peer, chunk.ref);
      // The err goes out with the chunk's batch (takeChunks).
      const refused: ChunkResult = {
        kind: "refused",
        ref: chunk.ref,
        bytes: sink.bytes,
        limit: sink.limit,
        detail: over,
        repeat: false,
      };
      if (bytes) releaseChunkBytes(bytes);
      return {
        sink,
        over,
        written: Promise.resolve({ result: refused, record: sink.record }),
      };
    }
    this.#touchedSinks.add(sink);
    const written = sink.append(bytes ? { ...chunk, bytes } : chunk);
    // Written (or refused): the decoded buffer can take the next chunk.
    if (bytes) void written.finally(() => releaseChunkBytes(bytes));
    // A replayed (or bad) chunk wrote nothing: uncount it.
    void written.then(({ result }) => {
      if (result.kind === "error") {
        this.#budget.uncount(peer, chunk.ref, sink.bytes, adding);
      }
    }, () => {});
    return { sink, written };
  }

  /**
   * Holds reading (a promise) while more than {@link MAX_UNWRITTEN} bytes
   * wait to be written, or more than {@link MAX_UNSYNCED} wait for a sync
   * (then the sinks are synced now, not at the next commit).
   */
  #pressure(): Promise<void> | undefined {
    if (
      this.#unwritten <= MAX_UNWRITTEN && this.#unsyncedBytes() <= MAX_UNSYNCED
    ) {
      return undefined;
    }
    return (async () => {
      while (this.#unwritten > MAX_UNWRITTEN) {
        await new Promise<void>((wake) => this.#writeWaiters.push(wake));
      }
      if (this.#unsyncedBytes() > MAX_UNSYNCED) {
        await Promise.all([...this.#touchedSinks].map((s) => this.#sync(s)));
      }
    })();
  }

  #unsyncedBytes(): number {
    let n = 0;
    for (const sink of this.#touchedSinks) n += sink.unsynced;
    return n;
  }

  #wake(): void {
    if (this.#unwritten > MAX_UNWRITTEN) return;
    for (const wake of this.#writeWaiters.splice(0)) wake();
  }

  /**
   * Before a batch's sync: while its blob is still arriving (the batch
   * ends neither the blob nor the transfer) and no sync covered the batch
   * up to byte `upTo`, waits until {@link FILL_BYTES} of it are written
   * and not synced, or {@link BATCH_FILL_MS} passed.
   */
  async #fill(
    sink: BlobSink,
    results: ChunkResult[],
    upTo: number,
  ): Promise<void> {
    // Not once a sync covered the batch (reading's own, past MAX_UNSYNCED).
    const arriving = () =>
      sink.status === "active" && sink.syncedBytes < upTo &&
      sink.unsynced < FILL_BYTES && !this.#closing;
    if (!arriving() || results.some((r) => r.kind !== "accepted")) return;
    let late = false;
    const timer = setTimeout(() => {
      late = true;
      for (const wake of this.#fillWaiters.splice(0)) wake();
    }, BATCH_FILL_MS);
    try {
      while (!late && arriving()) {
        await new Promise<void>((wake) => this.#fillWaiters.push(wake));
      }
    } finally {
      clearTimeout(timer);
    }
  }

  /** Syncs `sink`; it leaves the touched set once nothing waits on it. */
  async #sync(sink: BlobSink): Promise<{ ok: boolean; record: BlobRecord }> {
    const synced = await sink.sync();
    if (sink.unsynced === 0) this.#touchedSinks.delete(sink);
    for (const wake of this.#fillWaiters.splice(0)) wake();
    return synced;
  }

  /**
   * Makes a batch of received chunks durable before their seen markers
   * commit: each was written on arrival ({@link arrive}; a chunk that did
   * not pass there is written now), then one sync per sink covers them all.
   * Resolves with each touched sink's record as of that sync (so the
   * record never says less than the seen markers committed with it); a
   * refusal is answered on `conn` with err blob_refused, once.
   */
  async takeChunks(
    peer: string,
    conn: Connection,
    lines: ReceivedLine[],
  ): Promise<BlobRecord[]> {
    const taken = lines.map((line) => {
      const chunk = line.message as Chunk;
      if (!this.#taken.has(chunk)) void this.arrive(peer, line);
      const t = this.#taken.get(chunk)!;
      this.#taken.delete(chunk);
      return t;
    });
    const records: BlobRecord[] = [];
    // Sinks in order of first appearance, each with its results in order
    // and the record after its last chunk here.
    const bySink = new Map<
      BlobSink,
      { results: ChunkResult[]; record: BlobRecord; over?: string }
    >();
    for (const a of await Promise.all(taken)) {
      const entry = bySink.get(a.sink);
      if (!entry) {
        bySink.set(a.sink, {
          results: [a.result],
          record: a.record,
          ...(a.over === undefined ? {} : { over: a.over }),
        });
        continue;
      }
      entry.results.push(a.result);
      entry.record = a.record;
      entry.over ??= a.over;
    }
    for (const [sink, { results, record: after, over }] of bySink) {
      const ref = sink.ref;
      if (over !== undefined) {
        records.push(sink.record);
        conn.sendLine({ t: "err", code: "blob_refused", detail: over, ref });
        this.#localError(peer, "blob", over, ref);
        continue;
      }
      await this.#fill(sink, results, after.bytes);
      const { ok, record: failed } = await this.#sync(sink);
      // Active ones were counted on arrival.
      if (sink.status !== "active") await this.#budget.drop(peer, ref);
      // The record as of this batch's last chunk (the sync covered it): the
      // store then says exactly what the seen markers say.
      records.push(ok ? after : failed);
      if (!ok) {
        this.#localError(peer, "blob", sink.detail ?? "cannot sync", ref);
        continue;
      }
      // A chunk the sink has already is a replay of one written before a
      // crash (or a reconnect) but not committed as seen: not an error.
      const news = results.filter((r) =>
        !(r.kind === "error" &&
          (r.code === "out_of_order" || r.code === "after_complete"))
      );
      if (news.length === 0) continue;
      const actor = this.#incomingBlob(peer, ref, sink);
      // Progress once per batch: the chunks synced together, as the last.
      const lastAccepted = news.findLast((r) => r.kind === "accepted");
      for (const result of news) {
        if (result.kind === "accepted" && result !== lastAccepted) continue;
        const event = sinkEvent(result);
        if (event) void actor.then((a) => a.send(event), () => {});
        if (result.kind === "refused") {
          if (!result.repeat) {
            conn.sendLine({
              t: "err",
              code: "blob_refused",
              detail: result.detail,
              ref: result.ref,
            });
          }
        } else if (result.kind === "error") {
          this.#localError(peer, "blob", result.detail, result.ref);
        }
      }
    }
    return records;
  }

  /** Finishes the blob a msg names; `conn` (live) hears a refusal. */
  async resolve(
    peer: string,
    part: BlobPart,
    conn?: Connection,
  ): Promise<ReceivedBlob> {
    const base = missingBlob(part);
    const id = `${peer} ${part.ref}`;
    let sink = await this.#sinks.get(id)?.catch(() => undefined);
    if (!sink) {
      const record = await this.#store.blob(peer, part.ref, "in");
      if (!record) {
        if (part.size > this.#maxBlob) {
          // No chunk came (sender skipped them?): still say no.
          conn?.sendLine({
            t: "err",
            code: "blob_refused",
            detail:
              `blob ${part.ref} is ${part.size} bytes, over the ${this.#maxBlob} byte limit`,
            ref: part.ref,
          });
          return { ...base, status: "refused", detail: "over the blob limit" };
        }
        return { ...base, detail: "no chunks received" };
      }
      sink = await this.#sinkFor(peer, part.ref, record.th);
    }
    const actor = this.#inBlobs.get(`${peer} ${part.ref}`);
    void actor?.then((a) => {
      if (part.name !== undefined) {
        this.#labels.set(a, `in ${part.name}`);
        this.#inspect?.register(a, { label: `in ${part.name}` });
      }
      a.send({
        type: "DESCRIBED",
        total: part.size,
        ...(part.name !== undefined ? { name: part.name } : {}),
      });
    }, () => {});
    const completeBefore = sink.status === "complete";
    const result = await sink.expect({
      size: part.size,
      name: part.name,
      mime: part.mime,
    });
    const stored = this.#store.putBlob(sink.record);
    if (completeBefore && result === undefined) {
      // The complete record is durable already (committed with the last
      // chunk's seen marker); this write only adds the part's size, name
      // and mime, which a replay takes from the msg: the event need not
      // wait for its commit. stop() does.
      this.#metaWrites.add(stored);
      void stored.catch(() => {}).finally(() =>
        this.#metaWrites.delete(stored)
      );
    } else await stored;
    const event = result ? sinkEvent(result) : undefined;
    if (event) void actor?.then((a) => a.send(event), () => {});
    if (result?.kind === "refused" && !result.repeat) {
      conn?.sendLine({
        t: "err",
        code: "blob_refused",
        detail: result.detail,
        ref: part.ref,
      });
    }
    if (sink.status !== "active") this.#sinks.delete(id);
    switch (sink.status) {
      case "complete":
        return {
          ...base,
          status: "complete",
          path: sink.path,
          sha256: sink.sha256,
        };
      case "refused":
        return { ...base, status: "refused", detail: sink.detail ?? "refused" };
      case "failed":
        return { ...base, status: "failed", detail: sink.detail ?? "failed" };
      default:
        return {
          ...base,
          detail: `incomplete: ${sink.bytes} of ${part.size} bytes`,
        };
    }
  }

  /**
   * Why `adding` more bytes of outgoing blobs to `peer` (a served result)
   * may not be spooled, or undefined (see {@link BlobBudget.outgoingOver}).
   */
  outgoingOver(peer: string, adding: number): Promise<string | undefined> {
    return this.#budget.outgoingOver(peer, adding);
  }

  /** How long an unfinished incoming blob may go without a chunk. */
  get unfinishedTtlMs(): number {
    return this.#budget.ttlMs;
  }

  /**
   * Drops the unfinished incoming blobs that got no chunk for the TTL:
   * their temp files are removed and their records marked failed. Resolves
   * with how many went.
   */
  async expireUnfinished(now = Date.now()): Promise<number> {
    const cutoff = now - this.#budget.ttlMs;
    let count = 0;
    for (const r of await this.#store.blobs()) {
      if (r.dir !== "in" || r.status !== "active" || r.updated >= cutoff) {
        continue;
      }
      try {
        const sink = await this.#sinkFor(r.peer, r.ref, r.th);
        await sink.discard();
        await this.#store.putBlob(sink.record);
      } catch { /* its file is gone already */ }
      this.#sinks.delete(`${r.peer} ${r.ref}`);
      await this.#budget.drop(r.peer, r.ref);
      count++;
    }
    return count;
  }
}

/** The decoded size of chunks (their bytes, or at most 3/4 of their base64). */
function decodedBytes(chunks: Array<Chunk & { bytes?: Uint8Array }>): number {
  let n = 0;
  for (const m of chunks) {
    n += m.bytes?.byteLength ??
      (typeof m.data === "string" ? Math.floor(m.data.length * 3 / 4) : 0);
  }
  return n;
}

/** What a msg's blob part says, as a blob not (yet) received. */
function missingBlob(part: BlobPart): ReceivedBlob {
  return {
    ref: part.ref,
    size: part.size,
    status: "missing",
    ...(part.name !== undefined ? { name: part.name } : {}),
    ...(part.mime !== undefined ? { mime: part.mime } : {}),
  };
}
