/**
 * Workload 1: msgs/s to durable ack. N messages of 100 bytes sent as fast as
 * the sender accepts them (all commands in one write), timed until the
 * sender has reported every ack; in one thread and spread over 10 threads.
 *
 * @example
 * ```ts ignore
 * import { throughputWorkload } from "./throughput.ts";
 * const w = throughputWorkload("unix");
 * console.log(w.name); // throughput_unix
 * ```
 *
 * @module
 */

import type { BenchContext, Sample, Workload } from "../bench_context.ts";
import { isEvent } from "../bench_context.ts";
import type { JsonProcess } from "../json_process.ts";

/** 100 bytes of text. */
export const TEXT_100 = "0123456789".repeat(10);

/**
 * Sends `count` msgs spread over `threads` threads (names made unique with
 * `tag`) and resolves with the ms from the first write to the last ack.
 */
export async function sendAndAwaitAcks(
  sender: JsonProcess,
  count: number,
  threads: number,
  tag: string,
): Promise<number> {
  const from = sender.mark();
  const cmds = Array.from({ length: count }, (_, i) => ({
    cmd: "send",
    th: `${tag}-${i % threads}`,
    text: TEXT_100,
  }));
  const t0 = performance.now();
  const acks = sender.waitCount(isEvent("acked"), count, {
    from,
    timeoutMs: 180_000,
  });
  await sender.send(...cmds);
  const got = await acks;
  return got[got.length - 1].at - t0;
}

async function peakMib(p: JsonProcess): Promise<number> {
  return ((await p.memory())?.hwmBytes ?? NaN) / (1024 * 1024);
}

/** Workload 1 over `tcp` or `unix`. */
export function throughputWorkload(transport: "tcp" | "unix"): Workload {
  const count = (ctx: BenchContext) => ctx.quick ? 200 : 2_000;
  return {
    name: `throughput_${transport}`,
    title: `msgs/s to durable ack over ${
      transport === "tcp" ? "TCP" : "a Unix socket"
    }`,
    units: {
      msgs_per_s_1_thread: "msg/s",
      msgs_per_s_10_threads: "msg/s",
      sender_peak_rss_mib: "MiB",
      receiver_peak_rss_mib: "MiB",
    },
    params: (ctx) => ({ messages: count(ctx), bytes: 100, threads: [1, 10] }),
    async run(ctx) {
      const addr = transport === "tcp"
        ? "tcp:127.0.0.1:0"
        : `unix:${await ctx.dir("sock")}/r.sock`;
      const { sender, receiver } = await ctx.pair(addr);
      const n = count(ctx);
      const samples: Sample[] = [];
      try {
        // One warm-up round (JIT, KV files) that is not counted.
        await sendAndAwaitAcks(sender, Math.min(n, 200), 1, "warm");
        for (let run = 0; run < ctx.runs; run++) {
          const one = await sendAndAwaitAcks(sender, n, 1, `r${run}a`);
          const ten = await sendAndAwaitAcks(sender, n, 10, `r${run}b`);
          samples.push({
            msgs_per_s_1_thread: n / (one / 1000),
            msgs_per_s_10_threads: n / (ten / 1000),
            // VmHWM: each process's peak so far, over this run's two bursts
            // and those before it (issue 16's "peak RSS during the burst").
            sender_peak_rss_mib: await peakMib(sender),
            receiver_peak_rss_mib: await peakMib(receiver),
          });
          ctx.log(
            `  run ${run + 1}: ${
              samples[run].msgs_per_s_1_thread.toFixed(0)
            } / ${samples[run].msgs_per_s_10_threads.toFixed(0)} msg/s`,
          );
        }
      } finally {
        await ctx.stop(sender);
        await ctx.stop(receiver);
      }
      return { samples };
    },
  };
}
