/**
 * Workload 4: handshakes/s. A client process (bench/conn_client.ts) makes N
 * sequential connections to a listening peer: dial, hello, auth, resume,
 * until the connection is open; each is closed before the next. Also the
 * listening driver's CPU per handshake (its accept, handshake, close and
 * event lines; from `/proc`, 10 ms resolution over the run).
 *
 * @example
 * ```ts ignore
 * import { handshakeWorkload } from "./handshake.ts";
 * console.log(handshakeWorkload.name); // handshake
 * ```
 *
 * @module
 */

import type { Sample, Workload } from "../bench_context.ts";
import { isEvent } from "../bench_context.ts";
import { percentile } from "../stats.ts";
import { processCpuMs } from "../proc_cpu.ts";

/** Workload 4. */
export const handshakeWorkload: Workload = {
  name: "handshake",
  title: "handshakes/s: connect + auth + resume, sequential, TCP",
  units: {
    handshakes_per_s: "1/s",
    p50_ms: "ms",
    p99_ms: "ms",
    listener_cpu_ms_per_handshake: "ms",
  },
  params: (ctx) => ({ connections: ctx.quick ? 10 : 100 }),
  async run(ctx) {
    const n = ctx.quick ? 10 : 100;
    const { proc: listener, addr } = await ctx.listener(
      "listener",
      "tcp:127.0.0.1:0",
    );
    const samples: Sample[] = [];
    try {
      for (let run = 0; run < ctx.runs; run++) {
        const cpuBefore = await processCpuMs(listener.pid);
        const client = ctx.spawnScript("conn_client", "bench/conn_client.ts", [
          "--addr",
          addr,
          "--mode",
          "handshake",
          "--count",
          String(n),
        ]);
        try {
          const ev = await client.waitFor(isEvent("handshakes"), {
            timeoutMs: 120_000,
          });
          const per = ev.samples as number[];
          // n + 1 handshakes: the client's untimed warm-up is one too.
          const cpuMs = await processCpuMs(listener.pid) - cpuBefore;
          samples.push({
            handshakes_per_s: n / (Number(ev.ms) / 1000),
            p50_ms: percentile(per, 50),
            p99_ms: percentile(per, 99),
            listener_cpu_ms_per_handshake: cpuMs / (n + 1),
          });
          ctx.log(
            `  run ${run + 1}: ${
              samples[run].handshakes_per_s.toFixed(0)
            } handshakes/s, listener CPU ${
              (cpuMs / (n + 1)).toFixed(2)
            } ms each`,
          );
        } finally {
          await ctx.stop(client);
        }
      }
    } finally {
      await ctx.stop(listener);
    }
    return { samples };
  },
};
