/**
 * Workload: the WebSocket binding against TCP. In each run, a fresh pair of
 * peer processes over `ws://127.0.0.1:0/awp` and another over
 * `tcp:127.0.0.1:0` each send 2,000 msgs of 100 bytes over 10 threads to
 * durable ack, then a 20 MiB random file until complete and verified, and
 * the receiver's peak RSS (`VmHWM`, fresh processes) is read. The
 * ratios put the two side by side under the same load (goal: ws within 30%
 * of TCP, i.e. a ratio of at least 70%).
 *
 * @example
 * ```ts ignore
 * import { websocketWorkload } from "./websocket.ts";
 * console.log(websocketWorkload.name); // websocket
 * ```
 *
 * @module
 */

import type { BenchContext, Sample, Workload } from "../bench_context.ts";
import { randomFile, transfer } from "./blob.ts";
import { sendAndAwaitAcks } from "./throughput.ts";

const MIB = 1024 * 1024;

/** msgs/s and blob MiB/s of one fresh pair over `addr`. */
async function measure(
  ctx: BenchContext,
  addr: string,
  file: { path: string; size: number; sha: string },
  tag: string,
): Promise<{ msgs: number; mib: number; rss: number }> {
  const { sender, receiver } = await ctx.pair(addr, [
    "--max-blob",
    String(64 * MIB),
  ]);
  try {
    const n = ctx.quick ? 200 : 2_000;
    await sendAndAwaitAcks(sender, Math.min(n, 200), 1, `${tag}-warm`);
    const ms = await sendAndAwaitAcks(sender, n, 10, tag);
    const blobMs = await transfer(
      sender,
      receiver,
      file.path,
      file.size,
      file.sha,
    );
    const rss = ((await receiver.memory())?.hwmBytes ?? NaN) / MIB;
    return {
      msgs: n / (ms / 1000),
      mib: file.size / MIB / (blobMs / 1000),
      rss,
    };
  } finally {
    await ctx.stop(sender);
    await ctx.stop(receiver);
  }
}

/** The ws row: msgs/s and blob MiB/s over ws:, with TCP alongside. */
export const websocketWorkload: Workload = {
  name: "websocket",
  title: "ws: binding vs TCP: msgs/s to durable ack (10 threads), blob MiB/s",
  units: {
    ws_msgs_per_s: "msg/s",
    tcp_msgs_per_s: "msg/s",
    ws_blob_mib_per_s: "MiB/s",
    tcp_blob_mib_per_s: "MiB/s",
    msgs_ws_over_tcp_pct: "%",
    blob_ws_over_tcp_pct: "%",
    ws_receiver_peak_rss_mib: "MiB",
    tcp_receiver_peak_rss_mib: "MiB",
  },
  params: (ctx) => ({
    messages: ctx.quick ? 200 : 2_000,
    bytes: 100,
    threads: 10,
    blobBytes: (ctx.quick ? 2 : 20) * MIB,
  }),
  async run(ctx: BenchContext) {
    const size = (ctx.quick ? 2 : 20) * MIB;
    const path = `${await ctx.dir("ws-blob")}/blob.bin`;
    const file = { path, size, sha: await randomFile(path, size) };
    const samples: Sample[] = [];
    for (let run = 0; run < ctx.runs; run++) {
      // Alternate which goes first, so a drift in load favours neither.
      const wsRun = () =>
        measure(ctx, "ws://127.0.0.1:0/awp", file, `ws${run}`);
      const tcpRun = () => measure(ctx, "tcp:127.0.0.1:0", file, `tcp${run}`);
      let ws, tcp;
      if (run % 2 === 0) {
        ws = await wsRun();
        tcp = await tcpRun();
      } else {
        tcp = await tcpRun();
        ws = await wsRun();
      }
      samples.push({
        ws_msgs_per_s: ws.msgs,
        tcp_msgs_per_s: tcp.msgs,
        ws_blob_mib_per_s: ws.mib,
        tcp_blob_mib_per_s: tcp.mib,
        msgs_ws_over_tcp_pct: 100 * ws.msgs / tcp.msgs,
        blob_ws_over_tcp_pct: 100 * ws.mib / tcp.mib,
        ws_receiver_peak_rss_mib: ws.rss,
        tcp_receiver_peak_rss_mib: tcp.rss,
      });
      ctx.log(
        `  run ${run + 1}: ws ${ws.msgs.toFixed(0)} msg/s, ${
          ws.mib.toFixed(1)
        } MiB/s; tcp ${tcp.msgs.toFixed(0)} msg/s, ${tcp.mib.toFixed(1)} MiB/s`,
      );
    }
    return { samples };
  },
};
