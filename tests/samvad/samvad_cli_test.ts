// `awp samvad` end to end as real processes: two daemons in temp homes,
// one started by `awp up --samvad-listen ...`, the other given its bridge
// by `awp samvad serve`; both reach an AWP worker peer over tcp, and call
// each other's bridge over http on 127.0.0.1 (allowed by --http-loopback).

import assert from "node:assert/strict";
import { Peer } from "../../mod.ts";
import { runWorker, SKILLS } from "../helpers/samvad_worker.ts";
import { awp, awpDown as down, awpOk as ok } from "../helpers/awp_cli.ts";

Deno.test("cli: awp up --samvad-listen and awp samvad serve; samvad call sync, async, stream; errors are one line", async () => {
  const w = await Peer.open({ memory: true, name: "worker" });
  const events = w.events();
  const worker = runWorker(w, events);
  const workerAddr = await w.listen("tcp:127.0.0.1:0");
  const ha = await Deno.makeTempDir({ prefix: "awp-samvad-a-" });
  const hb = await Deno.makeTempDir({ prefix: "awp-samvad-b-" });
  try {
    const skills = `${ha}/skills.json`;
    await Deno.writeTextFile(
      skills,
      JSON.stringify({ name: "cli bridge", skills: SKILLS }),
    );
    await ok(ha, [
      "up",
      "--listen",
      "tcp:127.0.0.1:0",
      "--samvad-listen",
      "127.0.0.1:0",
      "--samvad-skills",
      skills,
      "--samvad-to",
      w.key,
      "--samvad-http-loopback",
    ]);
    await ok(hb, ["up", "--listen", "tcp:127.0.0.1:0"]);
    await ok(ha, ["connect", workerAddr]);
    await ok(hb, ["connect", workerAddr]);
    const served = JSON.parse(
      await ok(hb, [
        "samvad",
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--skills",
        skills,
        "--to",
        w.key,
        "--http-loopback",
        "--json",
      ]),
    );
    assert.equal(served.serving, true);
    assert.match(served.id, /^agent:\/\/127\.0\.0\.1:\d+$/);
    const statusA = JSON.parse(await ok(ha, ["samvad", "status", "--json"]));
    assert.equal(statusA.serving, true);

    // A calls B (B fetches A's card to check the signature), and back.
    const sync = JSON.parse(
      await ok(ha, [
        "samvad",
        "call",
        served.id,
        "echo",
        "--payload",
        '{"text":"from a"}',
        "--http-loopback",
        "--json",
      ]),
    );
    assert.deepEqual(sync.result, { text: "from a" });
    const back = await ok(hb, [
      "samvad",
      "call",
      statusA.id,
      "echo",
      "--payload",
      '{"text":"from b"}',
      "--mode",
      "async",
    ]);
    assert.equal(back.trim(), '{"text":"from b"}');
    const stream = await awp(ha, [
      "samvad",
      "call",
      served.id,
      "echo",
      "--payload",
      '{"text":"s"}',
      "--mode",
      "stream",
    ]);
    assert.equal(stream.code, 0, stream.stderr);
    assert.equal(stream.stdout.trim(), '{"text":"s"}');
    assert.match(stream.stderr, /echoing s/);

    // Bad input: one line, exit 1 (SAMVAD's code first) or 2 (usage).
    const missing = await awp(ha, ["samvad", "call", served.id, "nope"]);
    assert.equal(missing.code, 1);
    assert.match(missing.stderr.trim(), /^awp: SKILL_NOT_FOUND: /);
    assert.equal(missing.stderr.trim().split("\n").length, 1);
    const schema = await awp(ha, [
      "samvad",
      "call",
      served.id,
      "echo",
      "--payload",
      '{"text":1}',
    ]);
    assert.equal(schema.code, 1);
    assert.match(schema.stderr, /SCHEMA_INVALID/);
    const usage = await awp(ha, [
      "samvad",
      "call",
      served.id,
      "echo",
      "--payload",
      "{",
    ]);
    assert.equal(usage.code, 2);
    assert.match(usage.stderr, /not JSON/);
    const noFile = await awp(hb, [
      "samvad",
      "serve",
      "--listen",
      "127.0.0.1:0",
      "--skills",
      `${hb}/none.json`,
    ]);
    assert.equal(noFile.code, 1);
    assert.match(noFile.stderr.trim(), /^awp: cannot read .*none\.json/);
    const twice = await awp(hb, [
      "samvad",
      "serve",
      "--listen",
      "127.0.0.1:0",
      "--skills",
      skills,
    ]);
    assert.equal(twice.code, 1);
    assert.match(twice.stderr, /already running/);
    const half = await awp(hb, ["up", "--samvad-listen", "127.0.0.1:0"]);
    assert.equal(half.code, 2);
    assert.match(half.stderr, /go together/);
  } finally {
    await down(ha);
    await down(hb);
    await events.return?.();
    await w.close();
    await worker;
    await Deno.remove(ha, { recursive: true }).catch(() => {});
    await Deno.remove(hb, { recursive: true }).catch(() => {});
  }
});
