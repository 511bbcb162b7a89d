/**
 * Reads a process's memory from `/proc/PID/status` (Linux): resident set
 * now (`VmRSS`) and its peak so far (`VmHWM`).
 *
 * @example
 * ```ts
 * import { readMemory } from "./proc_memory.ts";
 * const m = await readMemory(Deno.pid);
 * console.log(m !== undefined && m.hwmBytes >= m.rssBytes);
 * ```
 *
 * @module
 */

/** Memory of one process, in bytes. */
export interface ProcMemory {
  rssBytes: number;
  hwmBytes: number;
}

function field(status: string, name: string): number | undefined {
  const m = status.match(new RegExp(`^${name}:\\s+(\\d+)\\s+kB`, "m"));
  return m ? Number(m[1]) * 1024 : undefined;
}

/**
 * RSS and peak RSS of process `pid`, or undefined when it is gone or this is
 * not Linux.
 *
 * @example
 * ```ts
 * import { readMemory } from "./proc_memory.ts";
 * console.log((await readMemory(Deno.pid))?.rssBytes ?? 0 > 0);
 * ```
 */
export async function readMemory(pid: number): Promise<ProcMemory | undefined> {
  let status: string;
  try {
    status = await Deno.readTextFile(`/proc/${pid}/status`);
  } catch {
    return undefined;
  }
  const rss = field(status, "VmRSS");
  const hwm = field(status, "VmHWM");
  if (rss === undefined || hwm === undefined) return undefined;
  return { rssBytes: rss, hwmBytes: hwm };
}

/**
 * Samples `pid`'s RSS every `intervalMs` until stopped, keeping the highest
 * value seen (a cross-check of `VmHWM`, and usable over a window).
 *
 * @example
 * ```ts
 * import { RssSampler } from "./proc_memory.ts";
 * const s = new RssSampler(Deno.pid, 10);
 * await new Promise((r) => setTimeout(r, 30));
 * console.log(s.stop() > 0);
 * ```
 */
export class RssSampler {
  #peak = 0;
  #timer: ReturnType<typeof setInterval>;

  /** Starts sampling `pid` every `intervalMs`. */
  constructor(pid: number, intervalMs = 20) {
    const tick = async () => {
      const m = await readMemory(pid);
      if (m && m.rssBytes > this.#peak) this.#peak = m.rssBytes;
    };
    void tick();
    this.#timer = setInterval(tick, intervalMs);
  }

  /** Highest RSS seen so far, in bytes. */
  get peak(): number {
    return this.#peak;
  }

  /** Stops sampling and returns the highest RSS seen. */
  stop(): number {
    clearInterval(this.#timer);
    return this.#peak;
  }
}
