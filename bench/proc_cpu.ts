/**
 * {@link processCpuMs}: the CPU time a process has used so far (user and
 * system, all threads), from `/proc/PID/stat`, for per-operation CPU
 * figures that load on a shared machine disturbs less than wall time.
 *
 * @module
 */

/** Linux reports CPU time in ticks of 10 ms (`USER_HZ` = 100). */
const MS_PER_TICK = 10;

/**
 * CPU time used by process `pid` so far, in ms (10 ms resolution); NaN where
 * `/proc` cannot tell.
 *
 * @example
 * ```ts
 * import { processCpuMs } from "./proc_cpu.ts";
 * console.log(await processCpuMs(Deno.pid) >= 0);
 * ```
 */
export async function processCpuMs(pid: number): Promise<number> {
  try {
    const stat = await Deno.readTextFile(`/proc/${pid}/stat`);
    // After "pid (name) ": utime and stime are fields 14 and 15 of stat.
    const fields = stat.slice(stat.lastIndexOf(") ") + 2).split(" ");
    return (Number(fields[11]) + Number(fields[12])) * MS_PER_TICK;
  } catch {
    return NaN;
  }
}
