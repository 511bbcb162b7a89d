/**
 * Opening a file inside a served root with no check-then-use window.
 *
 * Deno has no `openat`, but on Linux `/proc/self/fd/N/name` names `name`
 * inside the directory open as descriptor `N`, so the walk below is an
 * `openat` walk: the root is opened once, then every component is opened
 * relative to the directory opened before it, with `O_NOFOLLOW`. A symlink
 * is never followed by the kernel: its target is read, checked to stay in
 * the root, and walked again from the root the same way. Whatever a
 * concurrent process swaps in, the descriptor we end with was reached
 * through directories inside the root. (Without `/proc/self/fd`, e.g. on
 * macOS, the path is resolved first and the final open refuses a symlink
 * and verifies device and inode; a directory swapped above it in between is
 * not caught there.)
 *
 * The node:fs calls are used because they give the real descriptor number
 * and pass `O_NOFOLLOW`/`O_DIRECTORY`/`O_NONBLOCK` through.
 *
 * @module
 */

import type * as NodeFs from "node:fs";
import { errorText } from "../wire/error_text.ts";

// node:fs brings in Deno's Node compatibility layer (~9 MiB of RSS): loaded by
// the first openInRoot, so a peer that serves no files never pays for it.
let nodeFs: typeof NodeFs;
let constants: typeof NodeFs.constants;
let DIR_FLAGS: number;

async function loadNodeFs(): Promise<void> {
  if (nodeFs) return;
  nodeFs = await import("node:fs");
  constants = nodeFs.constants;
  DIR_FLAGS = constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW;
}
const SEP = "/";

/** The longest request path accepted, in UTF-8 bytes (Linux PATH_MAX).
 *
 * @example
 * ```ts
 * import { PATH_MAX } from "./open_in_root.ts";
 * console.log(PATH_MAX); // 4096
 * ```
 */
export const PATH_MAX = 4096;

/** Symlinks followed in one walk before giving up (as the kernel's ELOOP). */
const MAX_LINKS = 40;

/** A request path that is malformed, escapes the root or names a protected file; one line.
 *
 * @example
 * ```ts
 * import { FsAccessError } from "./open_in_root.ts";
 * console.log(new FsAccessError("x").name); // "FsAccessError"
 * ```
 */
export class FsAccessError extends Error {
  /** Makes the error; `message` is one line, safe to send back to the requester. */
  constructor(message: string) {
    super(message);
    this.name = "FsAccessError";
  }
}

/** How {@linkcode openInRoot} opens the final component. */
export interface OpenInRootOptions {
  /** Open for writing, creating the file (mode 0644) when missing. */
  write?: boolean;
  /** With `write`: append instead of truncating. */
  append?: boolean;
  /** With `write`: create missing parent directories (inside the root). */
  mkdir?: boolean;
  /**
   * Directories never served, whatever the root (the awp home: it holds
   * the identity key). A path inside one, or a hard link to a file directly
   * in one, is refused.
   */
  protect?: readonly string[];
}

/** An open file or directory inside the root. Close it with `close()`. */
export interface OpenedInRoot {
  /** The OS descriptor (node:fs calls take it). */
  fd: number;
  /** The real path it was reached by (no symlinks). */
  real: string;
  /** `fstat` of the descriptor. */
  info: NodeFs.Stats;
  /** A path that names this very descriptor (`/proc/self/fd/N` on Linux). */
  handlePath: string;
  /** Closes the descriptor (idempotent). */
  close(): void;
}

let procFd: boolean | undefined;
/** True where `/proc/self/fd/N/name` resolves relative to descriptor N. */
function hasProcFd(): boolean {
  if (procFd !== undefined) return procFd;
  try {
    // Tests check the fallback (macOS and others) on Linux with this.
    if (Deno.env.get("AWP_FS_NO_PROCFD") === "1") return procFd = false;
  } catch { /* no env permission */ }
  try {
    const fd = nodeFs.openSync(SEP, constants.O_RDONLY | constants.O_DIRECTORY);
    try {
      nodeFs.statSync(`/proc/self/fd/${fd}/.`);
      procFd = true;
    } finally {
      nodeFs.closeSync(fd);
    }
  } catch {
    procFd = false;
  }
  return procFd;
}

/**
 * Checks a request path's shape: a non-empty string, no NUL, at most
 * {@linkcode PATH_MAX} bytes. Throws {@linkcode FsAccessError}.
 *
 * @example
 * ```ts
 * import { checkRequestPath } from "./open_in_root.ts";
 * checkRequestPath("a/b.txt");
 * try { checkRequestPath("x".repeat(5000)); } catch (e) { console.log((e as Error).message); }
 * ```
 */
export function checkRequestPath(path: unknown): asserts path is string {
  if (typeof path !== "string" || path === "") {
    throw new FsAccessError("path is required and must be a string");
  }
  // A string of n UTF-16 units has at least n and at most 3n UTF-8 bytes.
  if (
    path.length > PATH_MAX ||
    (path.length * 3 > PATH_MAX &&
      new TextEncoder().encode(path).length > PATH_MAX)
  ) {
    throw new FsAccessError(
      `path is longer than ${PATH_MAX} bytes (PATH_MAX)`,
    );
  }
  if (path.includes("\0")) throw new FsAccessError("path contains a NUL byte");
}

/** The components of an absolute path after removing "." and "..". */
export function normalizedParts(path: string): string[] {
  const out: string[] = [];
  for (const seg of path.split(SEP)) {
    if (seg === "" || seg === ".") continue;
    if (seg === "..") out.pop();
    else out.push(seg);
  }
  return out;
}

/** True when `path` is `root` or below it (both normalized, absolute). */
export function within(path: string, root: string): boolean {
  return path === root || path.startsWith(root === SEP ? SEP : root + SEP);
}

function join(dir: string, name: string): string {
  return dir === SEP ? SEP + name : `${dir}${SEP}${name}`;
}

/** "no such file or directory" and friends, from a node:fs or Deno error. */
export function fsErrorText(e: unknown): string {
  if (e instanceof FsAccessError) return e.message;
  const code = (e as { code?: string } | null)?.code;
  switch (code) {
    case "ENOENT":
      return "no such file or directory";
    case "EACCES":
    case "EPERM":
      return "permission denied";
    case "EEXIST":
      return "already exists";
    case "ENOTDIR":
      return "not a directory";
    case "EISDIR":
      return "is a directory";
    case "ELOOP":
      return "too many levels of symbolic links";
    case "ENAMETOOLONG":
      return "file name too long";
  }
  if (e instanceof Deno.errors.NotFound) return "no such file or directory";
  if (e instanceof Deno.errors.PermissionDenied) return "permission denied";
  if (e instanceof Deno.errors.AlreadyExists) return "already exists";
  return errorText(e);
}

/**
 * The real absolute form of each protected directory that exists, and the
 * dev:ino of the files directly in it (a hard link elsewhere shares them).
 */
function protectedSet(
  protect: readonly string[],
): { dirs: string[]; inodes: Set<string> | undefined } {
  const dirs: string[] = [];
  for (const p of protect) {
    try {
      dirs.push(Deno.realPathSync(p));
    } catch { /* not there: nothing to protect */ }
  }
  return { dirs, inodes: undefined };
}

function inodesIn(dirs: readonly string[]): Set<string> {
  const out = new Set<string>();
  for (const dir of dirs) {
    try {
      for (const e of Deno.readDirSync(dir)) {
        if (!e.isFile) continue;
        try {
          const s = nodeFs.lstatSync(join(dir, e.name));
          out.add(`${s.dev}:${s.ino}`);
        } catch { /* gone meanwhile */ }
      }
    } catch { /* unreadable */ }
  }
  return out;
}

/**
 * The real root, and the path's components relative to it (lexically
 * normalized; an absolute path must lie inside the root as configured or
 * as resolved).
 */
function rootAndParts(
  root: string,
  path: string,
): { realRoot: string; parts: string[] } {
  let realRoot: string;
  try {
    realRoot = Deno.realPathSync(root);
  } catch (e) {
    throw new FsAccessError(`served root ${root}: ${fsErrorText(e)}`);
  }
  const rootParts = normalizedParts(realRoot);
  let target: string[];
  if (path.startsWith(SEP)) {
    const abs = normalizedParts(path);
    const lexRoot = normalizedParts(
      root.startsWith(SEP) ? root : `${Deno.cwd()}/${root}`,
    );
    const base = startsWithParts(abs, rootParts)
      ? rootParts
      : startsWithParts(abs, lexRoot)
      ? lexRoot
      : undefined;
    if (base === undefined) {
      throw new FsAccessError(`${path} is outside the served root`);
    }
    target = abs.slice(base.length);
  } else {
    const abs = normalizedParts(`${realRoot}/${path}`);
    if (!startsWithParts(abs, rootParts)) {
      throw new FsAccessError(`${path} is outside the served root`);
    }
    target = abs.slice(rootParts.length);
  }
  return { realRoot, parts: target };
}

function startsWithParts(path: string[], prefix: string[]): boolean {
  if (path.length < prefix.length) return false;
  for (let i = 0; i < prefix.length; i++) {
    if (path[i] !== prefix[i]) return false;
  }
  return true;
}

/**
 * Opens `path` (relative to `root`, or absolute inside it) without ever
 * letting the kernel follow a symlink: see the module doc. Symlinks that
 * stay inside the root are followed by the walk itself; one that leaves
 * it, a path into a protected directory, a hard link to a protected file,
 * a write to a file with more than one link, or anything but a regular file
 * or a directory throws {@linkcode FsAccessError}. OS errors (missing file,
 * permission) are thrown as they are; {@linkcode fsErrorText} words them.
 *
 * @example
 * ```ts
 * import { openInRoot } from "./open_in_root.ts";
 * const root = await Deno.makeTempDir();
 * await Deno.writeTextFile(`${root}/a.txt`, "hi");
 * const f = await openInRoot(root, "a.txt");
 * console.log(f.info.size); // 2
 * f.close();
 * ```
 */
export async function openInRoot(
  root: string,
  path: unknown,
  options: OpenInRootOptions = {},
): Promise<OpenedInRoot> {
  checkRequestPath(path);
  await loadNodeFs();
  const { realRoot, parts } = rootAndParts(root, path);
  const guard = protectedSet(options.protect ?? []);
  const refuseProtected = (real: string) => {
    for (const dir of guard.dirs) {
      if (within(real, dir)) {
        throw new FsAccessError(
          `${path} is inside the awp home, which is never served`,
        );
      }
    }
  };
  for (const dir of guard.dirs) {
    if (within(realRoot, dir)) {
      throw new FsAccessError(
        "the served root is inside the awp home, which is never served",
      );
    }
  }
  const fd = hasProcFd()
    ? walk(realRoot, parts, String(path), options, refuseProtected)
    : openResolved(realRoot, parts, String(path), options, refuseProtected);
  let closed = false;
  const close = () => {
    if (closed) return;
    closed = true;
    try {
      nodeFs.closeSync(fd.fd);
    } catch { /* already closed */ }
  };
  try {
    const info = nodeFs.fstatSync(fd.fd);
    if (!info.isFile() && !info.isDirectory()) {
      throw new FsAccessError(`${path} is not a regular file`);
    }
    if (info.isFile() && info.nlink > 1) {
      if (options.write) {
        // Another name, maybe outside the root, shares these bytes.
        throw new FsAccessError(
          `${path} has ${info.nlink} hard links; refusing to write through it`,
        );
      }
      guard.inodes ??= inodesIn(guard.dirs);
      if (guard.inodes.has(`${info.dev}:${info.ino}`)) {
        throw new FsAccessError(
          `${path} is a link to a file of the awp home, which is never served`,
        );
      }
    }
    if (options.write && !options.append && info.isFile()) {
      nodeFs.ftruncateSync(fd.fd, 0);
    }
    return {
      fd: fd.fd,
      real: fd.real,
      info,
      handlePath: hasProcFd() ? `/proc/self/fd/${fd.fd}` : fd.real,
      close,
    };
  } catch (e) {
    close();
    throw e;
  }
}

function finalFlags(options: OpenInRootOptions): number {
  // O_NONBLOCK: opening a FIFO must not hang the request.
  const base = constants.O_NOFOLLOW | constants.O_NONBLOCK;
  if (!options.write) return base | constants.O_RDONLY;
  return base | constants.O_WRONLY | constants.O_CREAT |
    (options.append ? constants.O_APPEND : 0);
}

/**
 * The components (relative to the root) a symlink at `at`, found in the
 * real directory `dirPath`, leads to, followed by `rest`. Throws when it
 * leaves the root or when `links` passes the kernel's limit.
 */
function followLink(
  at: string,
  dirPath: string,
  rootParts: string[],
  rest: string[],
  links: number,
  path: string,
): string[] {
  if (links > MAX_LINKS) {
    throw new FsAccessError(`${path}: too many levels of symbolic links`);
  }
  const target = nodeFs.readlinkSync(at);
  const abs = normalizedParts(
    target.startsWith(SEP) ? target : `${dirPath}/${target}`,
  );
  if (!startsWithParts(abs, rootParts)) {
    throw new FsAccessError(`${path} is outside the served root`);
  }
  return [...abs.slice(rootParts.length), ...rest];
}

function isSymlinkAt(at: string): boolean {
  try {
    return nodeFs.lstatSync(at).isSymbolicLink();
  } catch {
    return false;
  }
}

/** The openat walk (Linux). */
function walk(
  realRoot: string,
  initial: string[],
  path: string,
  options: OpenInRootOptions,
  refuseProtected: (real: string) => void,
): { fd: number; real: string } {
  const rootParts = normalizedParts(realRoot);
  let parts = initial;
  let links = 0;
  let dirFd = nodeFs.openSync(realRoot, DIR_FLAGS);
  let dirPath = realRoot;
  let i = 0;
  try {
    refuseProtected(realRoot);
    if (parts.length === 0) {
      // The root itself (a directory): hand over the descriptor we hold.
      const fd = dirFd;
      dirFd = -1;
      if (options.write) {
        nodeFs.closeSync(fd);
        throw new FsAccessError(`${path} is a directory`);
      }
      return { fd, real: realRoot };
    }
    while (i < parts.length) {
      const name = parts[i];
      const last = i === parts.length - 1;
      const at = `/proc/self/fd/${dirFd}/${name}`;
      const real = join(dirPath, name);
      let fd: number;
      try {
        fd = last
          ? nodeFs.openSync(at, finalFlags(options), 0o644)
          : nodeFs.openSync(at, DIR_FLAGS);
      } catch (e) {
        const code = (e as { code?: string }).code;
        if ((code === "ELOOP" || code === "ENOTDIR") && isSymlinkAt(at)) {
          // Walk again from the root: the link's target, then the rest.
          parts = followLink(
            at,
            dirPath,
            rootParts,
            parts.slice(i + 1),
            ++links,
            path,
          );
          nodeFs.closeSync(dirFd);
          dirFd = -1;
          dirFd = nodeFs.openSync(realRoot, DIR_FLAGS);
          dirPath = realRoot;
          i = 0;
          if (parts.length === 0) {
            if (options.write) {
              throw new FsAccessError(`${path} is a directory`);
            }
            const fd = dirFd;
            dirFd = -1;
            return { fd, real: realRoot };
          }
          continue;
        }
        if (code === "ENOENT" && !last && options.write && options.mkdir) {
          refuseProtected(real);
          try {
            nodeFs.mkdirSync(at, 0o755);
          } catch (m) {
            if ((m as { code?: string }).code !== "EEXIST") throw m;
          }
          continue; // open what is there now, the same way
        }
        throw e;
      }
      try {
        refuseProtected(real);
      } catch (e) {
        nodeFs.closeSync(fd);
        throw e;
      }
      if (last) return { fd, real };
      nodeFs.closeSync(dirFd);
      dirFd = fd;
      dirPath = real;
      i++;
    }
    throw new FsAccessError(`${path}: nothing to open`);
  } finally {
    if (dirFd >= 0) {
      try {
        nodeFs.closeSync(dirFd);
      } catch { /* closed */ }
    }
  }
}

/** Without /proc/self/fd: resolve, then open the final name with O_NOFOLLOW and verify it. */
function openResolved(
  realRoot: string,
  parts: string[],
  path: string,
  options: OpenInRootOptions,
  refuseProtected: (real: string) => void,
): { fd: number; real: string } {
  let real = realRoot;
  let links = 0;
  const rootParts = normalizedParts(realRoot);
  let todo = parts;
  while (todo.length > 0) {
    const [name, ...rest] = todo;
    const next = join(real, name);
    let isLink = false;
    try {
      isLink = nodeFs.lstatSync(next).isSymbolicLink();
    } catch (e) {
      if ((e as { code?: string }).code !== "ENOENT") throw e;
      if (rest.length > 0 && options.write && options.mkdir) {
        nodeFs.mkdirSync(next, 0o755);
      }
    }
    if (isLink) {
      todo = followLink(next, real, rootParts, rest, ++links, path);
      real = realRoot;
      continue;
    }
    real = next;
    todo = rest;
  }
  refuseProtected(real);
  const before = nodeFs.lstatSync(real, { throwIfNoEntry: false });
  const fd = nodeFs.openSync(real, finalFlags(options), 0o644);
  const after = nodeFs.fstatSync(fd);
  if (before && (before.dev !== after.dev || before.ino !== after.ino)) {
    nodeFs.closeSync(fd);
    throw new FsAccessError(`${path} changed while it was opened`);
  }
  return { fd, real };
}
