/**
 * The `deno bench` micro-benchmarks (bench/*_bench.ts) as a workload: runs
 * `deno bench --json` on them once (deno bench repeats each itself) and
 * keeps each benchmark's average time per iteration.
 *
 * @example
 * ```ts ignore
 * import { microWorkload } from "./micro.ts";
 * console.log(microWorkload.name); // micro
 * ```
 *
 * @module
 */

import { ROOT, type Sample, type Workload } from "../bench_context.ts";

interface BenchJson {
  benches: Array<{
    name: string;
    group?: string | null;
    results: Array<
      { ok?: { avg: number; p75: number; p99: number; n: number } }
    >;
  }>;
}

/** The micro-benchmarks. */
export const microWorkload: Workload = {
  name: "micro",
  title: "deno bench micro-benchmarks (avg time per iteration)",
  units: {},
  params: () => ({ files: "bench/*_bench.ts" }),
  async run(ctx) {
    const files = [];
    for await (const e of Deno.readDir(`${ROOT}bench`)) {
      if (e.isFile && e.name.endsWith("_bench.ts")) {
        files.push(`bench/${e.name}`);
      }
    }
    files.sort();
    ctx.log(`  deno bench ${files.join(" ")}`);
    const { code, stdout, stderr } = await new Deno.Command(Deno.execPath(), {
      args: ["bench", "-A", "--unstable-kv", "--json", ...files],
      cwd: ROOT,
      stdin: "null",
    }).output();
    if (code !== 0) {
      const line = new TextDecoder().decode(stderr).trim().split("\n").pop();
      throw new Error(`deno bench exited with ${code}: ${line}`);
    }
    const report = JSON.parse(new TextDecoder().decode(stdout)) as BenchJson;
    const sample: Sample = {};
    const units: Record<string, string> = {};
    for (const b of report.benches) {
      const ok = b.results[0]?.ok;
      if (!ok) continue;
      sample[b.name] = ok.avg / 1000;
      units[b.name] = "µs";
    }
    return { samples: [sample], units };
  },
};
