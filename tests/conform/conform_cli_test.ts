/**
 * Issue 8 in CI: `mod.ts conform` run as a user runs it, against our own
 * driver (`mod.ts driver`), in both modes, over TCP, a Unix socket and the
 * WebSocket binding (ws: on loopback).
 * Every scenario must pass; only the ones a mode cannot run are skipped.
 */
import assert from "node:assert/strict";
import { DriverProcess } from "../helpers/driver_process.ts";

const MOD = new URL("../../mod.ts", import.meta.url).pathname;
const DENO = Deno.execPath();

interface Report {
  mode: string;
  results: Array<{ name: string; status: string; detail?: string }>;
  passed: number;
  failed: number;
  skipped: number;
}

async function conform(args: string[]): Promise<Report> {
  const out = await new Deno.Command(DENO, {
    args: ["run", "-A", "--unstable-kv", MOD, "conform", "--json", ...args],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(out.stdout);
  const report = JSON.parse(text) as Report;
  const failures = report.results.filter((r) => r.status === "fail");
  assert.equal(
    failures.length,
    0,
    failures.map((f) => `${f.name}: ${f.detail}`).join("\n"),
  );
  assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
  return report;
}

function statuses(report: Report): Record<string, string> {
  return Object.fromEntries(report.results.map((r) => [r.name, r.status]));
}

const BREAKING = ["version", "auth-bad-sig", "bad-frame", "too-large"];

for (const transport of ["tcp", "unix", "ws"] as const) {
  Deno.test(`conform dials our driver over ${transport}: every scenario passes`, async () => {
    const state = await Deno.makeTempDir();
    const addr = transport === "tcp"
      ? "tcp:127.0.0.1:0"
      : transport === "ws"
      ? "ws://127.0.0.1:0/awp"
      : `unix:${state}/peer.sock`;
    const driver = new DriverProcess([
      "--state",
      `${state}/home`,
      "listen",
      addr,
    ]);
    try {
      const listening = await driver.waitFor(
        (l) => l.event === "listening",
        "listening",
      );
      const report = await conform([String(listening.addr)]);
      const s = statuses(report);
      for (
        const name of [
          ...BREAKING,
          "handshake",
          "msg-ack",
          "chunk",
          "grant",
          "bye",
        ]
      ) {
        assert.equal(s[name], "ok", `${name} should have run and passed`);
      }
      // Replay needs a peer started by the runner (--run), so not here.
      assert.equal(s.replay, "skip");
      assert.equal(report.skipped, 1);
    } finally {
      await driver.quit(5_000);
      await Deno.remove(state, { recursive: true });
    }
  });

  Deno.test(`conform listens and our driver dials in over ${transport}: replay included`, async () => {
    const state = await Deno.makeTempDir();
    const listen = transport === "tcp"
      ? "tcp:127.0.0.1:0"
      : transport === "ws"
      ? "ws://127.0.0.1:0/conform"
      : `unix:${state}/runner.sock`;
    try {
      const report = await conform([
        "--listen",
        listen,
        "--driver",
        "--run",
        `${DENO} run -A --unstable-kv ${MOD} driver --state ${state}/home connect {addr}`,
      ]);
      const s = statuses(report);
      assert.equal(s.replay, "ok", "replay after a dropped connection");
      for (const name of BREAKING) assert.equal(s[name], "skip", name);
      assert.equal(report.skipped, BREAKING.length);
      assert.ok(report.passed >= 12, `passed ${report.passed}`);
    } finally {
      await Deno.remove(state, { recursive: true });
    }
  });
}
