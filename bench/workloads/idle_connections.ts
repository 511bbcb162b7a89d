/**
 * Workload 6: idle connections. A client process opens N connections, each
 * with its own key, to one listening peer (64 handshakes in flight), and
 * holds them. Reports the time to establish them all and the RSS each
 * costs on the listener and on the client (RSS growth / N). Children get
 * their soft fd limit raised to the hard one; a failure (e.g. the limit) is
 * reported with the count reached. The 10,000 set runs only in the first
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

const KIB = 1024;

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
        );
        try {
          await new Promise((r) => setTimeout(r, 500));
          const before = (await listener.memory())?.rssBytes ?? NaN;
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
        } finally {
          await ctx.stop(listener);
        }
      }
      samples.push(sample);
    }
    return { samples, notes: [...new Set(notes)] };
  },
};
