/**
 * The `fs:read` and `fs:write` requests of the coding-agent profile
 * (PROFILE.md), confined to a served root.
 *
 * Confinement: files are opened with {@linkcode openInRoot}, an `openat`
 * style walk that never lets the kernel follow a symlink, so `..`, absolute
 * paths, symlinks and a symlink swapped in concurrently cannot escape; the
 * bytes are then read and written through that descriptor only. The awp
 * home (it holds the identity key) is never served, whatever the root;
 * files with more than one hard link are never written.
 *
 * @module
 */

import type * as nodeFs from "node:fs";
import { decodeBase64, encodeBase64 } from "../wire/base64.ts";
import {
  checkRequestPath,
  FsAccessError,
  fsErrorText,
  normalizedParts,
  type OpenedInRoot,
  openInRoot,
  within,
} from "./open_in_root.ts";

export { FS_READ_RESULT_MIME, FS_WRITE_RESULT_MIME } from "./mimes.ts";

export { FsAccessError };

/** Bytes of content returned inline; more goes out as a blob (PROFILE.md).
 *
 * @example
 * ```ts
 * import { INLINE_LIMIT } from "./fs_access.ts";
 * console.log(INLINE_LIMIT); // 65536
 * ```
 */
export const INLINE_LIMIT = 64 * 1024;

/** A file to send as a blob alongside a result. */
export interface Attachment {
  /** Where the bytes are now. */
  path: string;
  /** The blob's name, as the result refers to it. */
  name: string;
  /** Media type, when known. */
  mime?: string;
  /** Size in bytes. */
  size: number;
  /** True when the file is a temporary copy the sender should remove after use. */
  temporary: boolean;
}

/** What an fs handler produced: the result data part's JSON, plus blobs. */
export interface FsOutcome {
  /** The data of the result part (`{"error": ...}` on failure). */
  result: Record<string, unknown>;
  /** The one-line text summary. */
  summary: string;
  /** Files to attach as blobs. */
  attachments: Attachment[];
}

/** Options of {@linkcode fsRead}. */
export interface FsReadOptions {
  /** Inline limit in bytes (64 KiB). */
  inlineLimit?: number;
  /** Most bytes one read returns, inline or as a blob (50 MiB). */
  maxBytes?: number;
  /** Where range copies for blobs are written (a new temp dir if unset). */
  spoolDir?: string;
  /** Directories never served, whatever the root (the awp home). */
  protect?: readonly string[];
}

/** Options of {@linkcode fsWrite}. */
export interface FsWriteOptions {
  /** Directories never served, whatever the root (the awp home). */
  protect?: readonly string[];
}

/** An opened file that closes itself at the end of a `using` block. */
function disposable(
  opened: OpenedInRoot,
): Disposable & { value: OpenedInRoot } {
  return { value: opened, [Symbol.dispose]: () => opened.close() };
}

const SEP = "/";
const DEFAULT_MAX_BYTES = 50 * 1024 * 1024;

function normalizeAbsolute(path: string): string {
  return SEP + normalizedParts(path).join(SEP);
}

function relativeTo(path: string, root: string): string {
  if (path === root) return ".";
  return path.slice(root === SEP ? 1 : root.length + 1);
}

/**
 * Resolves `path` (relative to `root`, or absolute inside it) to a real
 * absolute path inside the real root, following symlinks of every existing
 * component. Throws {@linkcode FsAccessError} when the path is empty, not a
 * string, contains a NUL, or resolves outside the root; the root itself must
 * exist.
 *
 * @example
 * ```ts
 * import { resolveInRoot } from "./fs_access.ts";
 * const root = await Deno.makeTempDir();
 * console.log(await resolveInRoot(root, "a/b.txt")); // <real root>/a/b.txt
 * await resolveInRoot(root, "../etc/passwd").catch((e) => console.log(e.message));
 * ```
 */
export async function resolveInRoot(
  root: string,
  path: unknown,
): Promise<string> {
  checkRequestPath(path);
  let realRoot: string;
  try {
    realRoot = await Deno.realPath(root);
  } catch (e) {
    throw new FsAccessError(`served root ${root}: ${fsErrorText(e)}`);
  }
  let target: string;
  if (path.startsWith(SEP)) {
    target = normalizeAbsolute(path);
    // Accept the root as configured or as resolved; rebase onto the real one.
    const lexRoot = normalizeAbsolute(
      root.startsWith(SEP) ? root : `${Deno.cwd()}/${root}`,
    );
    if (within(target, realRoot)) {
      // already on the real root
    } else if (within(target, lexRoot)) {
      const rel = relativeTo(target, lexRoot);
      target = rel === "." ? realRoot : normalizeAbsolute(`${realRoot}/${rel}`);
    } else {
      throw new FsAccessError(`${path} is outside the served root`);
    }
  } else {
    target = normalizeAbsolute(`${realRoot}/${path}`);
  }
  if (!within(target, realRoot)) {
    throw new FsAccessError(`${path} is outside the served root`);
  }
  // Resolve the deepest existing ancestor; the missing tail has no links.
  const reversedTail: string[] = [];
  let current = target;
  let resolved: string;
  for (;;) {
    try {
      resolved = await Deno.realPath(current);
      break;
    } catch (e) {
      if (!(e instanceof Deno.errors.NotFound)) {
        throw new FsAccessError(`${path}: ${fsErrorText(e)}`);
      }
      let isLink = false;
      try {
        isLink = (await Deno.lstat(current)).isSymlink;
      } catch { /* does not exist at all */ }
      if (isLink) {
        // A dangling link could point anywhere; creating through it could escape.
        throw new FsAccessError(`${path} is a dangling symlink`);
      }
      const cut = current.lastIndexOf(SEP);
      reversedTail.push(current.slice(cut + 1));
      current = cut === 0 ? SEP : current.slice(0, cut);
    }
  }
  const full = reversedTail.length === 0
    ? resolved
    : (resolved === SEP ? "" : resolved) + SEP +
      reversedTail.reverse().join(SEP);
  if (!within(full, realRoot)) {
    throw new FsAccessError(`${path} is outside the served root`);
  }
  return full;
}

/** `ls -l` style mode text, like "-rw-r--r--" or "drwxr-xr-x". */
function modeText(info: nodeFs.Stats): string {
  const kind = info.isDirectory() ? "d" : "-";
  const mode = info.mode ?? 0;
  let text = kind;
  for (const shift of [6, 3, 0]) {
    const bits = (mode >> shift) & 7;
    text += (bits & 4 ? "r" : "-") + (bits & 2 ? "w" : "-") +
      (bits & 1 ? "x" : "-");
  }
  return text;
}

function failure(cap: string, path: unknown, message: string): FsOutcome {
  return {
    result: { error: message },
    summary: `${cap} ${
      typeof path === "string" ? path : "?"
    } failed: ${message}`,
    attachments: [],
  };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

function nonNegativeInt(value: unknown, field: string): number {
  if (value === undefined || value === null) return 0;
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 0) {
    throw new FsAccessError(`${field} must be a non-negative integer`);
  }
  return value;
}

function baseName(path: string): string {
  return path.slice(path.lastIndexOf(SEP) + 1) || "file";
}

async function readRange(
  file: Deno.FsFile,
  offset: number,
  length: number,
): Promise<Uint8Array> {
  const buf = new Uint8Array(length);
  await file.seek(offset, Deno.SeekMode.Start);
  let got = 0;
  while (got < length) {
    const n = await file.read(buf.subarray(got));
    if (n === null) break;
    got += n;
  }
  return buf.subarray(0, got);
}

async function copyRange(
  file: Deno.FsFile,
  offset: number,
  length: number,
  to: string,
): Promise<number> {
  await file.seek(offset, Deno.SeekMode.Start);
  using out = await Deno.open(to, {
    write: true,
    createNew: true,
    mode: 0o600,
  });
  const buf = new Uint8Array(256 * 1024);
  let left = length;
  while (left > 0) {
    const n = await file.read(buf.subarray(0, Math.min(buf.length, left)));
    if (n === null) break;
    let off = 0;
    while (off < n) off += await out.write(buf.subarray(off, n));
    left -= n;
  }
  return length - left;
}

/**
 * Serves an `fs:read` request (`{path, offset?, length?}`) under `root`.
 * A directory gives `{path, dir: true, entries}` (sorted, subdirectories end
 * in `/`). A file gives `path`, `size`, `offset`, `length` and `mode`, plus
 * `encoding` ("utf-8" when the bytes are valid UTF-8, else "base64") and
 * `content` when the range fits the inline limit, or `blob` (the name of an
 * attachment) when it does not. Never throws: failures are `{error}`.
 *
 * @example
 * ```ts
 * import { fsRead } from "./fs_access.ts";
 * const root = await Deno.makeTempDir();
 * await Deno.writeTextFile(`${root}/a.txt`, "hi");
 * const { result } = await fsRead(root, { path: "a.txt" });
 * console.log(result.content); // "hi"
 * ```
 */
export async function fsRead(
  root: string,
  data: unknown,
  options: FsReadOptions = {},
): Promise<FsOutcome> {
  const path = isRecord(data) ? data.path : undefined;
  try {
    if (!isRecord(data)) {
      throw new FsAccessError("request data must be an object");
    }
    const offset = nonNegativeInt(data.offset, "offset");
    const wanted = nonNegativeInt(data.length, "length");
    using opened = disposable(
      await openInRoot(root, data.path, { protect: options.protect }),
    );
    const { info, real } = opened.value;
    if (info.isDirectory()) {
      const entries: string[] = [];
      const dirPath = opened.value.handlePath;
      for await (const e of Deno.readDir(dirPath)) {
        let dir = e.isDirectory;
        if (e.isSymlink) {
          try {
            dir = (await Deno.stat(`${dirPath}/${e.name}`)).isDirectory;
          } catch { /* dangling: list as a file */ }
        }
        entries.push(dir ? `${e.name}/` : e.name);
      }
      entries.sort();
      return {
        result: { path, dir: true, entries, mode: modeText(info) },
        summary: `${path}: ${entries.length} entries`,
        attachments: [],
      };
    }
    const max = options.maxBytes ?? DEFAULT_MAX_BYTES;
    const inline = options.inlineLimit ?? INLINE_LIMIT;
    const start = Math.min(offset, info.size);
    const length = Math.min(wanted > 0 ? wanted : max, max, info.size - start);
    const result: Record<string, unknown> = {
      path,
      size: info.size,
      offset: start,
      length,
      mode: modeText(info),
    };
    // The same open file, never the path again (it may change meanwhile).
    using file = await Deno.open(opened.value.handlePath, { read: true });
    if (length <= inline) {
      const bytes = await readRange(file, start, length);
      result.length = bytes.length;
      try {
        result.content = new TextDecoder("utf-8", { fatal: true }).decode(
          bytes,
        );
        result.encoding = "utf-8";
      } catch {
        result.content = encodeBase64(bytes);
        result.encoding = "base64";
      }
      return {
        result,
        summary: `${path} (${bytes.length} bytes)`,
        attachments: [],
      };
    }
    const name = baseName(real);
    // Always a copy taken through the descriptor: sending the original by
    // path would reopen it, and the path may lead elsewhere by then.
    const dir = options.spoolDir ??
      await Deno.makeTempDir({ prefix: "awp-read-" });
    await Deno.mkdir(dir, { recursive: true });
    const to = await Deno.makeTempFile({
      dir,
      prefix: "read-",
      suffix: `-${name}`,
    });
    await Deno.remove(to);
    const copied = await copyRange(file, start, length, to);
    result.length = copied;
    const attachment = { path: to, name, size: copied, temporary: true };
    result.blob = name;
    return {
      result,
      summary: `${path} (${attachment.size} bytes, attached as ${name})`,
      attachments: [attachment],
    };
  } catch (e) {
    return failure("fs:read", path, fsErrorText(e));
  }
}

/**
 * Serves an `fs:write` request (`{path, content, encoding?, append?,
 * mkdir?}`) under `root`: `encoding` is "utf-8" (default) or "base64",
 * `append` appends instead of replacing, `mkdir` creates missing parent
 * directories (confined like the file). The result is `{path, written}`.
 * Never throws: failures are `{error}`.
 *
 * @example
 * ```ts
 * import { fsWrite } from "./fs_access.ts";
 * const root = await Deno.makeTempDir();
 * const { result } = await fsWrite(root, { path: "n/todo.md", content: "x", mkdir: true });
 * console.log(result.written); // 1
 * ```
 */
export async function fsWrite(
  root: string,
  data: unknown,
  options: FsWriteOptions = {},
): Promise<FsOutcome> {
  const path = isRecord(data) ? data.path : undefined;
  try {
    if (!isRecord(data)) {
      throw new FsAccessError("request data must be an object");
    }
    const { content, encoding = "utf-8", append, mkdir } = data;
    if (typeof content !== "string") {
      throw new FsAccessError("content is required and must be a string");
    }
    let bytes: Uint8Array;
    if (encoding === "utf-8" || encoding === "utf8") {
      bytes = new TextEncoder().encode(content);
    } else if (encoding === "base64") {
      try {
        bytes = decodeBase64(content);
      } catch {
        throw new FsAccessError("content is not valid base64");
      }
    } else {
      throw new FsAccessError(`unknown encoding ${JSON.stringify(encoding)}`);
    }
    using opened = disposable(
      await openInRoot(root, data.path, {
        write: true,
        append: append === true,
        mkdir: mkdir === true,
        protect: options.protect,
      }),
    );
    using file = await Deno.open(opened.value.handlePath, {
      write: true,
      append: append === true,
    });
    let off = 0;
    while (off < bytes.length) off += await file.write(bytes.subarray(off));
    return {
      result: { path, written: bytes.length, append: append === true },
      summary: `wrote ${bytes.length} bytes to ${path}`,
      attachments: [],
    };
  } catch (e) {
    return failure("fs:write", path, fsErrorText(e));
  }
}
