import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { median, percentile, summarize } from "../../bench/stats.ts";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));

async function bench(args: string[]): Promise<Deno.CommandOutput> {
  return await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--unstable-kv", `${ROOT}bench/main.ts`, ...args],
    cwd: ROOT,
    stdin: "null",
  }).output();
}

Deno.test("bench --quick --only handshake writes the expected JSON shape", async () => {
  const dir = await Deno.makeTempDir({ prefix: "awp-bench-smoke-" });
  try {
    const out = `${dir}/results.json`;
    const r = await bench(["--quick", "--only", "handshake", "--out", out]);
    const stdout = new TextDecoder().decode(r.stdout);
    assert.equal(r.code, 0, new TextDecoder().decode(r.stderr));
    assert.match(stdout, /\| handshake +\| handshakes_per_s/);
    const report = JSON.parse(await Deno.readTextFile(out));
    assert.equal(report.schema, "awp-bench/1");
    assert.equal(report.quick, true);
    assert.equal(report.runs, 1);
    assert.ok(["driver", "child"].includes(report.peer));
    assert.equal(typeof report.machine.nproc, "number");
    assert.equal(typeof report.machine.cpu, "string");
    assert.equal(typeof report.machine.deno, "string");
    assert.deepEqual(Object.keys(report.workloads), ["handshake"]);
    const w = report.workloads.handshake;
    assert.equal(w.error, undefined);
    assert.deepEqual(w.params, { connections: 10 });
    assert.deepEqual(Object.keys(w.metrics).sort(), [
      "handshakes_per_s",
      "listener_cpu_ms_per_handshake",
      "p50_ms",
      "p99_ms",
    ]);
    for (const m of Object.values(w.metrics) as Record<string, unknown>[]) {
      assert.deepEqual(Object.keys(m).sort(), [
        "max",
        "median",
        "min",
        "runs",
        "spread",
        "unit",
      ]);
      assert.equal((m.runs as number[]).length, 1);
      assert.ok(Number.isFinite(m.median) && (m.median as number) > 0);
    }
    assert.equal(w.metrics.handshakes_per_s.unit, "1/s");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("bench rejects an unknown workload with one clear line", async () => {
  const r = await bench(["--quick", "--only", "nope"]);
  assert.equal(r.code, 2);
  const first = new TextDecoder().decode(r.stderr).split("\n")[0];
  assert.match(
    first,
    /^bench: unknown workload nope \(known: throughput_tcp, /,
  );
});

Deno.test("bench stats: median, nearest-rank percentile, spread", () => {
  assert.equal(median([5, 1, 3]), 3);
  assert.equal(median([4, 1, 3, 2]), 2.5);
  assert.equal(percentile([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 99), 10);
  assert.equal(percentile([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 50), 5);
  const s = summarize([10, 12, 11]);
  assert.deepEqual([s.median, s.min, s.max], [11, 10, 12]);
  assert.equal(s.spread, 2 / 11);
  assert.equal(summarize([7]).spread, 0);
  assert.throws(() => median([]), /median of no values/);
});
