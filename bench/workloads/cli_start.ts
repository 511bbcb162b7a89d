/**
 * Workload 7: CLI cold start. Starts a daemon in a temp home (`awp up`), then
 * times `awp status` as a whole new process (Deno start-up, module load, the
 * control socket call, exit), after one untimed warm-up; median of N.
 *
 * @example
 * ```ts ignore
 * import { cliStartWorkload } from "./cli_start.ts";
 * console.log(cliStartWorkload.name); // cli
 * ```
 *
 * @module
 */

import { ROOT, type Sample, type Workload } from "../bench_context.ts";
import { median, percentile } from "../stats.ts";

async function awp(home: string, args: string[]): Promise<number> {
  const t0 = performance.now();
  const { code, stderr } = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      "--unstable-kv",
      `${ROOT}cli.ts`,
      ...args,
      "--home",
      home,
    ],
    cwd: ROOT,
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }).output();
  const ms = performance.now() - t0;
  if (code !== 0) {
    const line = new TextDecoder().decode(stderr).trim().split("\n").pop();
    throw new Error(`awp ${args[0]} exited with ${code}: ${line}`);
  }
  return ms;
}

/** Workload 7. */
export const cliStartWorkload: Workload = {
  name: "cli",
  title: "CLI cold start: `status` against a running daemon",
  units: { status_median_ms: "ms", status_p90_ms: "ms", up_ms: "ms" },
  params: (ctx) => ({ invocations: ctx.quick ? 3 : 20 }),
  async run(ctx) {
    const n = ctx.quick ? 3 : 20;
    const samples: Sample[] = [];
    for (let run = 0; run < ctx.runs; run++) {
      const home = await ctx.dir("cli-home");
      let started = false;
      try {
        const up = await awp(home, ["up"]);
        started = true;
        await awp(home, ["status"]);
        const times: number[] = [];
        for (let i = 0; i < n; i++) times.push(await awp(home, ["status"]));
        samples.push({
          status_median_ms: median(times),
          status_p90_ms: percentile(times, 90),
          up_ms: up,
        });
        ctx.log(
          `  run ${run + 1}: status ${
            samples[run].status_median_ms.toFixed(0)
          } ms`,
        );
      } finally {
        if (started) {
          await awp(home, ["down"]).catch((e) =>
            ctx.log(`  stop: ${e.message}`)
          );
        }
      }
    }
    return { samples };
  },
};
