/**
 * {@link PeerSender}: everything a Peer queues for a remote: msgs (with
 * their files as blob chunks), states, grants, introductions and the
 * results of served requests. Each resolves once durable in the outbox;
 * sends keep the order they were called in.
 *
 * @module
 */

import { NOT_HELD } from "../actors/quiet_holds.ts";
import type { Supervisor } from "../actors/supervisor.ts";
import type { PeerExtensions } from "../extensions/peer_extensions.ts";
import type { Attachment } from "../profile/fs_access.ts";
import type { ResultReply } from "../profile/profile.ts";
import { randomHex } from "../storage/sha256.ts";
import type {
  OutboxDraft,
  OutboxEntry,
  Queued,
  Store,
} from "../storage/store.ts";
import {
  chunkDrafts,
  DEFAULT_CHUNK_SIZE,
  discardSpooled,
  snapshotToSpool,
  type SpooledBlob,
  spooledRecord,
} from "../storage/spool.ts";
import { errorText } from "../wire/error_text.ts";
import {
  ENVELOPE_HEADROOM_BYTES,
  fitsLine,
  MAX_LINE_BYTES,
} from "../wire/frame.ts";
import { grantHash, mintGrant } from "../wire/grant.ts";
import type { Signer } from "../wire/keys.ts";
import { blobPart, textPart } from "../wire/messages.ts";
import type { Grant, IntroPeer, Msg, Part, State } from "../wire/types.ts";
import { validateMessage } from "../wire/validate.ts";
import type { AckTracker } from "./ack_tracker.ts";
import type { NameResolver } from "./name_resolver.ts";
import type { PeerBlobs } from "./peer_blobs.ts";
import type { PeerDirectory } from "./peer_directory.ts";
import type { PeerThreads } from "./peer_threads.ts";

/** Options of `Peer.send`. */
export interface SendOptions {
  /** The thread; a new one when absent. */
  thread?: string;
  /** Subject (meaningful on a thread's first msg). */
  subject?: string;
  /** The id this msg answers. */
  re?: string;
  /** Extra parts after the text part. */
  parts?: Part[];
  /**
   * Files to send as blobs (snapshotted into the spool first): a path, or
   * a path with the name and mime type the blob part gives.
   */
  files?: Array<string | SendFile>;
}

/** A file for {@link SendOptions.files} with its blob name and type. */
export interface SendFile {
  /** The file to send. */
  path: string;
  /** The blob's name (default the file's base name). */
  name?: string;
  /** The blob's mime type (default guessed from the name's extension). */
  mime?: string;
}

/** What `Peer.send`, `Peer.setState` and `Peer.introduce` queued. */
export interface Sent {
  /** The id of the line (the msg, for send). */
  id: string;
  /** The thread it went in. */
  th: string;
}

/** Options of `Peer.grant`. */
export interface GrantOptions {
  /** Lifetime in ms (24 h by default). */
  ttlMs?: number;
  /** Audience: the only key meant to honor it (NOTES item 7). */
  aud?: string;
}

/** Options of `Peer.introduce`. */
export interface IntroduceOptions {
  /** Caps of the audience-bound grant sent along (none: no grant). */
  grantCaps?: string[];
  /** Lifetime of that grant in ms. */
  ttlMs?: number;
  /** Thread to carry the introduce line (a new one by default). */
  thread?: string;
}

const MIME: Record<string, string> = {
  txt: "text/plain",
  log: "text/plain",
  md: "text/markdown",
  json: "application/json",
  html: "text/html",
  csv: "text/csv",
  png: "image/png",
  jpg: "image/jpeg",
  jpeg: "image/jpeg",
  gif: "image/gif",
  pdf: "application/pdf",
  zip: "application/zip",
  gz: "application/gzip",
  tar: "application/x-tar",
  diff: "text/x-diff",
  patch: "text/x-diff",
};

function baseName(path: string): string {
  return path.replace(/[\\/]+$/, "").split(/[\\/]/).pop() || path;
}

function mimeOf(name: string): string | undefined {
  const dot = name.lastIndexOf(".");
  return dot > 0 ? MIME[name.slice(dot + 1).toLowerCase()] : undefined;
}

function newThreadId(): string {
  return `thr_${randomHex(8)}`;
}

/** The thread of a send: the given one, else a new one. */
function threadOf(options: SendOptions): string {
  const th = options.thread ?? newThreadId();
  if (typeof th !== "string" || th === "") {
    throw new TypeError("send: thread must be a non-empty string");
  }
  return th;
}

/** A file of a send, snapshotted into the spool. */
interface SpooledFile {
  blob: SpooledBlob;
  name: string;
  mime?: string;
}

/** The spooled files of a send without any (shared, never written). */
const NO_FILES: readonly SpooledFile[] = [];

/** True when a send has files to spool. */
function hasFiles(options: SendOptions): boolean {
  return options.files !== undefined && options.files.length > 0;
}

/** Rejects with `error` once `first` (which never rejects) is done. */
function rejectAfter<T>(first: Promise<void>, error: unknown): Promise<T> {
  return first.then(() => Promise.reject(error));
}

/** Deletes spooled copies a failed send will not use (errors ignored). */
async function discardAll(spooled: readonly SpooledFile[]): Promise<void> {
  for (const s of spooled) await discardSpooled(s.blob.path).catch(() => {});
}

/** A valid id and ts to check a draft's schema with (the outbox sets the real ones). */
const PROBE = { id: "0".repeat(26), ts: "2026-01-01T00:00:00.000Z" };

/**
 * Queues `drafts` for `peer` in the outbox records now (ids at once,
 * commit under way), marks the peer wanted, and hands the entries to its
 * active connection's writer (whichever is active then): before their
 * commit when the outbox allows (`Queued.early`; a blob's chunks never),
 * else once durable. Resolves with them once durable and the peer's bye
 * hold is lifted durably (a restart must not hold it). Every line a Peer
 * queues takes this path; nothing of it is `async`, so a burst holds one
 * callback per call while its commit runs, not suspended frames.
 *
 * @example
 * ```ts ignore
 * const [entry] = await queueLines(store, sup, peer, [{ fields: { t: "msg", th, parts } }]);
 * ```
 */
export function queueLines(
  store: Store,
  sup: Supervisor,
  peer: string,
  drafts: OutboxDraft[],
): Promise<OutboxEntry[]> {
  let queued: Queued;
  let lifted: Promise<void>;
  try {
    // A blob's chunks wait for their commit: its record is written after
    // it, and the remote's refusal of the first chunk must find that record.
    const early = drafts.every((d) => d.chunk === undefined);
    queued = store.outboxRecords.queue(peer, drafts, early);
    lifted = sup.want(peer);
  } catch (error) {
    return Promise.reject(error);
  }
  if (queued.early) sup.connection(peer)?.writer.send(queued.entries);
  return queued.durable.then((entries) => {
    const conn = sup.connection(peer);
    if (!queued.early) conn?.writer.send(entries);
    // The connection dropped before these lines were durable: the dialer
    // may have re-read the store without them and found nothing wanted.
    // Want the peer again, now that the store holds them.
    if (!conn) sup.want(peer).catch(() => {}); // its first want reported
    // Most sends lift no hold: nothing more to wait for.
    return lifted === NOT_HELD ? entries : lifted.then(() => entries);
  });
}

interface PendingSpool {
  peer: string;
  refs: string[];
  paths: string[];
}

/** What {@link PeerSender} queues with and through. */
export interface SenderParts {
  /** Signs grants. */
  signer: Signer;
  /** Outgoing blob records are stored here. */
  store: Store;
  /** Enqueues the lines. */
  sup: Supervisor;
  /** Resolves the `to` of each call. */
  names: NameResolver;
  /** Gives a dialer to a peer we queued for. */
  directory: PeerDirectory;
  /** Hears whom each line went to. */
  acks: AckTracker;
  /** Our side of each thread. */
  threads: PeerThreads;
  /** Outgoing transfers. */
  blobs: PeerBlobs;
  /** Our msg/state lines go to the mirror too. */
  ext: PeerExtensions;
  /** Where files are snapshotted before they are sent. */
  spoolDir: string;
  /** The largest file we send. */
  maxBlobBytes: number;
  /** Chunk payload size in bytes. */
  chunkSize?: number;
  /** True once the Peer is closing. */
  closing(): boolean;
}

/**
 * Queues what a Peer sends: each call resolves once its lines are durable
 * in the outbox.
 *
 * @example
 * ```ts ignore
 * const sender = new PeerSender({ signer, store, sup, names, directory, acks, threads, blobs, ext, spoolDir, maxBlobBytes, closing });
 * const { id, th } = await sender.send("bob", "hello");
 * ```
 */
export class PeerSender {
  #p: SenderParts;
  #sendTurn: Promise<void> = Promise.resolve();
  /** Turns taken and not yet released: while any is, sends take turns. */
  #turnsOpen = 0;
  /** Served results, queued one at a time (see {@link PeerSender.reply}). */
  #replyTurn: Promise<void> = Promise.resolve();
  #spoolByMsg = new Map<string, PendingSpool>();

  /** A sender over `parts`. */
  constructor(parts: SenderParts) {
    this.#p = parts;
  }

  /** `Peer.send`: a msg (and the chunks of its files, before it) to `to`. */
  send(
    to: string,
    text: string,
    options: SendOptions = {},
  ): Promise<Sent> {
    // The common case, a msg without files to a key while no earlier call
    // waits for its turn: queued now (sendTo queues synchronously when there
    // is nothing to spool), with no turn taken; a burst keeps thousands in
    // flight.
    if (
      this.#turnsOpen === 0 && typeof options === "object" &&
      options !== null && !hasFiles(options)
    ) {
      const key = this.#p.names.known(to);
      if (key !== undefined) return this.sendTo(key, text, options);
    }
    return this.#sendInTurn(to, text, options);
  }

  async #sendInTurn(
    to: string,
    text: string,
    options: SendOptions,
  ): Promise<Sent> {
    const turn = this.#takeTurn();
    try {
      await turn.ready;
      return await this.sendTo(
        await this.#p.names.resolve(to),
        text,
        options,
        turn.release,
      );
    } finally {
      turn.release();
    }
  }

  /**
   * Sends keep the order they were called in (ids are allocated when the
   * store is asked to enqueue): each waits for the previous one to have
   * asked, not for its commit, so concurrent sends share group commits.
   */
  #takeTurn(): { ready: Promise<void>; release: () => void } {
    const ready = this.#sendTurn;
    let resolveTurn!: () => void;
    this.#sendTurn = new Promise<void>((resolve) => resolveTurn = resolve);
    this.#turnsOpen++;
    let open = true;
    const release = () => {
      if (!open) return;
      open = false;
      this.#turnsOpen--;
      resolveTurn();
    };
    return { ready, release };
  }

  /**
   * A durable msg's last steps: its thread record written, its thread
   * actor and the mirror told, its peer reachable.
   */
  async #delivered(
    key: string,
    fields: OutboxDraft["fields"],
    entry: OutboxEntry,
    touched: Promise<void> | undefined,
  ): Promise<Sent> {
    if (touched !== undefined) await touched;
    const th = fields.th as string;
    const sent = { ...fields, id: entry.id, ts: entry.ts } as Msg;
    await this.#p.threads.feed(key, th, { type: "MSG_OUT", message: sent });
    await this.#p.ext.onLine(key, "out", { ...sent });
    await this.#p.directory.ensureReach(key);
    return { id: entry.id, th };
  }

  /**
   * The fields of a msg in thread `th` (the outbox adds id and ts); throws
   * a TypeError when there is nothing to send.
   */
  #msgFields(
    th: string,
    text: string,
    options: SendOptions,
    spooled: readonly SpooledFile[],
  ): OutboxDraft["fields"] {
    const parts: Part[] = [];
    if (typeof text === "string" && text !== "") parts.push(textPart(text));
    if (options.parts) parts.push(...options.parts);
    for (const { blob, name, mime: given } of spooled) {
      const mime = given ?? mimeOf(name);
      parts.push(
        blobPart({
          ref: blob.ref,
          size: blob.size,
          name,
          ...(mime ? { mime } : {}),
        }),
      );
    }
    if (parts.length === 0) {
      throw new TypeError("send: nothing to send: give text, parts or files");
    }
    const fields: OutboxDraft["fields"] = { t: "msg", th, parts };
    if (options.subject !== undefined) fields.subject = options.subject;
    if (options.re !== undefined) fields.re = options.re;
    return fields;
  }

  /** Why a msg with `fields` cannot be queued (schema, size), if so. */
  #refusal(fields: OutboxDraft["fields"]): Error | undefined {
    const invalid = this.#invalid(fields);
    if (invalid) return new TypeError(`send: invalid msg: ${invalid}`);
    // The outbox adds id and ts: see ENVELOPE_HEADROOM_BYTES.
    if (!fitsLine(fields, MAX_LINE_BYTES - ENVELOPE_HEADROOM_BYTES)) {
      return new Error(
        `send: the msg line would exceed ${MAX_LINE_BYTES} bytes; send big content as files`,
      );
    }
    return undefined;
  }

  /**
   * send, once `to` is resolved (also how served results go back): a msg
   * without files is queued before this returns; one with files once they
   * are spooled. `asked` runs once it is queued (the caller's turn ends).
   */
  sendTo(
    key: string,
    text: string,
    options: SendOptions,
    asked?: () => void,
  ): Promise<Sent> {
    let th: string;
    try {
      th = threadOf(options);
      // Most sends carry no files: no spool list, no promise before the queue.
      if (!hasFiles(options)) {
        return this.#queueMsg(key, th, text, options, NO_FILES, asked);
      }
    } catch (error) {
      return Promise.reject(error);
    }
    return this.#spool(options.files!).then((spooled) =>
      this.#queueMsg(key, th, text, options, spooled, asked)
    );
  }

  /**
   * Queues a msg (after its files' chunks) now and resolves once it is
   * durable and delivered; the spooled copies go if it cannot be queued.
   */
  #queueMsg(
    key: string,
    th: string,
    text: string,
    options: SendOptions,
    spooled: readonly SpooledFile[],
    asked: (() => void) | undefined,
  ): Promise<Sent> {
    let fields: OutboxDraft["fields"];
    try {
      fields = this.#msgFields(th, text, options, spooled);
      const refused = this.#refusal(fields);
      if (refused) throw refused;
    } catch (error) {
      return rejectAfter(discardAll(spooled), error);
    }
    let drafts: OutboxDraft[];
    if (spooled.length === 0) drafts = [{ fields }];
    else {
      // One enqueue: chunk ids come before the msg's (NOTES item 1).
      drafts = [];
      const chunkSize = this.#p.chunkSize ?? DEFAULT_CHUNK_SIZE;
      for (const { blob } of spooled) {
        drafts.push(...chunkDrafts(blob, { th, chunkSize }));
      }
      drafts.push({ fields });
    }
    const enqueued = queueLines(this.#p.store, this.#p.sup, key, drafts);
    // Asked together with the enqueue, so both share one group commit.
    const touched = this.#p.threads.writeOurSide(key, th, {
      subject: options.subject,
    });
    touched?.catch(() => {}); // awaited once the enqueue is durable
    asked?.();
    return enqueued.then(
      (entries) => this.#queuedDurable(key, fields, entries, spooled, touched),
      (error) =>
        rejectAfter(
          discardAll(spooled),
          new Error(`send: ${errorText(error)}`),
        ),
    );
  }

  /** The rest of a send once its lines are durable (files: their records). */
  async #queuedDurable(
    key: string,
    fields: OutboxDraft["fields"],
    entries: OutboxEntry[],
    spooled: readonly SpooledFile[],
    touched: Promise<void> | undefined,
  ): Promise<Sent> {
    const entry = entries[entries.length - 1];
    this.#p.acks.noteSent(entry.id, key);
    if (spooled.length > 0) {
      const th = fields.th as string;
      this.#spoolByMsg.set(entry.id, {
        peer: key,
        refs: spooled.map((s) => s.blob.ref),
        paths: spooled.map((s) => s.blob.path),
      });
      for (const { blob, name, mime: given } of spooled) {
        const mime = given ?? mimeOf(name);
        await this.#p.store.putBlob(
          spooledRecord(key, blob, { th, name, ...(mime ? { mime } : {}) }),
        );
        this.#p.blobs.outgoing(key, blob.ref, { th, name, size: blob.size });
      }
    }
    return await this.#delivered(key, fields, entry, touched);
  }

  /** Snapshots `files` into the spool; on a failure, drops those taken. */
  async #spool(files: Array<string | SendFile>): Promise<SpooledFile[]> {
    const spooled: SpooledFile[] = [];
    try {
      for (const file of files) {
        const f: SendFile = typeof file === "string" ? { path: file } : file;
        if (!f || typeof f.path !== "string" || f.path === "") {
          throw new TypeError(
            "a file must be a path or { path, name?, mime? }",
          );
        }
        const blob = await snapshotToSpool(this.#p.spoolDir, f.path, {
          maxBytes: this.#p.maxBlobBytes,
        });
        spooled.push({ blob, name: f.name ?? baseName(f.path), mime: f.mime });
      }
    } catch (error) {
      await discardAll(spooled);
      throw new Error(`send: ${errorText(error)}`);
    }
    return spooled;
  }

  /** `Peer.setState`: our soft state of thread `th` with `to`. */
  async setState(
    to: string,
    th: string,
    state: string,
    note?: string,
  ): Promise<Sent> {
    const turn = this.#takeTurn();
    let entry: OutboxEntry;
    let key: string;
    const fields: OutboxDraft["fields"] = { t: "state", th, state };
    try {
      await turn.ready;
      key = await this.#p.names.resolve(to);
      if (typeof th !== "string" || th === "") {
        throw new TypeError("setState: th must be a non-empty string");
      }
      if (typeof state !== "string" || state === "") {
        throw new TypeError("setState: state must be a non-empty string");
      }
      if (note !== undefined) fields.note = note;
      const invalid = this.#invalid(fields);
      if (invalid) throw new TypeError(`setState: invalid state: ${invalid}`);
      const enqueued = queueLines(this.#p.store, this.#p.sup, key, [{
        fields,
      }]);
      turn.release();
      [entry] = await enqueued;
    } finally {
      turn.release();
    }
    this.#p.acks.noteSent(entry.id, key);
    await this.#p.threads.writeOurSide(key, th, {
      mine: { state, ts: entry.ts, ...(note !== undefined ? { note } : {}) },
    });
    const line = { ...fields, id: entry.id, ts: entry.ts } as State;
    await this.#p.threads.feed(key, th, { type: "STATE_OUT", message: line });
    await this.#p.ext.onLine(key, "out", { ...line });
    await this.#p.directory.ensureReach(key);
    return { id: entry.id, th };
  }

  /** `Peer.grant`: mints, stores as issued and queues a grant for `to`. */
  async grant(
    to: string,
    caps: string[],
    options: GrantOptions = {},
  ): Promise<Grant> {
    const key = await this.#p.names.resolve(to);
    const grant = await mintGrant(this.#p.signer, {
      sub: key,
      caps,
      ttlMs: options.ttlMs,
      aud: options.aud,
    });
    await this.#p.store.putGrant({
      kind: "issued",
      hash: await grantHash(grant),
      grant,
      storedAt: Date.now(),
    });
    // Outboxed like content; never acked, it leaves the outbox when a later
    // line to this peer is acked (Store.acked).
    await queueLines(this.#p.store, this.#p.sup, key, [{
      fields: { t: "grant", grant },
    }]);
    await this.#p.directory.ensureReach(key);
    return grant;
  }

  /** `Peer.introduce`: an `introduce` line about `peerKey` to `to`. */
  async introduce(
    to: string,
    peerKey: string,
    options: IntroduceOptions = {},
  ): Promise<Sent & { grant?: Grant }> {
    const key = await this.#p.names.resolve(to);
    const other = await this.#p.names.resolve(peerKey);
    const record = await this.#p.store.peer(other);
    if (!record) {
      throw new Error(`introduce: ${other} is not a known peer`);
    }
    const intro: IntroPeer = { key: other };
    if (record.name !== undefined) intro.name = record.name;
    if (record.addresses[0] !== undefined) intro.address = record.addresses[0];
    const th = options.thread ?? newThreadId();
    const fields: OutboxDraft["fields"] = { t: "introduce", th, peer: intro };
    let grant: Grant | undefined;
    if (options.grantCaps && options.grantCaps.length > 0) {
      grant = await mintGrant(this.#p.signer, {
        sub: key,
        caps: options.grantCaps,
        ttlMs: options.ttlMs,
        aud: other,
      });
      await this.#p.store.putGrant({
        kind: "issued",
        hash: await grantHash(grant),
        grant,
        storedAt: Date.now(),
      });
      fields.grant = grant;
    }
    const [entry] = await queueLines(this.#p.store, this.#p.sup, key, [{
      fields,
    }]);
    await this.#p.directory.ensureReach(key);
    return { id: entry.id, th, ...(grant ? { grant } : {}) };
  }

  /** The first schema error of a line we are about to queue, if any. */
  #invalid(fields: OutboxDraft["fields"]): string | undefined {
    const result = validateMessage({ ...fields, ...PROBE });
    return result.ok ? undefined : (result.errors[0] ?? "schema");
  }

  /** A served request's result: a msg re the request, files as blobs. */
  reply(
    peer: string,
    reply: ResultReply,
    files: Attachment[],
  ): Promise<void> {
    // One at a time: each checks the spool after the one before queued.
    const turn = this.#replyTurn.then(() => this.#replyNow(peer, reply, files));
    this.#replyTurn = turn.catch(() => {});
    return turn;
  }

  async #replyNow(
    peer: string,
    reply: ResultReply,
    files: Attachment[],
  ): Promise<void> {
    const full = files.length > 0
      ? await this.#p.blobs.outgoingOver(
        peer,
        files.reduce((n, f) => n + f.size, 0),
      )
      : undefined;
    if (full !== undefined) {
      // A remote's requests must not fill our disk: the result says so.
      reply = {
        ...reply,
        parts: [
          { k: "text", text: `result not sent: ${full}` },
          {
            k: "data",
            mime: reply.parts.find((p) => p.k === "data")?.mime ??
              "application/json",
            data: { error: full },
          } as Part,
        ],
      };
      files = [];
    }
    await this.sendTo(peer, "", {
      thread: reply.th,
      re: reply.re,
      parts: reply.parts,
      files: files.map((f) => ({
        path: f.path,
        name: f.name,
        ...(f.mime !== undefined ? { mime: f.mime } : {}),
      })),
    });
  }

  /** An acked msg: its files' spooled snapshots are released. */
  acked(peer: string, id: string): void {
    const spool = this.#spoolByMsg.get(id);
    if (spool) {
      this.#spoolByMsg.delete(id);
      this.#p.blobs.acked(peer, spool.refs);
      void this.#releaseSpool(spool, "complete");
    }
  }

  async #releaseSpool(
    spool: PendingSpool,
    status: "complete" | "refused",
  ): Promise<void> {
    for (const path of spool.paths) await discardSpooled(path).catch(() => {});
    if (this.#p.closing()) return;
    for (const ref of spool.refs) {
      const record = await this.#p.store.blob(spool.peer, ref, "out").catch(
        () => undefined,
      );
      // Checked after the read: a refusal that came meanwhile wins (its
      // own write marks the record refused).
      if (
        record && record.status === "active" &&
        !this.#p.blobs.wasRefused(spool.peer, ref)
      ) {
        await this.#p.store.putBlob({
          ...record,
          status,
          bytes: status === "complete" ? record.size : record.bytes,
          updated: Date.now(),
        }).catch(() => {});
      }
    }
  }
}
