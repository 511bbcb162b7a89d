/**
 * Workload: connect and reconnect. A driver in `connect` mode dials a
 * listening driver: timed from its `identity` event to its `connected`
 * event, and from its spawn (what start-up work done before `identity`
 * costs shows there); its idle RSS is read once connected, and the
 * listener's 1 s after it started listening, before anything connects
 * (`idle_alone_rss_mib`: what a user's idle peer costs). Then the listener
 * is killed
 * (SIGKILL) and restarted on the same state and address, `restarts`
 * times: each timed from the new listener's `listening` event, and from
 * its spawn, until the dialer reports `connected` again. The listener is
 * left down a different time each round (0.1 … 2.5 s) so that restarts
 * fall at different points of the dialer's probe schedule.
 *
 * @example
 * ```ts ignore
 * import { reconnectWorkload } from "./reconnect.ts";
 * console.log(reconnectWorkload.name); // reconnect
 * ```
 *
 * @module
 */

import type { Sample, Workload } from "../bench_context.ts";
import { isEvent } from "../bench_context.ts";
import { median } from "../stats.ts";

const DOWN_MS = [100, 400, 700, 1_100, 1_600, 2_500];

/** The reconnect workload. */
export const reconnectWorkload: Workload = {
  name: "reconnect",
  title: "driver connect time; listener killed and restarted → reconnected",
  units: {
    connect_ms: "ms",
    spawn_to_connected_ms: "ms",
    reconnect_median_ms: "ms",
    reconnect_max_ms: "ms",
    restart_to_connected_ms: "ms",
    idle_rss_mib: "MiB",
    idle_alone_rss_mib: "MiB",
  },
  params: (ctx) => ({ restarts: ctx.quick ? 2 : DOWN_MS.length }),
  async run(ctx) {
    const restarts = ctx.quick ? 2 : DOWN_MS.length;
    const samples: Sample[] = [];
    for (let run = 0; run < ctx.runs; run++) {
      const lState = await ctx.dir("listener");
      let l = await ctx.listener("listener", "tcp:127.0.0.1:0", {
        state: lState,
      });
      const addr = l.addr;
      // Nothing connected yet: let start-up garbage settle, then read it.
      await new Promise((r) => setTimeout(r, 1_000));
      const aloneRss = (await l.proc.memory())?.rssBytes ?? NaN;
      const dialerSpawned = performance.now();
      const dialer = ctx.spawnPeer(
        "dialer",
        await ctx.dir("dialer"),
        "connect",
        addr,
      );
      try {
        const identity = await dialer.waitFor(isEvent("identity"), {
          timeoutMs: 30_000,
        });
        const first = await dialer.waitFor(isEvent("connected"), {
          timeoutMs: 30_000,
        });
        const connectMs = first.at - identity.at;
        // Idle: let start-up garbage be collected before reading RSS.
        await new Promise((r) => setTimeout(r, 1_000));
        const idleRss = (await dialer.memory())?.rssBytes ?? NaN;
        const fromListening: number[] = [];
        const fromSpawn: number[] = [];
        for (let i = 0; i < restarts; i++) {
          l.proc.kill("SIGKILL");
          await ctx.stop(l.proc);
          await new Promise((r) => setTimeout(r, DOWN_MS[i]));
          const mark = dialer.mark();
          const spawned = performance.now();
          l = await ctx.listener("listener", addr, { state: lState });
          const listening = performance.now();
          const back = await dialer.waitFor(isEvent("connected"), {
            from: mark,
            timeoutMs: 60_000,
          });
          fromListening.push(Math.max(0, back.at - listening));
          fromSpawn.push(back.at - spawned);
        }
        samples.push({
          connect_ms: connectMs,
          spawn_to_connected_ms: first.at - dialerSpawned,
          reconnect_median_ms: median(fromListening),
          reconnect_max_ms: Math.max(...fromListening),
          restart_to_connected_ms: median(fromSpawn),
          idle_rss_mib: idleRss / 2 ** 20,
          idle_alone_rss_mib: aloneRss / 2 ** 20,
        });
        ctx.log(
          `  run ${run + 1}: connect ${connectMs.toFixed(1)} ms, reconnect ${
            fromListening.map((t) => t.toFixed(0)).join(" ")
          } ms, idle RSS ${(idleRss / 2 ** 20).toFixed(1)} MiB (alone ${
            (aloneRss / 2 ** 20).toFixed(1)
          })`,
        );
      } finally {
        await ctx.stop(dialer);
        await ctx.stop(l.proc);
      }
    }
    return { samples };
  },
};
