/**
 * The conformance runner against a real minimal peer (tests/fixtures/
 * mini_peer.ts) in its own process: both modes, TCP and Unix sockets, and
 * broken variants of the peer to show failures are caught and explained.
 */

import assert from "node:assert/strict";
import { conformMain } from "../../conform/cli.ts";
import {
  formatResult,
  formatSummary,
  summarize,
} from "../../conform/report.ts";
import {
  ConformError,
  runConformance,
  selectScenarios,
  splitCommand,
} from "../../conform/runner.ts";
import type { ConformReport, ScenarioResult } from "../../conform/report.ts";
import { SCENARIOS } from "../../conform/scenarios.ts";

const MINI_PEER = new URL("../fixtures/mini_peer.ts", import.meta.url).pathname;
const CLI = new URL("../../conform/cli.ts", import.meta.url).pathname;
const DENO = Deno.execPath();
/** Short: the mini peer answers at once, and failing scenarios wait this long. */
const TIMEOUT_MS = 1500;

interface MiniPeer {
  addr: string;
  key: string;
  stop(): Promise<void>;
}

/** Starts the mini peer listening and reads its address from the listening event. */
async function startListening(
  addr: string,
  flags: string[] = [],
): Promise<MiniPeer> {
  const child = new Deno.Command(DENO, {
    args: ["run", "-A", MINI_PEER, ...flags, "listen", addr],
    stdin: "null",
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const lines = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  let key = "";
  let listening = "";
  while (!listening) {
    const { value, done } = await lines.read();
    if (done) throw new Error("mini peer exited before listening");
    buffer += value;
    let nl;
    while ((nl = buffer.indexOf("\n")) >= 0) {
      const event = JSON.parse(buffer.slice(0, nl));
      buffer = buffer.slice(nl + 1);
      if (event.event === "identity") key = event.key;
      if (event.event === "listening") listening = event.addr;
    }
  }
  // Keep draining so the peer never blocks on a full stdout pipe.
  const drained = (async () => {
    try {
      while (!(await lines.read()).done) { /* drop */ }
    } catch { /* killed */ }
  })();
  return {
    addr: listening,
    key,
    async stop() {
      child.kill("SIGTERM");
      await child.status;
      await drained;
    },
  };
}

function byName(report: ConformReport): Map<string, ScenarioResult> {
  return new Map(report.results.map((r) => [r.name, r]));
}

function statuses(report: ConformReport): Record<string, string> {
  return Object.fromEntries(report.results.map((r) => [r.name, r.status]));
}

function peerCommand(flags: string[] = []): string {
  return `${DENO} run -A '${MINI_PEER}' --state /nonexistent ${
    flags.join(" ")
  } connect {addr}`;
}

Deno.test("splitCommand splits like a shell for simple quoting", () => {
  assert.deepEqual(splitCommand(`peer  connect {addr}`), [
    "peer",
    "connect",
    "{addr}",
  ]);
  assert.deepEqual(splitCommand(`a 'b c' "d \\"e\\"" f\\ g ''`), [
    "a",
    "b c",
    'd "e"',
    "f g",
    "",
  ]);
  assert.deepEqual(splitCommand(`x'y'"z"`), ["xyz"]);
  assert.throws(() => splitCommand(`a 'b`), ConformError);
  assert.throws(() => splitCommand(`a "b`), /unterminated/);
});

Deno.test("the scenario table: names unique, seed 004 names all there, bye last", () => {
  const names = SCENARIOS.map((s) => s.name);
  assert.equal(new Set(names).size, names.length);
  for (
    const name of [
      "handshake",
      "version",
      "auth-bad-sig",
      "bad-frame",
      "too-large",
      "ping",
      "msg-ack",
      "state-ack",
      "dedup",
      "unknown-type",
      "unknown-field",
      "err-nonclosing",
      "chunk",
      "grant",
      "bye",
      "replay",
    ]
  ) assert.ok(names.includes(name), name);
  assert.equal(names[0], "handshake");
  assert.equal(names.at(-1), "bye");
  assert.deepEqual(
    SCENARIOS.filter((s) => s.breaksConnection).map((s) => s.name),
    ["version", "auth-bad-sig", "bad-frame", "too-large"],
  );
  assert.deepEqual(selectScenarios(["bye", "ping"]).map((s) => s.name), [
    "ping",
    "bye",
  ]);
  assert.throws(() => selectScenarios(["nope"]), /unknown scenario "nope"/);
});

Deno.test("report lines: status, name, section, doc, detail; summary counts", () => {
  const fail: ScenarioResult = {
    name: "msg-ack",
    section: "§9.1, 9.2",
    doc: "a msg is acked",
    status: "fail",
    detail: "expected an ack\nnothing came",
    seconds: 1,
  };
  assert.equal(
    formatResult(fail),
    "  FAIL  msg-ack         §9.1, 9.2 a msg is acked -- expected an ack nothing came",
  );
  const report = summarize({ mode: "dial", target: "tcp:127.0.0.1:1" }, [fail, {
    ...fail,
    status: "ok",
  }], 2.04);
  assert.equal(formatSummary(report), "1 passed, 1 failed, 0 skipped in 2.0s");
});

Deno.test("dial mode over TCP: a conforming peer passes every scenario", async () => {
  const peer = await startListening("tcp:127.0.0.1:0");
  try {
    const seen: string[] = [];
    const report = await runConformance({
      address: peer.addr,
      timeoutMs: TIMEOUT_MS,
      onResult: (r) => seen.push(r.name),
    });
    const expected = Object.fromEntries(
      SCENARIOS.map((s) => [s.name, s.name === "replay" ? "skip" : "ok"]),
    );
    assert.deepEqual(
      statuses(report),
      expected,
      JSON.stringify(report.results, null, 1),
    );
    assert.deepEqual(seen, SCENARIOS.map((s) => s.name));
    assert.equal(report.peer?.key, peer.key);
    assert.equal(report.peer?.name, "mini-peer");
    assert.deepEqual([report.passed, report.failed, report.skipped], [
      15,
      0,
      1,
    ]);
    assert.match(byName(report).get("replay")!.detail!, /--driver/);
  } finally {
    await peer.stop();
  }
});

Deno.test("dial mode over a Unix socket: a peer that never acks fails the ack scenarios, and says so", async () => {
  const dir = await Deno.makeTempDir({ prefix: "awp-conform-" });
  const peer = await startListening(`unix:${dir}/peer.sock`, ["--no-ack"]);
  try {
    const report = await runConformance({
      address: peer.addr,
      timeoutMs: TIMEOUT_MS,
      scenarios: [
        "handshake",
        "ping",
        "msg-ack",
        "state-ack",
        "dedup",
        "bad-frame",
        "bye",
      ],
    });
    const s = statuses(report);
    assert.deepEqual(s, {
      handshake: "ok",
      "bad-frame": "ok",
      ping: "ok",
      "msg-ack": "fail",
      "state-ack": "fail",
      dedup: "fail",
      bye: "ok",
    });
    const detail = byName(report).get("msg-ack")!.detail!;
    assert.match(
      detail,
      /^expected an ack with re [0-9A-Z]{26}; nothing came within 1\.5 s$/,
    );
    assert.equal(report.failed, 3);
  } finally {
    await peer.stop();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("dial mode: a peer with a bad auth signature fails the handshake", async () => {
  const peer = await startListening("tcp:127.0.0.1:0", ["--bad-sig"]);
  try {
    const report = await runConformance({
      address: peer.addr,
      timeoutMs: TIMEOUT_MS,
      scenarios: ["handshake", "ping"],
    });
    assert.deepEqual(statuses(report), { handshake: "fail", ping: "fail" });
    assert.match(
      byName(report).get("handshake")!.detail!,
      /auth signature does not verify/,
    );
  } finally {
    await peer.stop();
  }
});

Deno.test("listen mode over TCP with --driver: a conforming peer passes, replay included", async () => {
  const report = await runConformance({
    listen: "tcp:127.0.0.1:0",
    run: peerCommand(),
    driver: true,
    timeoutMs: TIMEOUT_MS,
  });
  const s = statuses(report);
  for (const scenario of SCENARIOS) {
    assert.equal(
      s[scenario.name],
      scenario.breaksConnection ? "skip" : "ok",
      `${scenario.name}: ${byName(report).get(scenario.name)?.detail}`,
    );
  }
  assert.match(
    byName(report).get("version")!.detail!,
    /breaks the connection on purpose/,
  );
  assert.match(report.command!, /connect tcp:127\.0\.0\.1:\d+$/);
  assert.deepEqual([report.passed, report.failed, report.skipped], [12, 0, 4]);
});

Deno.test("listen mode over a Unix socket: a replay missing its last message fails replay", async () => {
  const dir = await Deno.makeTempDir({ prefix: "awp-conform-" });
  try {
    const report = await runConformance({
      listen: `unix:${dir}/runner.sock`,
      run: peerCommand(["--drop-replay"]),
      driver: true,
      timeoutMs: TIMEOUT_MS,
      scenarios: ["handshake", "ping", "replay", "bye"],
    });
    assert.deepEqual(statuses(report), {
      handshake: "ok",
      ping: "ok",
      replay: "fail",
      bye: "ok",
    });
    assert.match(
      byName(report).get("replay")!.detail!,
      /^expected the replay of [0-9A-Z]{26}/,
    );
    assert.equal(report.target, `unix:${dir}/runner.sock`);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("listen mode: replay is skipped without --driver, and a line off the schema fails its scenario", async () => {
  const report = await runConformance({
    listen: "tcp:127.0.0.1:0",
    run: peerCommand(["--invalid-pong"]),
    timeoutMs: TIMEOUT_MS,
    scenarios: ["handshake", "msg-ack", "ping", "replay", "bye"],
  });
  assert.deepEqual(statuses(report), {
    handshake: "ok",
    "msg-ack": "ok",
    ping: "fail",
    replay: "skip",
    bye: "ok",
  });
  const detail = byName(report).get("ping")!.detail!;
  assert.match(detail, /does not match the schema/);
  assert.match(detail, /"t":"pong"/);
});

Deno.test("runConformance: unreachable peers and dead commands are one-line errors", async () => {
  const probe = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (probe.addr as Deno.NetAddr).port;
  probe.close();
  await assert.rejects(
    runConformance({ address: `tcp:127.0.0.1:${port}`, timeoutMs: TIMEOUT_MS }),
    (e: Error) =>
      e instanceof ConformError && /connection refused/.test(e.message) &&
      !e.message.includes("\n"),
  );
  await assert.rejects(
    runConformance({ address: "tcp:nope" }),
    /invalid address/,
  );
  await assert.rejects(
    runConformance({
      listen: "tcp:127.0.0.1:0",
      run: `${DENO} eval "Deno.exit(3)"`,
    }),
    /exited \(code 3\) without connecting/,
  );
});

Deno.test("conformMain: exit 2 on usage errors, 0 for --list", async () => {
  const log = console.log;
  const error = console.error;
  const out: string[] = [];
  console.log = (...a: unknown[]) => out.push(a.join(" "));
  console.error = (...a: unknown[]) => out.push(a.join(" "));
  try {
    assert.equal(await conformMain([]), 2);
    assert.equal(
      await conformMain(["--timeout", "soon", "tcp:127.0.0.1:1"]),
      2,
    );
    assert.equal(
      await conformMain(["--scenario", "nope", "tcp:127.0.0.1:1"]),
      2,
    );
    assert.equal(await conformMain(["--listen", "tcp:127.0.0.1:0"]), 2);
    assert.equal(
      await conformMain([
        "tcp:127.0.0.1:1",
        "--listen",
        "tcp:127.0.0.1:0",
        "--run",
        "x",
      ]),
      2,
    );
    assert.ok(out.some((l) => l.includes("unknown scenario")));
    out.length = 0;
    assert.equal(await conformMain(["--list"]), 0);
    assert.equal(out.join("\n").split("\n").length, SCENARIOS.length);
    assert.match(out[0], /^handshake\s+§7\s+hello without waiting/);
  } finally {
    console.log = log;
    console.error = error;
  }
});

async function cli(
  args: string[],
): Promise<{ code: number; stdout: string; stderr: string }> {
  const { code, stdout, stderr } = await new Deno.Command(DENO, {
    args: ["run", "-A", CLI, ...args],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const dec = new TextDecoder();
  return { code, stdout: dec.decode(stdout), stderr: dec.decode(stderr) };
}

Deno.test("the CLI: text report and --trace, exit 1 on a failure; --json for the whole report", async () => {
  const peer = await startListening("tcp:127.0.0.1:0", ["--no-ack"]);
  try {
    const text = await cli([
      "--timeout",
      "1",
      "--trace",
      "--scenario",
      "ping,msg-ack",
      peer.addr,
    ]);
    assert.equal(text.code, 1, text.stderr);
    const lines = text.stdout.trimEnd().split("\n");
    assert.equal(lines[0], `awp conform: connect ${peer.addr}`);
    assert.match(
      lines[1],
      new RegExp(`^peer mini-peer ${peer.key} \\(v0; caps chat blob grant\\)$`),
    );
    assert.ok(
      lines.some((l) =>
        /^ {2}ok {4}ping {12}§9\.4 {6}a ping is answered/.test(l)
      ),
      text.stdout,
    );
    assert.ok(
      lines.some((l) =>
        /^ {2}FAIL {2}msg-ack .* -- expected an ack with re /.test(l)
      ),
      text.stdout,
    );
    assert.match(lines.at(-1)!, /^1 passed, 1 failed, 0 skipped in \d+\.\ds$/);
    assert.match(text.stderr, /^#1 > \{"t":"hello"/m);
    assert.match(text.stderr, /^#1 < \{"t":"pong"/m);

    const json = await cli([
      "--json",
      "--timeout",
      "1",
      "--scenario",
      "ping",
      peer.addr,
    ]);
    assert.equal(json.code, 0, json.stderr);
    const report = JSON.parse(json.stdout);
    assert.equal(report.mode, "dial");
    assert.equal(report.peer.key, peer.key);
    assert.deepEqual(
      report.results.map((r: ScenarioResult) => [r.name, r.status]),
      [["ping", "ok"]],
    );
  } finally {
    await peer.stop();
  }
  const refused = await cli([peer.addr]);
  assert.equal(refused.code, 1);
  assert.equal(refused.stdout, "");
  assert.match(
    refused.stderr,
    /^awp conform: dial tcp:127\.0\.0\.1:\d+: connection refused\n$/,
  );
});
