/**
 * Workload 6: idle connections. A client process opens N connections, each
 * with its own key, to one listening peer (64 handshakes in flight), and
 * holds them. Reports the time to establish them all and the RSS each
 * costs on the listener and on the client (RSS growth / N), the listener's
 * CPU while they idle (all its threads, GC included, over 60 s from 40 s
 * after the last handshake, past the first round of pings), its RSS and JS
 * heap per connection after a full GC then, and its heap after they all
 * closed (after a GC, over its heap before; the driver's `memory` command).
 * Children get their soft fd limit raised to the hard one; a failure (e.g.
 * the limit) is reported with the count reached. The 10,000 set runs only in the first
 * run (it takes minutes on a 2-core machine).
 *
 * @example
 * ```ts ignore
 * import { idleWorkload } from "./idle_connections.ts";
 * console.log(idleWorkload.name); // idle
 * ```
 *
 * @module
 */

import type { Sample, Workload } from "../bench_context.ts";
import { isEvent } from "../bench_context.ts";
import type { JsonProcess } from "../json_process.ts";

const KIB = 1024;
/** After the last handshake: the first pings (30 s, 36 s accepted) are past. */
const IDLE_SETTLE_MS = 40_000;
/** Two ping periods of 30 s. */
const IDLE_WINDOW_MS = 60_000;

/** The listener's memory after a full GC (the driver's memory command). */
async function memoryAfterGc(
  proc: JsonProcess,
): Promise<{ heapUsed: number; rss: number }> {
  const from = proc.mark();
  await proc.send({ cmd: "memory" });
  const ev = await proc.waitFor(isEvent("memory"), { from, timeoutMs: 30_000 });
  return { heapUsed: Number(ev.heapUsed), rss: Number(ev.rss) };
}

/** The listener's `heapUsed` after a full GC. */
async function heapUsed(proc: JsonProcess): Promise<number> {
  return (await memoryAfterGc(proc)).heapUsed;
}

/** CPU used by process `pid` over `ms`, in % of one core. */
async function cpuPercent(pid: number, ms: number): Promise<number> {
  const ticks = async () => {
    const fields = (await Deno.readTextFile(`/proc/${pid}/stat`))
      .split(") ")[1].split(" ");
    // utime and stime: fields 14 and 15 of stat, 12 and 13 after the name.
    return Number(fields[11]) + Number(fields[12]);
  };
  const t0 = performance.now();
  const c0 = await ticks();
  await new Promise((r) => setTimeout(r, ms));
  const c1 = await ticks();
  // Linux reports 100 ticks a second.
  return (c1 - c0) / 100 / ((performance.now() - t0) / 1000) * 100;
}

/** Workload 6. */
export const idleWorkload: Workload = {
  name: "idle",
  title: "idle connections to one peer: establish time, RSS per connection",
  units: Object.fromEntries(
    [50, 1_000, 10_000].flatMap((n) => [
      [`establish_ms_${n}`, "ms"],
      [`conns_per_s_${n}`, "1/s"],
      [`listener_kib_per_conn_${n}`, "KiB"],
      [`client_kib_per_conn_${n}`, "KiB"],
      [`established_${n}`, "count"],
      [`listener_idle_cpu_pct_${n}`, "%"],
      [`listener_idle_kib_per_conn_${n}`, "KiB"],
      [`listener_gc_kib_per_conn_${n}`, "KiB"],
      [`listener_heap_kib_per_conn_${n}`, "KiB"],
      [`listener_heap_after_close_mib_${n}`, "MiB"],
    ]),
  ),
  params: (ctx) => ({
    connections: ctx.quick ? [50] : [1_000, 10_000],
    concurrency: 64,
  }),
  async run(ctx) {
    const counts = ctx.quick ? [50] : [1_000, 10_000];
    const samples: Sample[] = [];
    const notes: string[] = [];
    for (let run = 0; run < ctx.runs; run++) {
      const sample: Sample = {};
      for (const n of counts) {
        // The 10,000 set takes minutes on a small machine: measured once.
        if (n >= 10_000 && run > 0) continue;
        const { proc: listener, addr } = await ctx.listener(
          "listener",
          "tcp:127.0.0.1:0",
          { denoFlags: ["--v8-flags=--expose-gc"] },
        );
        try {
          await new Promise((r) => setTimeout(r, 500));
          const before = (await listener.memory())?.rssBytes ?? NaN;
          const { heapUsed: heapBefore, rss: gcBefore } = await memoryAfterGc(
            listener,
          );
          const client = ctx.spawnScript(
            "conn_client",
            "bench/conn_client.ts",
            [
              "--addr",
              addr,
              "--mode",
              "idle",
              "--count",
              String(n),
              "--concurrency",
              "64",
            ],
          );
          try {
            const ev = await client.waitFor(isEvent("established"), {
              timeoutMs: 600_000,
            });
            // Let the listener finish its post-handshake bookkeeping.
            await new Promise((r) => setTimeout(r, 1_000));
            const after = (await listener.memory())?.rssBytes ?? NaN;
            const ok = Number(ev.count);
            // Idle: only pings (one per connection every 30 s) are left.
            // Measured past the first ping round (the handshakes' garbage
            // collected by then) over two whole ping periods: a shorter
            // window catches a round of pings, or none, by chance.
            const settle = ctx.quick ? 0 : IDLE_SETTLE_MS;
            await new Promise((r) => setTimeout(r, settle));
            sample[`listener_idle_cpu_pct_${n}`] = await cpuPercent(
              listener.pid,
              ctx.quick ? 2_000 : IDLE_WINDOW_MS,
            );
            // Steady state: the handshakes' garbage collected by now.
            const idle = (await listener.memory())?.rssBytes ?? NaN;
            sample[`listener_idle_kib_per_conn_${n}`] = (idle - before) / ok /
              KIB;
            // The same after a full GC: what the connections hold, and the
            // JS heap part of it.
            const gc = await memoryAfterGc(listener);
            sample[`listener_gc_kib_per_conn_${n}`] = (gc.rss - gcBefore) / ok /
              KIB;
            sample[`listener_heap_kib_per_conn_${n}`] =
              (gc.heapUsed - heapBefore) / ok / KIB;
            if (ev.firstError) {
              notes.push(
                `${n}: ${ok} established, ${ev.failed} failed: ${ev.firstError}`,
              );
            }
            sample[`establish_ms_${n}`] = Number(ev.ms);
            sample[`conns_per_s_${n}`] = ok / (Number(ev.ms) / 1000);
            sample[`listener_kib_per_conn_${n}`] = (after - before) / ok / KIB;
            sample[`client_kib_per_conn_${n}`] =
              (Number(ev.rssAfter) - Number(ev.rssBefore)) / ok / KIB;
            sample[`established_${n}`] = ok;
            ctx.log(
              `  run ${run + 1}, ${n}: ${ok} in ${
                Number(ev.ms).toFixed(0)
              } ms, listener ${
                sample[`listener_kib_per_conn_${n}`].toFixed(1)
              } KiB/conn`,
            );
          } finally {
            await client.send({ cmd: "close" }).catch(() => {});
            await client.waitFor(isEvent("closed"), { timeoutMs: 60_000 })
              .catch(() => {});
            await ctx.stop(client);
          }
          // Everything closed: what the listener still holds, after a GC.
          await new Promise((r) => setTimeout(r, ctx.quick ? 2_000 : 10_000));
          sample[`listener_heap_after_close_mib_${n}`] =
            (await heapUsed(listener) - heapBefore) / 2 ** 20;
        } finally {
          await ctx.stop(listener);
        }
      }
      samples.push(sample);
    }
    return { samples, notes: [...new Set(notes)] };
  },
};
