// The CLI as people use it (issue 15): flags in either place, keys that
// begin with "-", addresses in the forms people type, names that stay
// unique, and listen addresses remembered only once they work. Real
// daemons over loopback.

import assert from "node:assert/strict";
import {
  awp,
  awpArgs,
  down,
  fails,
  ok,
  okJson,
  type Status,
} from "../helpers/cli.ts";
import { openStore } from "../../storage/open_store.ts";
import { Signer } from "../../wire/keys.ts";

Deno.test("cli: a listen address that cannot be bound is not remembered", async () => {
  const home = await Deno.makeTempDir({ prefix: "awp-cli-listen-" });
  const busy = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (busy.addr as Deno.NetAddr).port;
  try {
    const r = await awp(home, ["up", "--listen", `tcp:127.0.0.1:${port}`]);
    assert.equal(r.code, 1, r.stderr);
    assert.match(r.stderr, /in use/i);
    // A plain `up` afterwards uses the defaults, not the failed address.
    const s = await okJson<Status>(home, ["up"]);
    assert.ok(!s.addrs.includes(`tcp:127.0.0.1:${port}`), s.addrs.join(" "));
    await ok(home, ["down"]);
    // One that binds is remembered for the next plain `up`.
    busy.close();
    await ok(home, ["up", "--listen", `tcp:127.0.0.1:${port}`]);
    await ok(home, ["down"]);
    const again = await okJson<Status>(home, ["up"]);
    assert.deepEqual(again.addrs, [`tcp:127.0.0.1:${port}`]);
  } finally {
    try {
      busy.close();
    } catch { /* closed */ }
    await down(home);
    await Deno.remove(home, { recursive: true });
  }
});

Deno.test("cli: --home and --json may come before the command, as with git and docker", async () => {
  const home = await Deno.makeTempDir({ prefix: "awp-cli-global-" });
  try {
    const up = await awpArgs([
      "--home",
      home,
      "up",
      "--listen",
      "tcp:127.0.0.1:0",
    ]);
    assert.equal(up.code, 0, up.stderr);
    const status = await awpArgs(["--json", `--home=${home}`, "status"]);
    assert.equal(status.code, 0, status.stderr);
    const s = JSON.parse(status.stdout) as Status;
    assert.match(s.key, /^ed25519:/);
    // After the command, as before, and mixed.
    assert.equal(
      (await okJson<Status>(home, ["status"])).key,
      s.key,
    );
    const version = await awpArgs(["--home", home, "--json", "version"]);
    assert.equal(JSON.parse(version.stdout).protocol, 0);
    const missing = await awpArgs(["--home"]);
    assert.equal(missing.code, 2);
    assert.match(missing.stderr, /--home needs a value/);
    const stopped = await awpArgs(["--home", home, "down"]);
    assert.equal(stopped.code, 0, stopped.stderr);
    assert.equal(stopped.stdout.trim(), "stopped");
  } finally {
    await down(home);
    await Deno.remove(home, { recursive: true });
  }
});

/**
 * A seed whose public key begins with one "-" (one key in 64 does). Not
 * "--": a word that begins with "--" is a long flag, and such a prefix is
 * passed after `--`, as the CLI's error says.
 */
async function dashSeed(): Promise<Uint8Array> {
  for (;;) {
    const seed = crypto.getRandomValues(new Uint8Array(32));
    const key = (await Signer.fromSeed(seed)).key;
    if (key.startsWith("ed25519:-") && key[9] !== "-") return seed;
  }
}

Deno.test("cli: keys that begin with -, unique default names, ambiguity lists the candidates, HOST:PORT addresses", async () => {
  const dir = await Deno.makeTempDir({ prefix: "awp-cli-names-" });
  // Two peers whose homes are both called "worker", and a boss.
  const worker = `${dir}/worker`;
  const twin = `${dir}/twin/worker`;
  const boss = `${dir}/boss`;
  try {
    // The worker's identity is one whose key begins with "-".
    const store = await openStore({ home: worker });
    const seed = await dashSeed();
    await store.identity(() => seed);
    store.close();
    const dashKey = (await Signer.fromSeed(seed)).key;

    // `--listen` takes HOST:PORT too.
    const w = await okJson<Status>(worker, ["up", "--listen", "127.0.0.1:0"]);
    assert.equal(w.key, dashKey);
    assert.match(w.addrs[0], /^tcp:127\.0\.0\.1:\d+$/);
    const t = await okJson<Status>(twin, ["up", "--listen", "tcp:127.0.0.1:0"]);
    await ok(boss, ["up", "--listen", "tcp:127.0.0.1:0"]);

    // Default names are unique per home: user@host:HOME-NAME.
    const names = await okJson<
      { peers: Array<{ key: string; name?: string }> }
    >(
      boss,
      ["peers"],
    );
    assert.equal(names.peers.length, 0);
    // HOST:PORT without tcp: connects.
    const c = await okJson<{ key: string; name: string }>(boss, [
      "connect",
      w.addrs[0].slice(4),
    ]);
    assert.equal(c.key, dashKey);
    assert.match(c.name, /^[^@\s]+@[^:\s]+:worker$/);
    await ok(boss, ["connect", t.addrs[0]]);

    // Two peers called the same: the error lists both, with key prefixes.
    const r = await awp(boss, ["send", c.name, "hello"]);
    assert.equal(r.code, 1, r.stderr);
    // Both candidates, in whichever order the store lists them (a random
    // twin key may also begin with "-").
    const escape = (text: string) =>
      text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
    for (const key of [dashKey, t.key]) {
      assert.match(
        r.stderr,
        new RegExp(
          `ambiguous peer "${escape(c.name)}": name matches .*\\(${
            escape(key.slice(8, 16))
          }\\).*awp alias`,
        ),
      );
    }

    // A key prefix that begins with "-" names the peer, without `--`.
    const prefix = dashKey.slice(8, 12);
    assert.match(prefix, /^-/);
    await ok(boss, ["alias", prefix, "w1"]);
    const sent = await okJson<{ th: string }>(boss, [
      "send",
      "--wait-ack",
      "30s",
      "w1",
      "by alias",
    ]);
    assert.ok(sent.th);
    await ok(boss, ["send", "--wait-ack", "30s", prefix, "by -key"]);
    // And the address as typed, HOST:PORT, names the known peer.
    await ok(boss, [
      "send",
      "--wait-ack",
      "30s",
      w.addrs[0].slice(4),
      "by addr",
    ]);
    const got = await okJson<{ items: Array<{ text?: string }> }>(worker, [
      "read",
    ]);
    assert.deepEqual(
      got.items.map((i) => i.text).filter(Boolean),
      ["by alias", "by -key", "by addr"],
    );

    // A short unknown flag says how to pass a key that begins with "-".
    await fails(boss, ["alias", "-Ab", "x"], 2, /put -- before it/);
    // A URL-like address gets a "did you mean".
    await fails(
      boss,
      ["connect", "tcp://127.0.0.1:7001"],
      2,
      /did you mean tcp:127\.0\.0\.1:7001\?/,
    );
  } finally {
    for (const h of [worker, twin, boss]) await down(h);
    await Deno.remove(dir, { recursive: true });
  }
});
