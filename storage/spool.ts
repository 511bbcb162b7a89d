/**
 * The outgoing blob spool: a file the user sends is first copied (snapshot)
 * into the peer's spool directory, so the user may change or delete the
 * original while its chunks are still queued or being replayed after a
 * reconnect. Chunks are then read back from the spool by position, never by
 * loading the whole file (SPEC 9.3; NOTES item 1: chunks carry `th` and go
 * out before the msg that names the blob).
 *
 * @module
 */

import { createSha256, randomHex, type Sha256 } from "./sha256.ts";
import { encodeBase64 } from "../wire/base64.ts";
import { errorText } from "../wire/error_text.ts";
import {
  type BlobRecord,
  type ChunkSource,
  entryLine,
  type OutboxDraft,
  type OutboxEntry,
} from "./store.ts";

/** Recommended chunk payload size before encoding (SPEC 9.3): 256 KiB. */
export const DEFAULT_CHUNK_SIZE = 262144;

/** Recommended local blob size limit (SPEC 10.1): 50 MiB. */
export const DEFAULT_MAX_BLOB_BYTES = 50 * 1024 * 1024;

// Hash read buffer: 1 MiB reads, one buffer, so memory stays flat.
const HASH_BUFFER = 1024 * 1024;

/** A file snapshotted into the spool, ready to be chunked. */
export interface SpooledBlob {
  /** Path of the spooled copy. */
  path: string;
  /** Size in bytes of the copy (what will be sent). */
  size: number;
  /**
   * Lowercase hex sha256 of the copy, when asked for
   * ({@linkcode SnapshotOptions.hash}).
   */
  sha256?: string;
  /** The blob's ref, as the chunks and the blob part carry it. */
  ref: string;
}

/** Options of {@linkcode snapshotToSpool}. */
export interface SnapshotOptions {
  /** Our blob limit in bytes: bigger files are refused before any copy. */
  maxBytes: number;
  /** The ref to use; a fresh random one by default. */
  ref?: string;
  /**
   * Also hash the copy (false by default): the wire carries no sha256 for a
   * blob, and the hash's first use loads `node:crypto` (~20 ms of CPU and
   * ~9 MiB of RSS) on the way to the first chunk.
   */
  hash?: boolean;
}

/**
 * Thrown when a file to send is over our blob limit. Nothing was copied or
 * queued.
 *
 * @example
 * ```ts
 * import { BlobTooLargeError } from "./spool.ts";
 * const e = new BlobTooLargeError("/tmp/big.iso", 60_000_000, 52_428_800);
 * console.log(e.message);
 * ```
 */
export class BlobTooLargeError extends Error {
  /** The offending file. */
  readonly path: string;
  /** Its size in bytes (at least this many). */
  readonly size: number;
  /** The limit it went over. */
  readonly limit: number;

  /** Builds the error; the message is one line. */
  constructor(path: string, size: number, limit: number) {
    super(
      `blob too large: ${path} is ${size} bytes, over the ${limit} byte limit`,
    );
    this.name = "BlobTooLargeError";
    this.path = path;
    this.size = size;
    this.limit = limit;
  }
}

/**
 * Thrown when a file to send (or a spooled copy) is missing, unreadable or
 * not a regular file, or a ref cannot be used as a file name.
 *
 * @example
 * ```ts
 * import { BlobSourceError } from "./spool.ts";
 * console.log(new BlobSourceError("/nope", "not found").message);
 * ```
 */
export class BlobSourceError extends Error {
  /** The file concerned. */
  readonly path: string;

  /** Builds the error; the message is one line. */
  constructor(path: string, reason: string) {
    super(`cannot send ${path}: ${reason}`);
    this.name = "BlobSourceError";
    this.path = path;
  }
}

const SAFE_REF = /^[A-Za-z0-9_-][A-Za-z0-9_.-]{0,127}$/;

/**
 * A fresh random blob ref such as `blob_3f9a0c...` (safe as a file name).
 *
 * @example
 * ```ts
 * import { newBlobRef } from "./spool.ts";
 * console.log(newBlobRef().startsWith("blob_")); // true
 * ```
 */
export function newBlobRef(): string {
  return `blob_${randomHex(12)}`;
}

/**
 * Why a file could not be read, in a few words (for {@linkcode BlobSourceError}).
 *
 * @example
 * ```ts
 * import { sourceReason } from "./spool.ts";
 * console.log(sourceReason(new Deno.errors.NotFound("x"))); // no such file
 * ```
 */
export function sourceReason(error: unknown): string {
  if (error instanceof Deno.errors.NotFound) return "no such file";
  if (error instanceof Deno.errors.PermissionDenied) return "permission denied";
  if (error instanceof Deno.errors.IsADirectory) return "is a directory";
  return errorText(error);
}

/**
 * The lowercase hex sha256 of the file at `path`, read in one reused
 * buffer, into `hasher` (a fresh one by default).
 */
async function hashFile(
  path: string,
  hasher: Promise<Sha256> = createSha256(),
): Promise<string> {
  const hash = await hasher;
  using file = await Deno.open(path, { read: true });
  const buffer = new Uint8Array(HASH_BUFFER);
  for (;;) {
    const n = await file.read(buffer);
    if (n === null) break;
    hash.update(buffer.subarray(0, n));
  }
  return hash.digest("hex");
}

/**
 * Copies `sourcePath` into `spoolDir` as `<ref>` (a kernel copy: memory
 * stays flat), fsyncs the copy (hashing it meanwhile when
 * {@linkcode SnapshotOptions.hash} asks), renames it into place, and returns
 * what was spooled. A file over `maxBytes` is refused with
 * {@linkcode BlobTooLargeError} before anything is copied (and again if it
 * grows during the copy); a missing or unreadable file with
 * {@linkcode BlobSourceError}.
 *
 * @example
 * ```ts
 * import { snapshotToSpool } from "./spool.ts";
 * const dir = await Deno.makeTempDir();
 * await Deno.writeTextFile(`${dir}/a.txt`, "hello");
 * const blob = await snapshotToSpool(`${dir}/spool`, `${dir}/a.txt`, {
 *   maxBytes: 1024,
 *   hash: true,
 * });
 * console.log(blob.size, blob.sha256?.length); // 5 64
 * await Deno.remove(dir, { recursive: true });
 * ```
 */
export async function snapshotToSpool(
  spoolDir: string,
  sourcePath: string,
  options: SnapshotOptions,
): Promise<SpooledBlob> {
  const limit = options.maxBytes;
  const ref = options.ref ?? newBlobRef();
  if (!SAFE_REF.test(ref)) {
    throw new BlobSourceError(
      sourcePath,
      `ref ${JSON.stringify(ref)} is not a safe file name`,
    );
  }
  let source: Deno.FsFile;
  try {
    source = await Deno.open(sourcePath, { read: true });
  } catch (error) {
    throw new BlobSourceError(sourcePath, sourceReason(error));
  }
  const target = `${spoolDir}/${ref}`;
  const temp = `${target}.tmp-${randomHex(6)}`;
  let out: Deno.FsFile | undefined;
  try {
    let info: Deno.FileInfo;
    try {
      info = await source.stat();
    } catch (error) {
      throw new BlobSourceError(sourcePath, sourceReason(error));
    }
    if (!info.isFile) {
      throw new BlobSourceError(sourcePath, "not a regular file");
    }
    // Checked before anything is written, so nothing is spooled or queued.
    if (info.size > limit) {
      throw new BlobTooLargeError(sourcePath, info.size, limit);
    }

    await Deno.mkdir(spoolDir, { recursive: true, mode: 0o700 });
    // The hasher's first use loads node:crypto (~15 ms of CPU): here, while
    // the kernel copies (copy_file_range: no bytes pass through JS).
    const hasher = options.hash ? createSha256() : undefined;
    hasher?.catch(() => {}); // awaited below, unless the copy fails
    try {
      await Deno.copyFile(sourcePath, temp);
    } catch (error) {
      throw new BlobSourceError(sourcePath, sourceReason(error));
    }
    out = await Deno.open(temp, { read: true, write: true });
    await Deno.chmod(temp, 0o600);
    // The file may have grown between stat and copy.
    const size = (await out.stat()).size;
    if (size > limit) throw new BlobTooLargeError(sourcePath, size, limit);
    // The copy's fsync runs while we hash it (from the page cache).
    const [, sha256] = await Promise.all([
      out.sync(),
      hasher ? hashFile(temp, hasher) : undefined,
    ]);
    out.close();
    out = undefined;
    await Deno.rename(temp, target);
    return sha256 === undefined
      ? { path: target, size, ref }
      : { path: target, size, sha256, ref };
  } catch (error) {
    if (out) out.close();
    await Deno.remove(temp).catch(() => {});
    throw error;
  } finally {
    source.close();
  }
}

/**
 * Splits a blob of `size` bytes into chunk sources of `chunkSize` bytes (the
 * last one shorter). A 0-byte blob is one empty last chunk. `path` is the
 * spooled file the sources point at.
 *
 * @example
 * ```ts
 * import { planChunks } from "./spool.ts";
 * console.log(planChunks(5, 2).map((c) => c.length)); // [2, 2, 1]
 * console.log(planChunks(0).length); // 1
 * ```
 */
export function planChunks(
  size: number,
  chunkSize: number = DEFAULT_CHUNK_SIZE,
  path = "",
): ChunkSource[] {
  if (!Number.isSafeInteger(size) || size < 0) {
    throw new RangeError(
      `planChunks: size must be a non-negative integer, got ${size}`,
    );
  }
  if (!Number.isSafeInteger(chunkSize) || chunkSize <= 0) {
    throw new RangeError(
      `planChunks: chunkSize must be a positive integer, got ${chunkSize}`,
    );
  }
  if (size === 0) return [{ path, offset: 0, length: 0 }];
  const chunks: ChunkSource[] = [];
  for (let offset = 0; offset < size; offset += chunkSize) {
    chunks.push({ path, offset, length: Math.min(chunkSize, size - offset) });
  }
  return chunks;
}

/**
 * Reads exactly `source.length` bytes at `source.offset` of the spooled
 * file (open, seek, read), so memory stays flat whatever the file size.
 * Throws {@linkcode BlobSourceError} if the file is gone or too short.
 *
 * @example
 * ```ts
 * import { readChunk } from "./spool.ts";
 * const dir = await Deno.makeTempDir();
 * await Deno.writeTextFile(`${dir}/f`, "abcdef");
 * const bytes = await readChunk({ path: `${dir}/f`, offset: 2, length: 3 });
 * console.log(new TextDecoder().decode(bytes)); // "cde"
 * await Deno.remove(dir, { recursive: true });
 * ```
 */
export async function readChunk(source: ChunkSource): Promise<Uint8Array> {
  const bytes = new Uint8Array(source.length);
  if (source.length === 0) return bytes;
  let file: Deno.FsFile;
  try {
    file = await Deno.open(source.path, { read: true });
  } catch (error) {
    throw new BlobSourceError(source.path, sourceReason(error));
  }
  try {
    await readFullyAt(file, source.path, source.offset, bytes);
    return bytes;
  } finally {
    file.close();
  }
}

/**
 * Fills `bytes` from `file` (the spooled file at `path`) at `offset`;
 * throws {@linkcode BlobSourceError} when the file ends first. `position`,
 * where the file's read position is known to be, saves the seek when it is
 * already at `offset` (chunks read in order).
 *
 * @example
 * ```ts
 * import { readFullyAt } from "./spool.ts";
 * const dir = await Deno.makeTempDir();
 * await Deno.writeTextFile(`${dir}/f`, "abcdef");
 * using file = await Deno.open(`${dir}/f`);
 * const bytes = new Uint8Array(2);
 * await readFullyAt(file, `${dir}/f`, 4, bytes);
 * console.log(new TextDecoder().decode(bytes)); // "ef"
 * await Deno.remove(dir, { recursive: true });
 * ```
 */
export async function readFullyAt(
  file: Deno.FsFile,
  path: string,
  offset: number,
  bytes: Uint8Array,
  position = -1,
): Promise<void> {
  if (position !== offset) await file.seek(offset, Deno.SeekMode.Start);
  let done = 0;
  while (done < bytes.length) {
    const n = await file.read(bytes.subarray(done));
    if (n === null) {
      throw new BlobSourceError(
        path,
        `spooled file ends at ${offset + done}, chunk needs ${
          offset + bytes.length
        }`,
      );
    }
    done += n;
  }
}

/** Options of {@linkcode chunkDrafts}. */
export interface ChunkDraftOptions {
  /** The thread of the msg that names the blob (NOTES item 1). */
  th?: string;
  /** Bytes of blob data per chunk line. */
  chunkSize?: number;
}

/**
 * The outbox drafts of a spooled blob's chunks, in order, without data (the
 * bytes stay in the spool; see {@linkcode chunkMessage}). Enqueue them
 * BEFORE the msg that names the blob, in the same `enqueue` call.
 *
 * @example
 * ```ts
 * import { chunkDrafts } from "./spool.ts";
 * const drafts = chunkDrafts({ path: "/spool/b1", size: 5, sha256: "", ref: "b1" }, { th: "t1", chunkSize: 4 });
 * console.log(drafts.map((d) => [d.fields.n, d.fields.last])); // [[0, false], [1, true]]
 * ```
 */
export function chunkDrafts(
  blob: SpooledBlob,
  options: ChunkDraftOptions = {},
): OutboxDraft[] {
  const sources = planChunks(blob.size, options.chunkSize, blob.path);
  return sources.map((chunk, n) => ({
    fields: {
      t: "chunk",
      ...(options.th === undefined ? {} : { th: options.th }),
      ref: blob.ref,
      n,
      last: n === sources.length - 1,
    },
    chunk,
  }));
}

/**
 * The full wire object of an outboxed chunk: its stored fields, id and ts,
 * and `data` read from the spool as padded standard base64.
 *
 * @example
 * ```ts
 * import { chunkMessage } from "./spool.ts";
 * const dir = await Deno.makeTempDir();
 * await Deno.writeTextFile(`${dir}/b1`, "hi");
 * const line = await chunkMessage({
 *   peer: "p", id: "01", ts: "2026-01-01T00:00:00.000Z", t: "chunk", queuedAt: 0,
 *   fields: { t: "chunk", ref: "b1", n: 0, last: true },
 *   chunk: { path: `${dir}/b1`, offset: 0, length: 2 },
 * });
 * console.log(line.data); // "aGk="
 * await Deno.remove(dir, { recursive: true });
 * ```
 */
export async function chunkMessage(
  entry: OutboxEntry,
): Promise<Record<string, unknown> & { t: string; data: string }> {
  if (!entry.chunk) {
    throw new BlobSourceError(entry.id, "outbox entry has no chunk source");
  }
  const bytes = await readChunk(entry.chunk);
  return { ...entryLine(entry), data: encodeBase64(bytes) };
}

/**
 * The {@linkcode BlobRecord} of a new outgoing transfer of `blob` to `peer`,
 * to store alongside the enqueued chunks.
 *
 * @example
 * ```ts
 * import { spooledRecord } from "./spool.ts";
 * const r = spooledRecord("ed25519:p", { path: "/s/b1", size: 5, sha256: "ab", ref: "b1" }, { th: "t1" });
 * console.log(r.dir, r.status, r.next); // out active 0
 * ```
 */
export function spooledRecord(
  peer: string,
  blob: SpooledBlob,
  options: { th?: string; name?: string; mime?: string } = {},
): BlobRecord {
  const record: BlobRecord = {
    peer,
    ref: blob.ref,
    dir: "out",
    size: blob.size,
    bytes: 0,
    next: 0,
    status: "active",
    path: blob.path,
    sha256: blob.sha256,
    updated: Date.now(),
  };
  if (options.th !== undefined) record.th = options.th;
  if (options.name !== undefined) record.name = options.name;
  if (options.mime !== undefined) record.mime = options.mime;
  return record;
}

/**
 * Removes a spooled copy once its transfer is over (done or refused).
 * Missing files are fine.
 *
 * @example
 * ```ts
 * import { discardSpooled } from "./spool.ts";
 * await discardSpooled("/tmp/does-not-exist"); // no error
 * ```
 */
export async function discardSpooled(path: string): Promise<void> {
  try {
    await Deno.remove(path);
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
  }
}
