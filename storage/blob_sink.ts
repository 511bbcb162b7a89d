/**
 * The receiving end of one blob from one peer (SPEC 9.3): chunks are checked
 * for order, decoded, appended to a temp file with an incremental sha256 and
 * synced before the caller acks; the last chunk renames the file into place.
 * Problems are results, never exceptions, so a bad chunk cannot take the
 * connection down. A transfer survives restarts and reconnects through its
 * {@linkcode BlobRecord} ({@linkcode BlobSink.resume}).
 *
 * @module
 */

import { createSha256, type Sha256, sha256Hex } from "./sha256.ts";
import { decodeBase64 } from "../wire/base64.ts";
import { errorText } from "../wire/error_text.ts";
import { DEFAULT_MAX_BLOB_BYTES } from "./spool.ts";
import type { BlobRecord } from "./store.ts";

/** The default receive limit (SPEC 10.1 recommends 50 MiB). */
export const DEFAULT_BLOB_LIMIT: number = DEFAULT_MAX_BLOB_BYTES;

/** Suffix of the temp file next to the final path. */
export const PARTIAL_SUFFIX = ".part";

const READ_BUFFER = 262144;

/** The fields of a `chunk` line the sink needs (a wire `Chunk` fits). */
export interface ChunkInput {
  /** The blob's ref. */
  ref: string;
  /** The chunk's index, from 0. */
  n: number;
  /** True for the blob's last chunk. */
  last: boolean;
  /** The chunk's bytes in base64 (standard or url, padded or not). */
  data: string;
  /** The same bytes already decoded (then `data` is not read). */
  bytes?: Uint8Array;
}

/** What the msg's blob part says about the blob. */
export interface BlobDescription {
  /** Size in bytes. */
  size: number;
  /** File name, as the sender suggests it. */
  name?: string;
  /** Media type. */
  mime?: string;
}

/** Options of {@linkcode BlobSink.open}. */
export interface BlobSinkOptions {
  /** The sending peer's key. */
  peer: string;
  /** The blob's ref, as the sender chose it. */
  ref: string;
  /**
   * Directory of the temp and final files. Refs are chosen by the sender,
   * so use one directory per peer.
   */
  dir: string;
  /** The thread of the msg that names the blob, when known. */
  th?: string;
  /** Receive limit in bytes; {@linkcode DEFAULT_BLOB_LIMIT} by default. */
  maxBytes?: number;
}

/** Options of {@linkcode BlobSink.resume}. */
export interface BlobSinkResumeOptions {
  /** Receive limit in bytes; {@linkcode DEFAULT_BLOB_LIMIT} by default. */
  maxBytes?: number;
}

/** Why a chunk was not taken. */
export type SinkErrorCode =
  /** `n` is below the next expected index (an earlier chunk again). */
  | "out_of_order"
  /** `n` is above the next expected index: a chunk went missing. */
  | "gap"
  /** The blob is already complete. */
  | "after_complete"
  /** The blob already failed. */
  | "after_failed"
  /** The chunk names another ref. */
  | "ref_mismatch"
  /** `data` is not base64. */
  | "bad_data"
  /** More or fewer bytes than the blob part's `size`. */
  | "size_mismatch"
  /** The temp file could not be written, read or renamed. */
  | "io";

/** What {@linkcode BlobSink.write} did with one chunk. */
export type ChunkResult =
  | {
    kind: "accepted";
    ref: string;
    n: number;
    /** Bytes received so far. */
    bytes: number;
    /** Expected total, when known. */
    size?: number;
  }
  | {
    kind: "complete";
    ref: string;
    n: number;
    bytes: number;
    /** The final file. */
    path: string;
    sha256: string;
  }
  | {
    /** Over the limit: send `err blob_refused` with `ref`, keep the connection. */
    kind: "refused";
    ref: string;
    bytes: number;
    limit: number;
    detail: string;
    /** True when this refusal was already reported once (do not send err again). */
    repeat: boolean;
  }
  | {
    kind: "error";
    ref: string;
    n?: number;
    code: SinkErrorCode;
    detail: string;
    /** True when the transfer is now dead (status `failed`). */
    failed: boolean;
  };

/** What {@linkcode BlobSink.append} did, and the record right after. */
export interface Appended {
  /** The chunk's result. */
  result: ChunkResult;
  /**
   * The transfer's record just after this chunk: what to store with the
   * chunk's seen marker once a later sync made it durable.
   */
  record: BlobRecord;
}

/** Status of a transfer, as in {@linkcode BlobRecord}. */
export type BlobStatus = BlobRecord["status"];

const SAFE_NAME = /^[A-Za-z0-9_-][A-Za-z0-9_.-]{0,99}$/;

function fileBase(ref: string): string {
  // A ref is chosen by the remote: never let it pick a path.
  if (SAFE_NAME.test(ref) && !ref.endsWith(PARTIAL_SUFFIX)) return ref;
  return `ref-${sha256Hex(ref).slice(0, 32)}`;
}

/**
 * One incoming blob: feed it the blob's chunks with {@linkcode write} and
 * persist {@linkcode record} after each result (before acking).
 *
 * @example
 * ```ts
 * import { BlobSink } from "./blob_sink.ts";
 * const dir = await Deno.makeTempDir();
 * const sink = await BlobSink.open({ peer: "ed25519:x", ref: "b1", dir });
 * const r = await sink.write({ ref: "b1", n: 0, last: true, data: "aGk=" });
 * console.log(r.kind, await Deno.readTextFile(`${dir}/b1`)); // complete hi
 * await Deno.remove(dir, { recursive: true });
 * ```
 */
export class BlobSink {
  #peer: string;
  #ref: string;
  #th?: string;
  #name?: string;
  #mime?: string;
  #size = -1;
  #limit: number;
  #final: string;
  #temp: string;
  #bytes = 0;
  #next = 0;
  #status: BlobStatus = "active";
  #sha256?: string;
  // Set by the async factories (node:crypto loads on first use).
  #hash!: Sha256;
  #updated = Date.now();
  #refusalReported = false;
  #detail?: string;
  // Writes to one sink run one at a time, in call order.
  #queue: Promise<unknown> = Promise.resolve();
  // The temp file between syncs: opened by the first append, closed by sync.
  #file: SinkFile;
  /** Bytes covered by the last sync (see syncedBytes). */
  #synced: number;

  private constructor(
    record: Omit<BlobRecord, "dir" | "updated" | "path">,
    final: string,
    limit: number,
  ) {
    this.#peer = record.peer;
    this.#ref = record.ref;
    this.#th = record.th;
    this.#name = record.name;
    this.#mime = record.mime;
    this.#size = record.size;
    this.#bytes = record.bytes;
    this.#next = record.next;
    this.#status = record.status;
    this.#sha256 = record.sha256;
    this.#final = final;
    this.#temp = final + PARTIAL_SUFFIX;
    this.#file = new SinkFile(this.#temp);
    this.#limit = limit;
    this.#synced = record.bytes;
  }

  /**
   * Starts receiving a new blob: creates `dir` and an empty temp file.
   *
   * @example
   * ```ts
   * import { BlobSink } from "./blob_sink.ts";
   * const dir = await Deno.makeTempDir();
   * const sink = await BlobSink.open({ peer: "p", ref: "r", dir, maxBytes: 10 });
   * console.log(sink.status); // "active"
   * await Deno.remove(dir, { recursive: true });
   * ```
   */
  static async open(options: BlobSinkOptions): Promise<BlobSink> {
    const limit = options.maxBytes ?? DEFAULT_BLOB_LIMIT;
    const sink = new BlobSink(
      {
        peer: options.peer,
        ref: options.ref,
        th: options.th,
        size: -1,
        bytes: 0,
        next: 0,
        status: "active",
      },
      `${options.dir}/${fileBase(options.ref)}`,
      limit,
    );
    // The first hash loads node:crypto, which holds this thread for a
    // while (15–80 ms on a busy machine): the temp file is made meanwhile.
    const made = (async () => {
      await Deno.mkdir(options.dir, { recursive: true, mode: 0o700 });
      await Deno.writeFile(sink.#temp, new Uint8Array(0), { mode: 0o600 });
    })();
    made.catch(() => {}); // awaited below
    sink.#hash = await createSha256();
    await made;
    return sink;
  }

  /**
   * Picks a transfer up again from its stored record after a restart or a
   * reconnect: reopens the temp file, drops any bytes past the recorded
   * count (written but never recorded) and recomputes the hash over the
   * rest. If the temp file is gone or shorter than recorded, the sink comes
   * back `failed` (see {@linkcode detail}).
   *
   * @example
   * ```ts
   * import { BlobSink } from "./blob_sink.ts";
   * const dir = await Deno.makeTempDir();
   * const a = await BlobSink.open({ peer: "p", ref: "r", dir });
   * await a.write({ ref: "r", n: 0, last: false, data: "aGk=" });
   * const b = await BlobSink.resume(a.record);
   * console.log(b.next, b.bytes); // 1 2
   * await Deno.remove(dir, { recursive: true });
   * ```
   */
  static async resume(
    record: BlobRecord,
    options: BlobSinkResumeOptions = {},
  ): Promise<BlobSink> {
    const limit = options.maxBytes ?? DEFAULT_BLOB_LIMIT;
    const final = record.path.endsWith(PARTIAL_SUFFIX)
      ? record.path.slice(0, -PARTIAL_SUFFIX.length)
      : record.path;
    const sink = new BlobSink(record, final, limit);
    sink.#hash = await createSha256();
    sink.#updated = record.updated;
    if (record.status !== "active") {
      sink.#refusalReported = true;
      return sink;
    }
    if (!record.path.endsWith(PARTIAL_SUFFIX)) {
      sink.#fail(`stored path ${record.path} is not a temp file`);
      return sink;
    }
    try {
      using file = await Deno.open(sink.#temp, { read: true, write: true });
      const info = await file.stat();
      if (info.size < record.bytes) {
        sink.#fail(
          `temp file ${sink.#temp} has ${info.size} bytes, ${record.bytes} were recorded`,
        );
        return sink;
      }
      if (info.size > record.bytes) await file.truncate(record.bytes);
      const buffer = new Uint8Array(READ_BUFFER);
      let left = record.bytes;
      while (left > 0) {
        const n = await file.read(
          buffer.subarray(0, Math.min(left, buffer.length)),
        );
        if (n === null) break;
        sink.#hash.update(buffer.subarray(0, n));
        left -= n;
      }
    } catch (error) {
      if (
        error instanceof Deno.errors.NotFound && await sink.#renamedBefore()
      ) {
        return sink;
      }
      sink.#fail(`cannot reopen ${sink.#temp}: ${errorText(error)}`);
    }
    return sink;
  }

  /**
   * A process killed between the last chunk's rename and the caller storing
   * the record leaves no temp file but a complete final one: take it as
   * complete (its last chunk, replayed, then counts as a duplicate).
   */
  async #renamedBefore(): Promise<boolean> {
    let info: Deno.FileInfo;
    try {
      info = await Deno.stat(this.#final);
    } catch {
      return false;
    }
    if (!info.isFile || info.size < this.#bytes) return false;
    if (this.#size >= 0 && info.size !== this.#size) return false;
    const hash = await createSha256();
    using file = await Deno.open(this.#final, { read: true });
    const buffer = new Uint8Array(READ_BUFFER);
    for (;;) {
      const n = await file.read(buffer);
      if (n === null) break;
      hash.update(buffer.subarray(0, n));
    }
    this.#sha256 = hash.digest("hex");
    this.#bytes = info.size;
    this.#next += 1;
    this.#status = "complete";
    this.#refusalReported = true;
    return true;
  }

  /** The blob's ref. */
  get ref(): string {
    return this.#ref;
  }

  /** active, complete, refused or failed. */
  get status(): BlobStatus {
    return this.#status;
  }

  /** Bytes received (and synced) so far. */
  get bytes(): number {
    return this.#bytes;
  }

  /** The next chunk index expected. */
  get next(): number {
    return this.#next;
  }

  /** The blob part's size once known, else -1. */
  get size(): number {
    return this.#size;
  }

  /** The receive limit in bytes. */
  get limit(): number {
    return this.#limit;
  }

  /** Where the file is now: the temp file, or the final file once complete. */
  get path(): string {
    return this.#status === "complete" ? this.#final : this.#temp;
  }

  /** Lowercase hex sha256, once complete. */
  get sha256(): string | undefined {
    return this.#sha256;
  }

  /** Why the transfer was refused or failed, if it was. */
  get detail(): string | undefined {
    return this.#detail;
  }

  /**
   * The transfer as a {@linkcode BlobRecord} to persist (`size` is -1 until
   * the blob part has been seen: chunks arrive before the msg naming them).
   */
  get record(): BlobRecord {
    const record: BlobRecord = {
      peer: this.#peer,
      ref: this.#ref,
      dir: "in",
      size: this.#size,
      bytes: this.#bytes,
      next: this.#next,
      status: this.#status,
      path: this.path,
      updated: this.#updated,
    };
    if (this.#th !== undefined) record.th = this.#th;
    if (this.#name !== undefined) record.name = this.#name;
    if (this.#mime !== undefined) record.mime = this.#mime;
    if (this.#sha256 !== undefined) record.sha256 = this.#sha256;
    return record;
  }

  /**
   * Takes one chunk: checks order, decodes, appends and syncs
   * ({@linkcode append}, then {@linkcode sync}). Never throws for bad input;
   * see {@linkcode ChunkResult}.
   */
  async write(chunk: ChunkInput): Promise<ChunkResult> {
    const { result } = await this.append(chunk);
    const { ok } = await this.sync();
    if (ok || result.kind !== "accepted") return result;
    // Nothing the caller records is durable: the transfer failed.
    const detail = this.#detail ?? `blob ${this.#ref}: cannot sync`;
    return this.#error("io", detail, result.n, true);
  }

  /**
   * Takes one chunk now: checks order, decodes and writes it at its offset
   * (the file stays open), without a sync; resolves with its result and the
   * record just after it. Its bytes are durable only once a later
   * {@linkcode sync} resolves: store that record and ack nothing before.
   * The last chunk is synced and renamed into place here. Calls run one at a
   * time, in call order. Never throws for bad input.
   *
   * @example
   * ```ts
   * import { BlobSink } from "./blob_sink.ts";
   * const dir = await Deno.makeTempDir();
   * const sink = await BlobSink.open({ peer: "p", ref: "r", dir });
   * await sink.append({ ref: "r", n: 0, last: false, data: "aGk=" });
   * const { ok, record } = await sink.sync();
   * console.log(ok, record.bytes); // true 2
   * await Deno.remove(dir, { recursive: true });
   * ```
   */
  append(chunk: ChunkInput): Promise<Appended> {
    return this.#queued(async () => {
      const result = await this.#write(chunk, this.#file);
      return { result, record: this.record };
    });
  }

  /**
   * Makes every chunk appended so far durable with one fsync, and resolves
   * with the record as of that point (what may be committed with those
   * chunks' seen markers). `ok` is false when the sync failed: the
   * transfer is then failed, and the record says so.
   */
  sync(): Promise<{ ok: boolean; record: BlobRecord }> {
    // Its place in the queue fixes what it covers; the fsync itself runs
    // beside the appends queued after it (they go to a new handle).
    const taken = this.#queued(() => {
      const file = this.#file;
      this.#file = new SinkFile(this.#temp);
      return Promise.resolve({ file, record: this.record });
    });
    return taken.then(async ({ file, record }) => {
      const ok = await file.sync();
      file.close();
      if (ok) {
        this.#synced = Math.max(this.#synced, record.bytes);
        return { ok, record };
      }
      this.#fail(`blob ${this.#ref}: cannot sync ${this.#temp}`);
      return { ok, record: this.record };
    });
  }

  /**
   * Bytes known durable: as of the last {@link sync} that resolved, or the
   * record this sink was opened or resumed from.
   */
  get syncedBytes(): number {
    return this.#synced;
  }

  /** Bytes appended and not yet synced (0 once a sync has run). */
  get unsynced(): number {
    return this.#file.dirtyBytes;
  }

  #queued<T>(task: () => Promise<T>): Promise<T> {
    const run = this.#queue.then(task);
    this.#queue = run.catch(() => {});
    return run;
  }

  /**
   * Records what the msg's blob part says (size, name, mime) and checks the
   * size against the limit and the bytes already here. Returns a result when
   * that refuses or fails the transfer, else undefined.
   */
  expect(part: BlobDescription): Promise<ChunkResult | undefined> {
    return this.#queued(() => this.#expect(part));
  }

  /** Removes the temp file (after a refusal or failure, or to give up). */
  async discard(): Promise<void> {
    await this.#queue;
    this.#file.close();
    await this.#removeTemp();
    if (this.#status === "active") this.#fail("discarded");
  }

  async #expect(part: BlobDescription): Promise<ChunkResult | undefined> {
    if (part.name !== undefined) this.#name = part.name;
    if (part.mime !== undefined) this.#mime = part.mime;
    if (!Number.isSafeInteger(part.size) || part.size < 0) return undefined;
    this.#size = part.size;
    this.#touch();
    if (this.#status === "refused") return this.#refused();
    if (this.#status === "failed") return undefined;
    if (this.#status === "active" && part.size > this.#limit) {
      return await this.#refuse(
        `blob ${this.#ref} is ${part.size} bytes, over the ${this.#limit} byte limit`,
      );
    }
    const tooMany = this.#bytes > part.size;
    const wrongTotal = this.#status === "complete" && this.#bytes !== part.size;
    if ((this.#status === "active" && tooMany) || wrongTotal) {
      const detail =
        `blob ${this.#ref}: received ${this.#bytes} bytes, blob part says ${part.size}`;
      if (this.#status === "complete") {
        await Deno.remove(this.#final).catch(() => {});
      }
      await this.#removeTemp();
      this.#fail(detail);
      return this.#error("size_mismatch", detail, undefined, true);
    }
    return undefined;
  }

  async #write(chunk: ChunkInput, io: SinkFile): Promise<ChunkResult> {
    const n = chunk.n;
    if (chunk.ref !== this.#ref) {
      return this.#error(
        "ref_mismatch",
        `chunk for ${chunk.ref} given to sink of ${this.#ref}`,
        n,
      );
    }
    if (this.#status === "complete") {
      return this.#error(
        "after_complete",
        `blob ${this.#ref} is already complete`,
        n,
      );
    }
    if (this.#status === "refused") return this.#refused();
    if (this.#status === "failed") {
      return this.#error(
        "after_failed",
        `blob ${this.#ref} already failed: ${this.#detail}`,
        n,
      );
    }
    if (!Number.isSafeInteger(n) || n < this.#next) {
      return this.#error(
        "out_of_order",
        `blob ${this.#ref}: chunk ${n} arrived, expected ${this.#next}`,
        n,
      );
    }
    if (n > this.#next) {
      return this.#error(
        "gap",
        `blob ${this.#ref}: chunk ${n} arrived, chunks from ${this.#next} are missing`,
        n,
      );
    }
    let bytes: Uint8Array;
    try {
      bytes = chunk.bytes ?? decodeBase64(chunk.data);
    } catch (error) {
      const detail = `blob ${this.#ref} chunk ${n}: ${errorText(error)}`;
      await this.#removeTemp();
      this.#fail(detail);
      return this.#error("bad_data", detail, n, true);
    }
    const total = this.#bytes + bytes.length;
    if (total > this.#limit) {
      return await this.#refuse(
        `blob ${this.#ref} exceeds the ${this.#limit} byte limit (${total} bytes by chunk ${n})`,
      );
    }
    if (this.#size >= 0 && total > this.#size) {
      const detail =
        `blob ${this.#ref}: ${total} bytes by chunk ${n}, blob part says ${this.#size}`;
      await this.#removeTemp();
      this.#fail(detail);
      return this.#error("size_mismatch", detail, n, true);
    }
    if (chunk.last && this.#size >= 0 && total !== this.#size) {
      const detail =
        `blob ${this.#ref}: ended at ${total} bytes, blob part says ${this.#size}`;
      await this.#removeTemp();
      this.#fail(detail);
      return this.#error("size_mismatch", detail, n, true);
    }
    try {
      // Written at the recorded length: stray bytes from a failed earlier
      // attempt are overwritten, and synced (by sync, once for the batch)
      // before the caller records or acks anything. The hash takes the
      // bytes while the blocking pool writes them.
      const file = await io.open();
      const written = io.writeAt(this.#bytes, bytes);
      this.#hash.update(bytes);
      await written;
      if (chunk.last) {
        await file.truncate(total);
        // The bytes are durable before the rename makes the file final.
        await file.syncData();
        io.dirtyBytes = 0;
        io.close();
      }
    } catch (error) {
      const detail =
        `blob ${this.#ref} chunk ${n}: cannot write ${this.#temp}: ${
          errorText(error)
        }`;
      this.#fail(detail);
      return this.#error("io", detail, n, true);
    }
    this.#bytes = total;
    this.#next = n + 1;
    this.#touch();
    if (!chunk.last) {
      const result: ChunkResult = {
        kind: "accepted",
        ref: this.#ref,
        n,
        bytes: total,
      };
      if (this.#size >= 0) result.size = this.#size;
      return result;
    }
    try {
      await Deno.rename(this.#temp, this.#final);
    } catch (error) {
      const detail = `blob ${this.#ref}: cannot rename to ${this.#final}: ${
        errorText(error)
      }`;
      this.#fail(detail);
      return this.#error("io", detail, n, true);
    }
    this.#sha256 = this.#hash.digest("hex");
    this.#status = "complete";
    return {
      kind: "complete",
      ref: this.#ref,
      n,
      bytes: total,
      path: this.#final,
      sha256: this.#sha256,
    };
  }

  async #refuse(detail: string): Promise<ChunkResult> {
    this.#status = "refused";
    this.#detail = detail;
    this.#touch();
    await this.#removeTemp();
    return this.#refused();
  }

  #refused(): ChunkResult {
    const repeat = this.#refusalReported;
    this.#refusalReported = true;
    return {
      kind: "refused",
      ref: this.#ref,
      bytes: this.#bytes,
      limit: this.#limit,
      detail: this.#detail ?? `blob ${this.#ref} refused`,
      repeat,
    };
  }

  #fail(detail: string): void {
    this.#status = "failed";
    this.#detail = detail;
    this.#touch();
  }

  #error(
    code: SinkErrorCode,
    detail: string,
    n?: number,
    failed = false,
  ): ChunkResult {
    const result: ChunkResult = {
      kind: "error",
      ref: this.#ref,
      code,
      detail,
      failed,
    };
    if (n !== undefined) result.n = n;
    return result;
  }

  #touch(): void {
    this.#updated = Date.now();
  }

  async #removeTemp(): Promise<void> {
    await Deno.remove(this.#temp).catch(() => {});
  }
}

/**
 * The temp file between two syncs: opened once, synced once.
 *
 * A chunk goes to it in one write. Each write is a hop to the blocking pool
 * and back (a pool thread woken, then the JS thread's turn to start the
 * next); in 64 KiB pieces one after the other, those hops set a receiver's
 * pace (traced in the blob bench: reading waited on them ~60 % of the
 * time). An earlier pass measured whole 256 KiB writes costing the kernel
 * more than 64 KiB ones (large page-cache folios); measured again (20 MiB
 * to a new file, 7 runs each, same minutes), 256 KiB writes took the pool
 * threads 6–8 ms against 7–27 ms in 64 KiB ones.
 */
class SinkFile {
  #path: string;
  #file: Deno.FsFile | undefined;
  /** Where the next write goes (-1: unknown, seek first). */
  #position = -1;
  /** Bytes written since the last sync. */
  dirtyBytes = 0;

  constructor(path: string) {
    this.#path = path;
  }

  async open(): Promise<Deno.FsFile> {
    this.#file ??= await Deno.open(this.#path, { write: true });
    return this.#file;
  }

  /**
   * Writes `bytes` at `offset` (after {@link open}), in one write unless
   * the kernel takes less; seeks only when not already there (a fresh
   * handle, or after an error): chunks of one batch follow each other.
   */
  async writeAt(offset: number, bytes: Uint8Array): Promise<void> {
    const file = this.#file!;
    if (this.#position !== offset) {
      this.#position = -1;
      // An lseek, a few µs: on this thread, not a hop to the pool.
      file.seekSync(offset, Deno.SeekMode.Start);
    }
    this.#position = -1;
    for (let done = 0; done < bytes.length;) {
      done += await file.write(bytes.subarray(done));
    }
    this.#position = offset + bytes.length;
    this.dirtyBytes += bytes.length;
  }

  /** Syncs what was written; false when that failed. */
  async sync(): Promise<boolean> {
    if (this.dirtyBytes === 0 || !this.#file) return true;
    try {
      await this.#file.syncData();
      this.dirtyBytes = 0;
      return true;
    } catch {
      return false;
    }
  }

  /** Closes the file: what was not synced is no longer ours to sync. */
  close(): void {
    try {
      this.#file?.close();
    } catch { /* already closed */ }
    this.#file = undefined;
    this.#position = -1;
    this.dirtyBytes = 0;
  }
}
