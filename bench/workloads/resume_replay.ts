/**
 * Workload 5: resume replay. The receiver dials the sender, then is killed
 * (SIGKILL); the sender queues N msgs for it; the receiver is started again
 * on the same state and dials back; timed from that restart (process spawn)
 * until the sender reports every ack, and from the reconnection.
 *
 * @example
 * ```ts ignore
 * import { resumeWorkload } from "./resume_replay.ts";
 * console.log(resumeWorkload.name); // resume
 * ```
 *
 * @module
 */

import type { Sample, Workload } from "../bench_context.ts";
import { isEvent } from "../bench_context.ts";
import type { JsonProcess } from "../json_process.ts";
import { absentReceiver } from "./absent_receiver.ts";
import { TEXT_100 } from "./throughput.ts";

/** Workload 5. */
export const resumeWorkload: Workload = {
  name: "resume",
  title: "resume replay: msgs queued while the receiver is down",
  units: {
    from_restart_ms: "ms",
    from_connected_ms: "ms",
    msgs_per_s: "msg/s",
  },
  params: (ctx) => ({ messages: ctx.quick ? 100 : 1_000 }),
  async run(ctx) {
    const n = ctx.quick ? 100 : 1_000;
    const samples: Sample[] = [];
    const notes: string[] = [];
    for (let run = 0; run < ctx.runs; run++) {
      const { sender: s, receiverKey: rKey, restartReceiver } =
        await absentReceiver(ctx);
      let receiver: JsonProcess | undefined;
      try {
        const from = s.proc.mark();
        await s.proc.send(
          ...Array.from({ length: n }, (_, i) => ({
            cmd: "send",
            peer: rKey,
            th: `resume${run}-${i % 10}`,
            text: TEXT_100,
          })),
        );
        // Wait until each is queued (the sender reports `sent`); a driver
        // that reports `sent` only once written gets a fixed pause instead.
        try {
          await s.proc.waitCount(isEvent("sent"), n, {
            from,
            timeoutMs: 60_000,
          });
        } catch {
          notes.push("no `sent` event per queued msg: waited 5 s instead");
          await new Promise((r) => setTimeout(r, 5_000));
        }
        const ackFrom = s.proc.mark();
        const acks = s.proc.waitCount(isEvent("acked"), n, {
          from: ackFrom,
          timeoutMs: 180_000,
        });
        const connected = s.proc.waitFor(isEvent("connected"), {
          from: ackFrom,
          timeoutMs: 180_000,
        });
        const t0 = performance.now();
        receiver = restartReceiver();
        const got = await acks;
        const last = got[got.length - 1].at;
        const c = await connected;
        samples.push({
          from_restart_ms: last - t0,
          from_connected_ms: last - c.at,
          msgs_per_s: n / ((last - c.at) / 1000),
        });
        ctx.log(
          `  run ${run + 1}: ${
            samples[run].from_restart_ms.toFixed(0)
          } ms from restart, ${
            samples[run].from_connected_ms.toFixed(0)
          } ms from reconnect`,
        );
      } finally {
        if (receiver) await ctx.stop(receiver);
        await ctx.stop(s.proc);
      }
    }
    return { samples, notes: [...new Set(notes)] };
  },
};
