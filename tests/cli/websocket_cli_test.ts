// The WebSocket binding through the CLI, as real processes: a daemon serving
// wss:// with a certificate from a test CA, another trusting that CA with
// --ca, a msg acked over it, and `awp peers` showing "waking" while the
// host's address answers HTTP 503 instead of the upgrade.

import assert from "node:assert/strict";
import { hasOpenssl, makeTestCa } from "../helpers/test_ca.ts";
import {
  awp,
  awpDown as down,
  awpJson,
  awpOk as ok,
} from "../helpers/awp_cli.ts";

Deno.test({
  name:
    "cli: a daemon serves wss:// (--cert/--key), another dials it trusting --ca; peers shows waking behind a 503",
  ignore: !hasOpenssl(),
  async fn() {
    const root = await Deno.makeTempDir({ prefix: "awp-ws-cli-" });
    const ha = `${root}/a`;
    const hb = `${root}/b`;
    let front: Deno.HttpServer | undefined;
    try {
      const ca = await makeTestCa(root);
      // Bad flag pairs are one-line usage errors before anything starts.
      const bad = await awp(hb, ["up", "--cert", ca.certFile]);
      assert.equal(bad.code, 2);
      assert.match(bad.stderr.trim(), /^[^\n]*--cert and --key go together/);

      await ok(hb, [
        "up",
        "--name",
        "bob",
        "--listen",
        "wss://localhost:0/awp",
        "--cert",
        ca.certFile,
        "--key",
        ca.keyFile,
      ]);
      await ok(ha, [
        "up",
        "--name",
        "alice",
        "--ca",
        ca.caFile,
        "--listen",
        "tcp:127.0.0.1:0",
      ]);
      const sb = await awpJson<{ key: string; addrs: string[] }>(hb, [
        "status",
      ]);
      const addr = sb.addrs.find((a) => a.startsWith("wss://")) ?? "none";
      assert.match(addr, /^wss:\/\/localhost:\d+\/awp$/);
      const c = await awpJson<{ key: string }>(ha, ["connect", addr]);
      assert.equal(c.key, sb.key);
      const sent = await awpJson<{ acked: boolean }>(ha, [
        "send",
        "--wait-ack",
        "10s",
        "bob",
        "over",
        "wss",
      ]);
      assert.equal(sent.acked, true);
      assert.match(await ok(ha, ["peers"]), /bob.*connected/);

      // Bob's host goes to sleep: its front answers 503 on the same port.
      await down(hb);
      const port = Number(new URL(addr).port);
      front = Deno.serve({
        hostname: "localhost",
        port,
        cert: ca.certPem,
        key: ca.keyPem,
        onListen() {},
      }, () => new Response("waking up\n", { status: 503 }));
      await ok(ha, ["send", "bob", "are", "you", "up"]);
      const end = Date.now() + 20_000;
      let peers = "";
      while (Date.now() < end) {
        peers = await ok(ha, ["peers"]);
        if (/bob.*waking/.test(peers)) break;
        await new Promise((r) => setTimeout(r, 200));
      }
      assert.match(peers, /bob.*waking/);
    } finally {
      await front?.shutdown();
      await down(ha);
      await down(hb);
      await Deno.remove(root, { recursive: true }).catch(() => {});
    }
  },
});
