/**
 * Workload 2: msg → ack latency, p50 and p99 of N sequential sends over TCP
 * (each send waits for the previous ack). Measured at the sender's driver:
 * from writing the command on its stdin to reading the `acked` event on its
 * stdout, so it includes the driver's own stdin/stdout hops.
 *
 * @example
 * ```ts ignore
 * import { latencyWorkload } from "./latency.ts";
 * console.log(latencyWorkload.name); // latency
 * ```
 *
 * @module
 */

import type { Sample, Workload } from "../bench_context.ts";
import { isEvent } from "../bench_context.ts";
import { percentile } from "../stats.ts";
import { TEXT_100 } from "./throughput.ts";

/** Workload 2. */
export const latencyWorkload: Workload = {
  name: "latency",
  title: "msg→ack latency, sequential sends over TCP",
  units: { p50_ms: "ms", p99_ms: "ms" },
  params: (ctx) => ({ sends: ctx.quick ? 20 : 200, bytes: 100 }),
  async run(ctx) {
    const n = ctx.quick ? 20 : 200;
    const { sender, receiver } = await ctx.pair("tcp:127.0.0.1:0");
    const samples: Sample[] = [];
    try {
      for (let run = -1; run < ctx.runs; run++) {
        const lat: number[] = [];
        // Run -1 is a warm-up of 20 sends, not counted.
        for (let i = 0; i < (run < 0 ? 20 : n); i++) {
          const from = sender.mark();
          const ack = sender.waitFor(isEvent("acked"), {
            from,
            timeoutMs: 30_000,
          });
          const t0 = performance.now();
          await sender.send({ cmd: "send", th: `lat${run}`, text: TEXT_100 });
          lat.push((await ack).at - t0);
        }
        if (run < 0) continue;
        samples.push({
          p50_ms: percentile(lat, 50),
          p99_ms: percentile(lat, 99),
        });
        ctx.log(
          `  run ${run + 1}: p50 ${samples[run].p50_ms.toFixed(2)} ms, p99 ${
            samples[run].p99_ms.toFixed(2)
          } ms`,
        );
      }
    } finally {
      await ctx.stop(sender);
      await ctx.stop(receiver);
    }
    return { samples };
  },
};
