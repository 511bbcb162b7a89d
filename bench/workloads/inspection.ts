/**
 * Workload 8: inspection overhead. The same msgs/s workload with xstate
 * inspection on and off. The driver has no inspect flag (Peer.open's
 * `inspect` is not on its command line), so this runs one level down:
 * bench/conn_client.ts floods a listening peer over one Connection whose
 * actor is created with or without an InspectionHub observer; timed until
 * every msg is acked.
 *
 * @example
 * ```ts ignore
 * import { inspectionWorkload } from "./inspection.ts";
 * console.log(inspectionWorkload.name); // inspect
 * ```
 *
 * @module
 */

import type { BenchContext, Sample, Workload } from "../bench_context.ts";
import { isEvent } from "../bench_context.ts";

async function flood(
  ctx: BenchContext,
  addr: string,
  n: number,
  inspect: boolean,
): Promise<number> {
  const client = ctx.spawnScript("conn_client", "bench/conn_client.ts", [
    "--addr",
    addr,
    "--mode",
    "flood",
    "--count",
    String(n),
    ...(inspect ? ["--inspect"] : []),
  ]);
  try {
    const ev = await client.waitFor(isEvent("flood"), { timeoutMs: 180_000 });
    return n / (Number(ev.ms) / 1000);
  } finally {
    await ctx.stop(client);
  }
}

/** Workload 8. */
export const inspectionWorkload: Workload = {
  name: "inspect",
  title: "inspection overhead: msgs/s over one Connection, inspect off vs on",
  units: { off_msgs_per_s: "msg/s", on_msgs_per_s: "msg/s", overhead_pct: "%" },
  params: (ctx) => ({
    messages: ctx.quick ? 200 : 2_000,
    threads: 1,
    level: "Connection",
  }),
  async run(ctx) {
    const n = ctx.quick ? 200 : 2_000;
    const { proc: listener, addr } = await ctx.listener(
      "listener",
      "tcp:127.0.0.1:0",
    );
    const samples: Sample[] = [];
    try {
      await flood(ctx, addr, Math.min(n, 200), false);
      for (let run = 0; run < ctx.runs; run++) {
        // Alternate the order so drift does not favour one side.
        const first = run % 2 === 0;
        const a = await flood(ctx, addr, n, !first);
        const b = await flood(ctx, addr, n, first);
        const off = first ? a : b;
        const on = first ? b : a;
        samples.push({
          off_msgs_per_s: off,
          on_msgs_per_s: on,
          overhead_pct: (off / on - 1) * 100,
        });
        ctx.log(
          `  run ${run + 1}: off ${off.toFixed(0)}, on ${on.toFixed(0)} msg/s`,
        );
      }
    } finally {
      await ctx.stop(listener);
    }
    return {
      samples,
      notes: [
        "measured on a bare Connection (client side inspected, as Peer.open({ inspect }) does for each actor) against a listening driver",
      ],
    };
  },
};
