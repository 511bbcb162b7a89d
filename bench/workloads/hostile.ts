/**
 * Workload `hostile` (issue 24): what a remote can make a peer hold, at
 * sizes too big for CI (tests/system/hostile_bounds_test.ts runs small ones).
 *
 * - `flood`: 1,000 msgs of 900 KiB (each line just under the 1 MiB limit)
 *   written as fast as the socket takes them by our hostile client
 *   (tests/helpers/hostile_client.ts) to a serving peer
 *   (tests/fixtures/serve_peer.ts) over a Unix socket, until the last ack;
 *   the peer's peak RSS over its idle RSS, and the worst msg → ack time of
 *   a well-behaved client on its own connection meanwhile.
 * - `cutoff`: a client that sends 100-byte msgs and never reads, against
 *   the default 8 MiB unsent-bytes bound: time until the peer cuts it off
 *   and the peer's peak RSS over idle.
 * - `absent`: 100,000 msgs queued by a driver to a peer that is down
 *   (killed with SIGKILL), in batches of 1,000 each queued before the next:
 *   time to queue, the sender's RSS over idle once
 *   queued (the outbox is in KV) and its peak until then, and from the
 *   receiver's restart until every msg is acked (the replay reads the
 *   outbox in pages); the sender's peak RSS over idle.
 *
 * @example
 * ```ts ignore
 * import { hostileWorkload } from "./hostile.ts";
 * console.log(hostileWorkload.name); // hostile
 * ```
 *
 * @module
 */

import type { BenchContext, Sample, Workload } from "../bench_context.ts";
import { isEvent } from "../bench_context.ts";
import type { JsonProcess, ProcEvent } from "../json_process.ts";
import { HostileClient } from "../../tests/helpers/hostile_client.ts";
import { absentReceiver } from "./absent_receiver.ts";
import { TEXT_100 } from "./throughput.ts";

const MiB = 1024 * 1024;

function sizes(ctx: BenchContext) {
  return ctx.quick
    ? { lines: 50, absent: 2_000 }
    : { lines: 1_000, absent: 100_000 };
}

async function server(
  ctx: BenchContext,
  label: string,
): Promise<{ proc: JsonProcess; addr: string; idle: number }> {
  const home = await ctx.dir(label);
  const proc = ctx.spawnScript(label, "tests/fixtures/serve_peer.ts", [
    "--home",
    home,
    "--listen",
    `unix:${home}/sock`,
  ]);
  const ready = await proc.waitFor(isEvent("ready"), { timeoutMs: 30_000 });
  const idle = (await proc.memory())?.rssBytes ?? 0;
  return { proc, addr: String(ready.addr), idle };
}

async function peakOver(proc: JsonProcess, idle: number): Promise<number> {
  return (((await proc.memory())?.hwmBytes ?? 0) - idle) / MiB;
}

/** Counts acks on `c` until `n`; resolves with performance.now() then. */
async function acks(c: HostileClient, n: number): Promise<number> {
  let got = 0;
  while (got < n) {
    const line = await c.read();
    if (line.t === "ack") got++;
  }
  return performance.now();
}

async function flood(ctx: BenchContext, lines: number): Promise<Sample> {
  const s = await server(ctx, "flood");
  try {
    const c = await HostileClient.connect(s.addr);
    const bystander = await HostileClient.connect(s.addr);
    const text = "y".repeat(900 * 1024);
    const t0 = performance.now();
    const done = acks(c, lines);
    let flooding = true;
    let worst = 0;
    const probe = (async () => {
      while (flooding) {
        const start = performance.now();
        const id = await bystander.send({
          t: "msg",
          th: "probe",
          parts: [{ k: "text", text: "ping" }],
        });
        await bystander.readUntil((l) => l.t === "ack" && l.re === id);
        worst = Math.max(worst, performance.now() - start);
        await new Promise((r) => setTimeout(r, 100));
      }
    })();
    for (let i = 0; i < lines; i++) {
      await c.send({ t: "msg", th: `f${i % 4}`, parts: [{ k: "text", text }] });
    }
    const end = await done;
    flooding = false;
    await probe;
    c.close();
    bystander.close();
    return {
      flood_s: (end - t0) / 1000,
      flood_peak_mib: await peakOver(s.proc, s.idle),
      flood_bystander_ms: worst,
    };
  } finally {
    await ctx.stop(s.proc);
  }
}

async function cutoff(ctx: BenchContext): Promise<Sample> {
  const s = await server(ctx, "cutoff");
  try {
    const c = await HostileClient.connect(s.addr);
    const t0 = performance.now();
    const cut = s.proc.waitFor(isEvent("disconnected"), {
      timeoutMs: 300_000,
    });
    let over = false;
    void cut.then(() => over = true, () => {});
    try {
      for (let i = 0; !over && i < 2_000_000; i++) {
        await c.send({
          t: "msg",
          th: `c${i % 8}`,
          parts: [{ k: "text", text: TEXT_100 }],
        });
      }
    } catch { /* closed on us */ }
    const gone = await cut;
    c.close();
    if (!/not reading/.test(String(gone.reason))) {
      throw new Error(`cut off for another reason: ${gone.reason}`);
    }
    return {
      cutoff_s: (gone.at - t0) / 1000,
      cutoff_peak_mib: await peakOver(s.proc, s.idle),
    };
  } finally {
    await ctx.stop(s.proc);
  }
}

async function absent(ctx: BenchContext, n: number): Promise<Sample> {
  const { sender: s, receiverKey: rKey, restartReceiver } =
    await absentReceiver(ctx);
  let receiver: JsonProcess | undefined;
  try {
    const idle = (await s.proc.memory())?.rssBytes ?? 0;
    const from = s.proc.mark();
    const t0 = performance.now();
    // In batches of 1,000, each queued before the next: what the sender
    // holds is then the outbox, not 100,000 sends in flight in the driver.
    let sent: ProcEvent[] = [];
    for (let i = 0; i < n; i += 1_000) {
      const batch = Math.min(1_000, n - i);
      await s.proc.send(
        ...Array.from({ length: batch }, (_, k) => ({
          cmd: "send",
          peer: rKey,
          th: `absent-${(i + k) % 10}`,
          text: TEXT_100,
        })),
      );
      sent = await s.proc.waitCount(isEvent("sent"), i + batch, {
        from,
        timeoutMs: 600_000,
      });
    }
    const queued = sent[sent.length - 1].at;
    const queuedRss = (((await s.proc.memory())?.rssBytes ?? 0) - idle) / MiB;
    // The peak so far: what the replay adds is absent_peak_mib minus this.
    const queuedPeak = await peakOver(s.proc, idle);
    const ackFrom = s.proc.mark();
    const acked = s.proc.waitCount(isEvent("acked"), n, {
      from: ackFrom,
      timeoutMs: 600_000,
    });
    const t1 = performance.now();
    receiver = restartReceiver();
    const got = await acked;
    return {
      absent_queue_s: (queued - t0) / 1000,
      absent_queued_rss_mib: queuedRss,
      absent_queued_peak_mib: queuedPeak,
      absent_replay_s: (got[got.length - 1].at - t1) / 1000,
      absent_peak_mib: await peakOver(s.proc, idle),
    };
  } finally {
    if (receiver) await ctx.stop(receiver);
    await ctx.stop(s.proc);
  }
}

/** Workload `hostile`. */
export const hostileWorkload: Workload = {
  name: "hostile",
  title:
    "hostile remotes: 900 KiB line flood, a remote that never reads, msgs queued to an absent peer",
  units: {
    flood_s: "s",
    flood_peak_mib: "MiB",
    flood_bystander_ms: "ms",
    cutoff_s: "s",
    cutoff_peak_mib: "MiB",
    absent_queue_s: "s",
    absent_queued_rss_mib: "MiB",
    absent_queued_peak_mib: "MiB",
    absent_replay_s: "s",
    absent_peak_mib: "MiB",
  },
  params: (ctx) => ({
    floodLines: sizes(ctx).lines,
    floodLineBytes: 900 * 1024,
    unsentBound: 8 * MiB,
    absentMsgs: sizes(ctx).absent,
  }),
  async run(ctx) {
    const { lines, absent: n } = sizes(ctx);
    const samples: Sample[] = [];
    for (let run = 0; run < ctx.runs; run++) {
      const sample = {
        ...await flood(ctx, lines),
        ...await cutoff(ctx),
        ...await absent(ctx, n),
      };
      samples.push(sample);
      ctx.log(
        `  run ${run + 1}: ${
          Object.entries(sample).map(([k, v]) => `${k} ${v.toFixed(1)}`).join(
            ", ",
          )
        }`,
      );
    }
    return { samples, notes: [] };
  },
};
