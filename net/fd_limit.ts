/**
 * The process's open-file limit. Deno has no `setrlimit`, so it is called
 * from libc through FFI (Linux and macOS; needs `--allow-ffi`, which `-A`
 * gives). Where that is not possible nothing changes and the limit is only
 * read, from `/proc/self/limits` or not at all.
 *
 * @module
 */

/** Soft and hard limits on open files. */
export interface FdLimit {
  /** The limit in force (Infinity when unlimited). */
  soft: number;
  /** The most the soft limit may be raised to without privileges. */
  hard: number;
}

const RLIMIT_NOFILE: Partial<Record<typeof Deno.build.os, number>> = {
  linux: 7,
  darwin: 8,
};
const LIBC: Partial<Record<typeof Deno.build.os, string>> = {
  linux: "libc.so.6",
  darwin: "libSystem.dylib",
};
/** macOS refuses soft limits above OPEN_MAX with RLIM_INFINITY as hard. */
const DARWIN_OPEN_MAX = 10_240;

function fromProc(): FdLimit | undefined {
  try {
    const line = Deno.readTextFileSync("/proc/self/limits").split("\n")
      .find((l) => l.startsWith("Max open files"));
    const m = line?.match(/Max open files\s+(\S+)\s+(\S+)/);
    if (!m) return undefined;
    const n = (s: string) => s === "unlimited" ? Infinity : Number(s);
    return { soft: n(m[1]), hard: n(m[2]) };
  } catch {
    return undefined;
  }
}

/**
 * Raises the soft open-file limit to the hard one where the platform and
 * permissions allow, and returns the limits in force after (undefined when
 * they cannot be known). Never throws.
 *
 * @example
 * ```ts
 * import { raiseFdLimit } from "./fd_limit.ts";
 * const limit = raiseFdLimit();
 * console.log(limit === undefined || limit.soft <= limit.hard); // true
 * ```
 */
export function raiseFdLimit(): FdLimit | undefined {
  const os = Deno.build.os;
  const resource = RLIMIT_NOFILE[os];
  const libc = LIBC[os];
  if (resource === undefined || libc === undefined) return fromProc();
  // Already at the hard limit (Deno 2 raises it at start on Linux): no FFI,
  // whose first use costs a process ~4 MiB of RSS.
  const now = fromProc();
  if (now !== undefined && now.soft >= now.hard) return now;
  let lib:
    | Deno.DynamicLibrary<{
      getrlimit: { parameters: ["i32", "buffer"]; result: "i32" };
      setrlimit: { parameters: ["i32", "buffer"]; result: "i32" };
    }>
    | undefined;
  try {
    lib = Deno.dlopen(libc, {
      getrlimit: { parameters: ["i32", "buffer"], result: "i32" },
      setrlimit: { parameters: ["i32", "buffer"], result: "i32" },
    });
    const limits = new BigUint64Array(2); // struct rlimit { cur, max }
    if (lib.symbols.getrlimit(resource, limits) !== 0) return fromProc();
    const hard = limits[1];
    let target = hard;
    if (os === "darwin" && target > BigInt(DARWIN_OPEN_MAX)) {
      target = BigInt(DARWIN_OPEN_MAX);
    }
    if (limits[0] < target) {
      const wanted = new BigUint64Array([target, hard]);
      if (lib.symbols.setrlimit(resource, wanted) === 0) limits[0] = target;
    }
    const num = (v: bigint) =>
      v > BigInt(Number.MAX_SAFE_INTEGER) ? Infinity : Number(v);
    return { soft: num(limits[0]), hard: num(hard) };
  } catch {
    return fromProc(); // no FFI permission, or no such library
  } finally {
    try {
      lib?.close();
    } catch { /* closed */ }
  }
}

/**
 * The soft open-file limit as far as it can be read, without changing it.
 *
 * @example
 * ```ts
 * import { softFdLimit } from "./fd_limit.ts";
 * const soft = softFdLimit();
 * console.log(soft === undefined || soft > 0); // true
 * ```
 */
export function softFdLimit(): number | undefined {
  return fromProc()?.soft;
}
