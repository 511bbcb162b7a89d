/**
 * Outgoing chunk lines built straight into reused buffers: the chunk's
 * bytes are read at their offset of the spooled file (kept open between
 * chunks of one file) into one read buffer, encoded as base64 and written
 * with the line's envelope into a pooled frame buffer, which the caller
 * hands back once the socket has written it. No line-sized string is built
 * (no `JSON.stringify` of the data, no decode of the frame for the log), so
 * a blob's sender allocates about one base64 string per chunk and memory
 * stays flat whatever the file's size.
 *
 * @module
 */

import { BlobSourceError, readFullyAt, sourceReason } from "./spool.ts";
import { entryLine, type OutboxEntry } from "./store.ts";
import { encodeBase64 } from "../wire/base64.ts";
import { MAX_LINE_BYTES } from "../wire/frame.ts";

const encoder = new TextEncoder();
/** `"}` and the newline after a chunk's data. */
const TAIL = encoder.encode('"}\n');
/** Frame buffers kept for reuse (a sender's write window holds a few). */
const POOL_SIZE = 8;

/** One chunk line, ready for the socket. */
export interface ChunkFrame {
  /** The line's bytes, newline included (a view into a pooled buffer). */
  bytes: Uint8Array;
  /** The line as an object, `data` left empty (for the log and inspector). */
  line: Record<string, unknown> & { t: string; data: string };
  /** `line` as JSON text. */
  raw: string;
  /** Gives the buffer back: call once `bytes` has been written (or dropped). */
  release(): void;
}

/**
 * Builds chunk lines for one connection's writer, one at a time.
 *
 * @example
 * ```ts
 * import { ChunkFramer } from "./chunk_frame.ts";
 * const dir = await Deno.makeTempDir();
 * await Deno.writeTextFile(`${dir}/b1`, "hi");
 * const framer = new ChunkFramer();
 * const frame = await framer.frame({
 *   peer: "p", id: "01", ts: "2026-01-01T00:00:00.000Z", t: "chunk", queuedAt: 0,
 *   fields: { t: "chunk", ref: "b1", n: 0, last: true },
 *   chunk: { path: `${dir}/b1`, offset: 0, length: 2 },
 * });
 * console.log(new TextDecoder().decode(frame.bytes).endsWith('"data":"aGk="}\n')); // true
 * frame.release();
 * framer.close();
 * await Deno.remove(dir, { recursive: true });
 * ```
 */
export class ChunkFramer {
  #path: string | undefined;
  #file: Deno.FsFile | undefined;
  /** The open file's read position (-1: not known). */
  #position = -1;
  #read = new Uint8Array(0);
  #free: Uint8Array[] = [];

  /**
   * The wire line of an outboxed chunk: its stored fields, id and ts, and
   * `data` read from the spool as padded standard base64. Throws
   * {@linkcode BlobSourceError} when the spooled file is gone or too short,
   * or the line would pass the line limit.
   */
  async frame(entry: OutboxEntry): Promise<ChunkFrame> {
    const source = entry.chunk;
    if (!source) {
      throw new BlobSourceError(entry.id, "outbox entry has no chunk source");
    }
    const bytes = await this.#readAt(source.path, source.offset, source.length);
    // The blob's last chunk: let go of its file (the spool removes it once
    // acked, and an open handle would keep its disk space).
    if (entry.fields.last === true) this.close();
    const data = encodeBase64(bytes);
    // Envelope first, as on every line we write; data last.
    const line = { ...entryLine(entry), data: "" };
    const raw = JSON.stringify(line);
    // raw ends with `"data":""}`: the data goes between the quotes.
    const head = raw.slice(0, -2);
    const size = head.length * 3 + data.length + TAIL.length;
    const buffer = this.#take(size);
    let at = encoder.encodeInto(head, buffer).written;
    at += encoder.encodeInto(data, buffer.subarray(at)).written;
    buffer.set(TAIL, at);
    at += TAIL.length;
    if (at - 1 > MAX_LINE_BYTES) {
      this.#give(buffer);
      throw new BlobSourceError(
        source.path,
        `chunk ${entry.id} would be a ${
          at - 1
        } byte line, over ${MAX_LINE_BYTES}`,
      );
    }
    let released = false;
    return {
      bytes: buffer.subarray(0, at),
      line,
      raw,
      release: () => {
        if (released) return;
        released = true;
        this.#give(buffer);
      },
    };
  }

  /**
   * Closes the open spooled file and lets go of the buffers (frames still
   * out are dropped when released): between blobs a connection holds none.
   */
  close(): void {
    try {
      this.#file?.close();
    } catch { /* already closed */ }
    this.#file = undefined;
    this.#path = undefined;
    this.#position = -1;
    this.#free = [];
    this.#read = new Uint8Array(0);
  }

  /** A pooled buffer of at least `size` bytes. */
  #take(size: number): Uint8Array {
    const i = this.#free.findIndex((b) => b.length >= size);
    if (i >= 0) return this.#free.splice(i, 1)[0];
    return new Uint8Array(size);
  }

  #give(buffer: Uint8Array): void {
    // Kept only while a blob's file is open (more of its chunks to come).
    if (this.#path !== undefined && this.#free.length < POOL_SIZE) {
      this.#free.push(buffer);
    }
  }

  /** `length` bytes at `offset` of `path`, in the reused read buffer. */
  async #readAt(
    path: string,
    offset: number,
    length: number,
  ): Promise<Uint8Array> {
    if (this.#read.length < length) this.#read = new Uint8Array(length);
    const bytes = this.#read.subarray(0, length);
    if (length === 0) return bytes;
    if (this.#path !== path) {
      this.close();
      try {
        this.#file = await Deno.open(path, { read: true });
      } catch (error) {
        throw new BlobSourceError(path, sourceReason(error));
      }
      this.#path = path;
    }
    const file = this.#file!;
    try {
      // Removed since (the transfer was refused or is over): as if gone.
      // fstat is a few µs: synchronous, not a round trip through the
      // blocking pool per chunk.
      if (file.statSync().nlink === 0) {
        throw new Deno.errors.NotFound(path);
      }
      // Chunks in order need no seek: the file is where the last one ended.
      const at = this.#position;
      this.#position = -1;
      await readFullyAt(file, path, offset, bytes, at);
      this.#position = offset + length;
    } catch (error) {
      // A later chunk opens the file again (it may have been replaced).
      this.close();
      if (error instanceof BlobSourceError) throw error;
      throw new BlobSourceError(path, sourceReason(error));
    }
    return bytes;
  }
}
