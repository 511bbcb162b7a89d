/**
 * What machine a benchmark ran on: cores, CPU model, memory, Deno version,
 * fd limit.
 *
 * @example
 * ```ts
 * import { machineInfo } from "./machine_info.ts";
 * console.log((await machineInfo()).nproc > 0);
 * ```
 *
 * @module
 */

/** The machine a run was made on. */
export interface MachineInfo {
  nproc: number;
  cpu: string;
  memoryMiB: number;
  os: string;
  deno: string;
  v8: string;
  /** Soft limit on open files of this process (`ulimit -n`), if known. */
  fdLimit?: number;
}

async function readOr(path: string): Promise<string> {
  try {
    return await Deno.readTextFile(path);
  } catch {
    return "";
  }
}

/**
 * Describes this machine.
 *
 * @example
 * ```ts
 * import { machineInfo } from "./machine_info.ts";
 * console.log((await machineInfo()).deno);
 * ```
 */
export async function machineInfo(): Promise<MachineInfo> {
  const cpuinfo = await readOr("/proc/cpuinfo");
  const meminfo = await readOr("/proc/meminfo");
  const limits = await readOr("/proc/self/limits");
  const cpu = cpuinfo.match(/^model name\s*:\s*(.+)$/m)?.[1]?.trim() ??
    "unknown";
  const memKiB = Number(meminfo.match(/^MemTotal:\s+(\d+)/m)?.[1] ?? 0);
  const fd = limits.match(/^Max open files\s+(\d+)/m)?.[1];
  return {
    nproc: navigator.hardwareConcurrency,
    cpu,
    memoryMiB: Math.round(memKiB / 1024),
    os: `${Deno.build.os} ${Deno.build.arch}`,
    deno: Deno.version.deno,
    v8: Deno.version.v8,
    fdLimit: fd ? Number(fd) : undefined,
  };
}
