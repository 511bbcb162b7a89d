/**
 * Workload 3: blob transfer. A file of random bytes is sent with the driver's
 * `blob` command, timed until the receiver reports it complete; the bench
 * then checks the received file's sha256 itself. Fresh processes each run,
 * so `VmHWM` (peak RSS) is that transfer's. A second workload sends a
 * larger file and reports each side's peak RSS over its idle RSS (the
 * target: under 64 MiB for a 50 MiB file).
 *
 * @example
 * ```ts ignore
 * import { blobWorkload } from "./blob.ts";
 * console.log(blobWorkload.name); // blob
 * ```
 *
 * @module
 */

import { createHash } from "node:crypto";
import type { BenchContext, Sample, Workload } from "../bench_context.ts";
import type { JsonProcess, ProcEvent } from "../json_process.ts";
import { RssSampler } from "../proc_memory.ts";
import { percentile } from "../stats.ts";

const MIB = 1024 * 1024;
/** Both sides accept blobs this big, so the 50 MiB file is not refused. */
const MAX_BLOB = String(128 * MIB);

/** Writes `bytes` random bytes to `path`; resolves with their sha256 hex. */
export async function randomFile(path: string, bytes: number): Promise<string> {
  const hash = createHash("sha256");
  const file = await Deno.open(path, {
    write: true,
    create: true,
    truncate: true,
  });
  try {
    const piece = new Uint8Array(MIB);
    for (let done = 0; done < bytes; done += piece.length) {
      const n = Math.min(piece.length, bytes - done);
      const view = piece.subarray(0, n);
      for (let at = 0; at < n; at += 65536) {
        crypto.getRandomValues(view.subarray(at, Math.min(n, at + 65536)));
      }
      hash.update(view);
      let written = 0;
      while (written < n) written += await file.write(view.subarray(written));
    }
  } finally {
    file.close();
  }
  return hash.digest("hex");
}

/** The sha256 hex of the file at `path`. */
export async function fileSha256(path: string): Promise<string> {
  const hash = createHash("sha256");
  using file = await Deno.open(path);
  for await (const chunk of file.readable) hash.update(chunk);
  return hash.digest("hex");
}

/** Sends `path` and waits for the receiver's `blob` event; checks it. */
export async function transfer(
  sender: JsonProcess,
  receiver: JsonProcess,
  path: string,
  size: number,
  sha256: string,
): Promise<number> {
  const from = receiver.mark();
  const got = receiver.waitFor(
    (e: ProcEvent) => e.event === "blob" && e.size === size,
    { from, timeoutMs: 300_000 },
  );
  const t0 = performance.now();
  await sender.send({ cmd: "blob", th: "blob", path });
  const ev = await got;
  const ms = ev.at - t0;
  if (typeof ev.path !== "string") {
    throw new Error(`blob event without a path: ${JSON.stringify(ev)}`);
  }
  const actual = await fileSha256(ev.path);
  if (actual !== sha256) {
    throw new Error(`received blob differs: sha256 ${actual}, sent ${sha256}`);
  }
  if (typeof ev.sha256 === "string" && ev.sha256 !== sha256) {
    throw new Error(`receiver reported sha256 ${ev.sha256}, sent ${sha256}`);
  }
  return ms;
}

/** CPU time a process has run so far, in ms: all its threads, and its main one. */
export interface ProcessCpu {
  /** Every thread (the JS thread, V8's helpers, the I/O pool). */
  all: number;
  /**
   * The JS thread alone; the rest is mostly the blocking I/O pool (file
   * writes, fsyncs) and V8's GC helpers.
   */
  main: number;
}

/**
 * CPU time a process has run so far (Linux: the `schedstat` of each task in
 * `/proc/PID/task`); NaN where that is not readable. Less sensitive to other
 * load on a shared machine than wall time.
 */
export async function cpuMs(pid: number): Promise<ProcessCpu> {
  let all = 0;
  let main = NaN;
  try {
    for await (const task of Deno.readDir(`/proc/${pid}/task`)) {
      try {
        const text = await Deno.readTextFile(
          `/proc/${pid}/task/${task.name}/schedstat`,
        );
        const ms = Number(text.split(" ")[0]) / 1e6;
        all += ms;
        if (task.name === String(pid)) main = ms;
      } catch { /* the thread ended meanwhile */ }
    }
  } catch {
    return { all: NaN, main: NaN };
  }
  return { all, main };
}

async function peakOf(p: JsonProcess): Promise<number> {
  return ((await p.memory())?.hwmBytes ?? NaN) / MIB;
}

/** Workload 3: throughput and peak RSS of a 20 MiB blob. */
export const blobWorkload: Workload = blobOver("tcp");

/** Workload 3 over a Unix socket. */
export const blobUnixWorkload: Workload = blobOver("unix");

/** Workload 3 over `tcp` (named `blob`) or `unix` (`blob_unix`). */
function blobOver(transport: "tcp" | "unix"): Workload {
  return {
    name: transport === "tcp" ? "blob" : "blob_unix",
    title:
      `blob throughput (20 MiB, ${transport}) and peak RSS of both processes`,
    units: {
      mib_per_s: "MiB/s",
      ms: "ms",
      sender_peak_rss_mib: "MiB",
      receiver_peak_rss_mib: "MiB",
      sender_cpu_ms: "ms",
      receiver_cpu_ms: "ms",
      sender_main_cpu_ms: "ms",
      receiver_main_cpu_ms: "ms",
    },
    params: (ctx) => ({ bytes: (ctx.quick ? 2 : 20) * MIB, transport }),
    async run(ctx: BenchContext) {
      const size = (ctx.quick ? 2 : 20) * MIB;
      const path = `${await ctx.dir("blob")}/blob.bin`;
      const sha = await randomFile(path, size);
      const samples: Sample[] = [];
      for (let run = 0; run < ctx.runs; run++) {
        const addr = transport === "tcp"
          ? "tcp:127.0.0.1:0"
          : `unix:${await ctx.dir("sock")}/r.sock`;
        const { sender, receiver } = await ctx.pair(addr, [
          "--max-blob",
          MAX_BLOB,
        ]);
        try {
          const cpu0 = [await cpuMs(sender.pid), await cpuMs(receiver.pid)];
          const ms = await transfer(sender, receiver, path, size, sha);
          const cpu1 = [await cpuMs(sender.pid), await cpuMs(receiver.pid)];
          samples.push({
            mib_per_s: size / MIB / (ms / 1000),
            ms,
            sender_peak_rss_mib: await peakOf(sender),
            receiver_peak_rss_mib: await peakOf(receiver),
            // With what follows the event (the msg's ack and its commits)
            // while the bench re-hashes the file.
            sender_cpu_ms: cpu1[0].all - cpu0[0].all,
            receiver_cpu_ms: cpu1[1].all - cpu0[1].all,
            // The JS thread: the receiver's other threads are mostly its
            // file writes, whose cost swings 11–15 or 55–75 ms per 20 MiB
            // on this machine with the kernel's page allocation.
            sender_main_cpu_ms: cpu1[0].main - cpu0[0].main,
            receiver_main_cpu_ms: cpu1[1].main - cpu0[1].main,
          });
          ctx.log(
            `  run ${run + 1}: ${samples[run].mib_per_s.toFixed(1)} MiB/s`,
          );
        } finally {
          await ctx.stop(sender);
          await ctx.stop(receiver);
        }
      }
      return { samples };
    },
  };
}

/** Workload 3b: memory while sending a 50 MiB file, over the idle process. */
export const blobMemoryWorkload: Workload = {
  name: "blob_memory",
  title: "peak RSS over idle while sending a 50 MiB file (target < 64 MiB)",
  units: {
    sender_over_idle_mib: "MiB",
    receiver_over_idle_mib: "MiB",
    sender_idle_mib: "MiB",
    receiver_idle_mib: "MiB",
    ms: "ms",
  },
  params: (ctx) => ({ bytes: (ctx.quick ? 5 : 50) * MIB, limitMiB: 64 }),
  async run(ctx: BenchContext) {
    const size = (ctx.quick ? 5 : 50) * MIB;
    const path = `${await ctx.dir("blob50")}/blob.bin`;
    const sha = await randomFile(path, size);
    const samples: Sample[] = [];
    const notes: string[] = [];
    for (let run = 0; run < ctx.runs; run++) {
      const { sender, receiver } = await ctx.pair("tcp:127.0.0.1:0", [
        "--max-blob",
        MAX_BLOB,
      ]);
      try {
        // Let start-up garbage settle, then take the idle RSS.
        await new Promise((r) => setTimeout(r, 1_000));
        const sIdle = (await sender.memory())?.rssBytes ?? NaN;
        const rIdle = (await receiver.memory())?.rssBytes ?? NaN;
        const sSampler = new RssSampler(sender.pid);
        const rSampler = new RssSampler(receiver.pid);
        const ms = await transfer(sender, receiver, path, size, sha);
        const sPeak = Math.max(
          sSampler.stop(),
          (await sender.memory())?.hwmBytes ?? 0,
        );
        const rPeak = Math.max(
          rSampler.stop(),
          (await receiver.memory())?.hwmBytes ?? 0,
        );
        const s: Sample = {
          sender_over_idle_mib: (sPeak - sIdle) / MIB,
          receiver_over_idle_mib: (rPeak - rIdle) / MIB,
          sender_idle_mib: sIdle / MIB,
          receiver_idle_mib: rIdle / MIB,
          ms,
        };
        samples.push(s);
        ctx.log(
          `  run ${run + 1}: sender +${
            s.sender_over_idle_mib.toFixed(1)
          } MiB, receiver +${s.receiver_over_idle_mib.toFixed(1)} MiB`,
        );
        if (
          !ctx.quick &&
          Math.max(s.sender_over_idle_mib, s.receiver_over_idle_mib) >= 64
        ) {
          notes.push(`run ${run + 1}: over the 64 MiB target`);
        }
      } finally {
        await ctx.stop(sender);
        await ctx.stop(receiver);
      }
    }
    return { samples, notes };
  },
};

/** 1 KiB of text. */
const TEXT_1K = "0123456789abcdef".repeat(64);

/**
 * Small msgs while a 50 MiB blob is in flight on the same connection: once
 * the blob's msg is queued (its chunks going out), 10 sequential 1 KiB msgs
 * in another thread, each timed from its command to its `acked`. Only the
 * ones acked before the receiver had the whole blob count.
 */
export const blobInterleaveWorkload: Workload = {
  name: "blob_interleave",
  title: "1 KiB msg send→ack while a 50 MiB blob is in flight",
  units: { p50_ms: "ms", max_ms: "ms", during_blob: "msgs" },
  params: (ctx) => ({ bytes: (ctx.quick ? 5 : 50) * MIB, msgs: 10 }),
  async run(ctx: BenchContext) {
    const size = (ctx.quick ? 5 : 50) * MIB;
    const path = `${await ctx.dir("blobmix")}/blob.bin`;
    await randomFile(path, size);
    const samples: Sample[] = [];
    const notes: string[] = [];
    for (let run = 0; run < ctx.runs; run++) {
      const { sender, receiver } = await ctx.pair("tcp:127.0.0.1:0", [
        "--max-blob",
        MAX_BLOB,
      ]);
      try {
        const rFrom = receiver.mark();
        let blobDone = false;
        const done = receiver.waitFor(
          (e) => e.event === "blob" && e.size === size,
          { from: rFrom, timeoutMs: 300_000 },
        ).then(() => blobDone = true);
        const sFrom = sender.mark();
        await sender.send({ cmd: "blob", th: "blob", path });
        await sender.waitFor(
          (e) => e.event === "sent" && e.th === "blob",
          { from: sFrom, timeoutMs: 60_000 },
        );
        const lat: number[] = [];
        for (let i = 0; i < 10 && !blobDone; i++) {
          const from = sender.mark();
          const th = `small${run}`;
          const t0 = performance.now();
          await sender.send({ cmd: "send", th, text: TEXT_1K });
          const sent = await sender.waitFor(
            (e) => e.event === "sent" && e.th === th,
            { from, timeoutMs: 60_000 },
          );
          // The driver's acked event names the id only (it may come first).
          const at = (await sender.waitFor(
            (e) => e.event === "acked" && e.id === sent.id,
            { from, timeoutMs: 60_000 },
          )).at;
          if (!blobDone) lat.push(at - t0);
        }
        await done;
        if (lat.length === 0) {
          notes.push(`run ${run + 1}: the blob finished before any msg`);
          continue;
        }
        samples.push({
          p50_ms: percentile(lat, 50),
          max_ms: Math.max(...lat),
          during_blob: lat.length,
        });
        ctx.log(
          `  run ${run + 1}: p50 ${percentile(lat, 50).toFixed(1)} ms, max ${
            Math.max(...lat).toFixed(1)
          } ms (${lat.length} msgs during the blob)`,
        );
      } finally {
        await ctx.stop(sender);
        await ctx.stop(receiver);
      }
    }
    return { samples, notes };
  },
};
