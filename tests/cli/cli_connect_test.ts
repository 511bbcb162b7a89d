/**
 * `awp connect` to a peer that is down: the command says so and exits 0,
 * the daemon keeps dialing and connects once the peer listens; `--wait`
 * waits for it and exits 2 after `--timeout`. Real daemons, real sockets.
 */

import assert from "node:assert/strict";

const CLI = new URL("../../cli.ts", import.meta.url).pathname;

async function awp(home: string, args: string[]) {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--unstable-kv", CLI, ...args, "--home", home],
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
    env: { NO_COLOR: "1" },
  }).output();
  return {
    code: out.code,
    stdout: new TextDecoder().decode(out.stdout),
    stderr: new TextDecoder().decode(out.stderr),
  };
}

Deno.test("awp connect to a peer that is down: exits 0, the daemon keeps dialing until it answers", async () => {
  const dir = await Deno.makeTempDir();
  const [a, b] = [`${dir}/a`, `${dir}/b`];
  const addr = `unix:${dir}/a-peer.sock`;
  try {
    const up = await awp(b, ["up", "--listen", `unix:${dir}/b-peer.sock`]);
    assert.equal(up.code, 0, up.stderr);
    const waited = await awp(b, ["connect", "--wait", "--timeout", "1s", addr]);
    assert.equal(waited.code, 2, waited.stdout + waited.stderr);
    assert.match(waited.stderr, /within 1s \(still dialing\)/);
    const r = await awp(b, ["connect", addr]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /does not answer .*keeps dialing/);
    // The peer comes up later: b's daemon reaches it on its own.
    const upA = await awp(a, ["up", "--listen", addr]);
    assert.equal(upA.code, 0, upA.stderr);
    const deadline = Date.now() + 20_000;
    let peers: Array<{ connected?: boolean }> = [];
    while (Date.now() < deadline) {
      const list = await awp(b, ["peers", "--json"]);
      peers = JSON.parse(list.stdout || "{}").peers ?? [];
      if (peers.some((p) => p.connected)) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    assert.ok(peers.some((p) => p.connected), JSON.stringify(peers));
    // Now connected: connect says so at once.
    const again = await awp(b, ["connect", addr]);
    assert.equal(again.code, 0, again.stderr);
    assert.match(again.stdout, /connected to/);
  } finally {
    await awp(a, ["down"]).catch(() => {});
    await awp(b, ["down"]).catch(() => {});
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
});
