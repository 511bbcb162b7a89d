/**
 * `deno task bench`: runs the benchmark workloads with real peer processes
 * on loopback, prints a table and writes the results as JSON.
 *
 * Usage: `deno run -A --unstable-kv bench/main.ts [--quick] [--only a,b]
 * [--runs N] [--peer driver|driver-ts|child] [--out PATH | PATH]`. Default
 * output: bench/results.json. `driver` (the default) runs the CLI driver
 * from the generated bundle, as awp starts it (built first when stale:
 * `deno task bundle`); `driver-ts` runs it from `cli.ts`. `--quick` runs each workload once with small counts
 * (a smoke test) and leaves out the micro-benchmarks unless named in
 * `--only`. Workloads: throughput_tcp, throughput_unix, latency, blob,
 * blob_unix, blob_memory, blob_interleave, websocket, handshake, resume, reconnect, idle,
 * cli, inspect, micro.
 *
 * @example
 * ```sh
 * deno run -A --unstable-kv bench/main.ts --quick --only handshake --out /tmp/b.json
 * ```
 *
 * @module
 */

import {
  BenchContext,
  type PeerProgram,
  ROOT,
  type Workload,
} from "./bench_context.ts";
import { machineInfo } from "./machine_info.ts";
import { summarize, type Summary } from "./stats.ts";
import { throughputWorkload } from "./workloads/throughput.ts";
import { latencyWorkload } from "./workloads/latency.ts";
import {
  blobInterleaveWorkload,
  blobMemoryWorkload,
  blobUnixWorkload,
  blobWorkload,
} from "./workloads/blob.ts";
import { handshakeWorkload } from "./workloads/handshake.ts";
import { resumeWorkload } from "./workloads/resume_replay.ts";
import { reconnectWorkload } from "./workloads/reconnect.ts";
import { idleWorkload } from "./workloads/idle_connections.ts";
import { cliStartWorkload } from "./workloads/cli_start.ts";
import { inspectionWorkload } from "./workloads/inspection.ts";
import { microWorkload } from "./workloads/micro.ts";
import { hostileWorkload } from "./workloads/hostile.ts";
import { websocketWorkload } from "./workloads/websocket.ts";
import { pathExists } from "../tests/helpers/path_exists.ts";
import { ensureBundle } from "../cli/process_bundle.ts";

/** Every workload, in run order. */
export const WORKLOADS: readonly Workload[] = [
  throughputWorkload("tcp"),
  throughputWorkload("unix"),
  latencyWorkload,
  blobWorkload,
  blobUnixWorkload,
  blobMemoryWorkload,
  blobInterleaveWorkload,
  websocketWorkload,
  handshakeWorkload,
  resumeWorkload,
  reconnectWorkload,
  idleWorkload,
  cliStartWorkload,
  inspectionWorkload,
  hostileWorkload,
  microWorkload,
];

/** One metric in the JSON: its summary over the runs, and its unit. */
export interface MetricResult extends Summary {
  unit: string;
}

/** One workload in the JSON. */
export interface WorkloadResult {
  title: string;
  params: Record<string, unknown>;
  metrics: Record<string, MetricResult>;
  notes: string[];
  seconds: number;
  /** Set when the workload failed; its metrics are then empty. */
  error?: string;
}

/** The whole JSON file. */
export interface BenchReport {
  schema: "awp-bench/1";
  started: string;
  finished: string;
  quick: boolean;
  runs: number;
  peer: PeerProgram;
  machine: Awaited<ReturnType<typeof machineInfo>>;
  workloads: Record<string, WorkloadResult>;
}

interface Cli {
  quick: boolean;
  only?: string[];
  runs?: number;
  peer?: PeerProgram;
  out: string;
}

const USAGE =
  "usage: bench/main.ts [--quick] [--only NAME,...] [--runs N] [--peer driver|driver-ts|child] [--out PATH | PATH]";

function usage(error: string): never {
  console.error(`bench: ${error}`);
  console.error(USAGE);
  Deno.exit(2);
}

function parseCli(args: string[]): Cli {
  const cli: Cli = { quick: false, out: `${ROOT}bench/results.json` };
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    const value = () => args[++i] ?? usage(`${a} needs a value`);
    if (a === "--help" || a === "-h") {
      console.log(
        `${USAGE}\nworkloads: ${WORKLOADS.map((w) => w.name).join(", ")}`,
      );
      Deno.exit(0);
    } else if (a === "--quick") cli.quick = true;
    else if (a === "--only") cli.only = value().split(",").filter(Boolean);
    else if (a === "--runs") {
      const n = Number(value());
      if (!Number.isSafeInteger(n) || n < 1 || n > 50) {
        usage("--runs must be 1..50");
      }
      cli.runs = n;
    } else if (a === "--peer") {
      const p = value();
      if (p !== "driver" && p !== "driver-ts" && p !== "child") {
        usage("--peer is driver, driver-ts or child");
      }
      cli.peer = p;
    } else if (a === "--out") cli.out = value();
    else if (!a.startsWith("-")) cli.out = a;
    else usage(`unknown option ${a}`);
  }
  const names = new Set(WORKLOADS.map((w) => w.name));
  for (const n of cli.only ?? []) {
    if (!names.has(n)) {
      usage(`unknown workload ${n} (known: ${[...names].join(", ")})`);
    }
  }
  return cli;
}

function fmt(n: number): string {
  if (!Number.isFinite(n)) return String(n);
  const abs = Math.abs(n);
  if (abs >= 100) return n.toFixed(0);
  if (abs >= 10) return n.toFixed(1);
  return n.toFixed(2);
}

/** The results as a text table, one row per metric. */
export function formatTable(report: BenchReport): string {
  const rows: string[][] = [[
    "workload",
    "metric",
    "median",
    "min … max",
    "spread",
    "unit",
  ]];
  for (const [name, w] of Object.entries(report.workloads)) {
    if (w.error) rows.push([name, "FAILED (see below)", "", "", "", ""]);
    for (const [metric, m] of Object.entries(w.metrics)) {
      rows.push([
        name,
        metric,
        fmt(m.median),
        m.runs.length > 1 ? `${fmt(m.min)} … ${fmt(m.max)}` : "",
        m.runs.length > 1 ? `${(m.spread * 100).toFixed(0)}%` : "",
        m.unit,
      ]);
    }
  }
  const widths = rows[0].map((_, c) =>
    Math.max(...rows.map((r) => r[c].length))
  );
  const line = (r: string[]) =>
    `| ${
      r.map((cell, c) =>
        c >= 2 && c <= 4 ? cell.padStart(widths[c]) : cell.padEnd(widths[c])
      ).join(" | ")
    } |`;
  const failures = Object.entries(report.workloads)
    .filter(([, w]) => w.error)
    .map(([name, w]) => `${name} failed: ${w.error}`);
  const notes = Object.entries(report.workloads)
    .flatMap(([name, w]) => w.notes.map((n) => `${name}: ${n}`));
  return [
    line(rows[0]),
    `|${widths.map((w) => "-".repeat(w + 2)).join("|")}|`,
    ...rows.slice(1).map(line),
    ...failures,
    ...notes,
  ].join("\n");
}

async function runOne(ctx: BenchContext, w: Workload): Promise<WorkloadResult> {
  const t0 = performance.now();
  const result: WorkloadResult = {
    title: w.title,
    params: w.params(ctx),
    metrics: {},
    notes: [],
    seconds: 0,
  };
  try {
    const outcome = await w.run(ctx);
    const units = { ...w.units, ...outcome.units };
    const names = new Set(outcome.samples.flatMap((s) => Object.keys(s)));
    for (const metric of names) {
      const values = outcome.samples.map((s) => s[metric]).filter((v) =>
        v !== undefined
      );
      result.metrics[metric] = {
        ...summarize(values),
        unit: units[metric] ?? "",
      };
    }
    result.notes.push(...outcome.notes ?? []);
  } catch (error) {
    result.error =
      (error instanceof Error ? error.message : String(error)).split("\n")[0];
    ctx.log(`  failed: ${result.error}`);
  } finally {
    // Whatever the workload left running is ended here.
    await ctx.stopAll();
  }
  result.seconds = (performance.now() - t0) / 1000;
  return result;
}

async function main(args: string[]): Promise<number> {
  const cli = parseCli(args);
  const peer = cli.peer ??
    (await pathExists(`${ROOT}cli/driver.ts`) ? "driver" : "child");
  if (peer === "driver" && await ensureBundle()) {
    console.error("built dist/bundle/ (the sources changed)");
  }
  const runs = cli.runs ?? (cli.quick ? 1 : 3);
  const selected = WORKLOADS.filter((w) =>
    cli.only ? cli.only.includes(w.name) : !(cli.quick && w.name === "micro")
  );
  const ctx = await BenchContext.create({ quick: cli.quick, runs, peer });
  const interrupt = () => {
    ctx.cleanup().finally(() => Deno.exit(130));
  };
  Deno.addSignalListener("SIGINT", interrupt);
  const report: BenchReport = {
    schema: "awp-bench/1",
    started: new Date().toISOString(),
    finished: "",
    quick: cli.quick,
    runs,
    peer,
    machine: await machineInfo(),
    workloads: {},
  };
  try {
    for (const w of selected) {
      ctx.log(`${w.name}: ${w.title}`);
      report.workloads[w.name] = await runOne(ctx, w);
    }
  } finally {
    await ctx.cleanup();
    Deno.removeSignalListener("SIGINT", interrupt);
  }
  report.finished = new Date().toISOString();
  const m = report.machine;
  console.log(
    `machine: ${m.nproc} × ${m.cpu}, ${m.memoryMiB} MiB, deno ${m.deno}, peer: ${peer}, runs: ${runs}${
      cli.quick ? " (quick)" : ""
    }`,
  );
  console.log(formatTable(report));
  await Deno.writeTextFile(cli.out, JSON.stringify(report, null, 2) + "\n");
  console.log(`written: ${cli.out}`);
  return Object.values(report.workloads).some((w) => w.error) ? 1 : 0;
}

if (import.meta.main) Deno.exit(await main(Deno.args));
