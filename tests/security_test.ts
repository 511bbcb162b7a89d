// Attacks on real daemon processes (issue 25): each test starts `awp up`
// in a temp home and talks to it over loopback TCP as a granted peer.

import assert from "node:assert/strict";
import { Peer } from "../actors/peer.ts";
import type { PeerMessageEvent } from "../actors/peer_events.ts";
import type { Part } from "../wire/types.ts";
import { EventLog } from "./helpers/event_log.ts";
import { awpCli, type AwpDaemon, startDaemon } from "./helpers/awp_daemon.ts";

const EXEC = "application/vnd.awp.exec+json";
const FS_READ = "application/vnd.awp.fs-read+json";
const FS_WRITE = "application/vnd.awp.fs-write+json";

interface Granted {
  daemon: AwpDaemon;
  /** The served root; the home is `${base}/.awp`, inside it. */
  base: string;
  /** Sends one request and resolves with its result's data. */
  request(mime: string, data: unknown): Promise<Record<string, unknown>>;
}

/**
 * A daemon whose home lies inside `base` (the attack of item 1), and a
 * memory peer holding `caps` granted by it.
 */
async function withGranted(
  caps: string[],
  flags: (base: string) => string[],
  fn: (g: Granted) => Promise<void>,
  env: Record<string, string> = {},
): Promise<void> {
  const base = await Deno.realPath(
    await Deno.makeTempDir({ prefix: "awp-sec-" }),
  );
  const daemon = await startDaemon(`${base}/.awp`, flags(base), env);
  const client = await Peer.open({ memory: true, name: "attacker" });
  const events = new EventLog(client, 20_000);
  try {
    await client.connect(daemon.addr);
    await daemon.ok(["grant", "--ttl", "10m", client.key, ...caps]);
    await events.until(() => events.of("grant").length > 0, "the grant");
    await fn({
      daemon,
      base,
      request: async (mime, data) => {
        const { id } = await client.send(daemon.key, "", {
          parts: [{ k: "data", mime, data } as Part],
        });
        const reply: PeerMessageEvent = await events.find(
          () => events.of("message").find((m) => m.re === id),
          `the result of ${id}`,
        );
        const part = reply.parts.find((p) => p.k === "data") as
          | { data: Record<string, unknown> }
          | undefined;
        assert.ok(part, "the result has a data part");
        return part.data;
      },
    });
  } finally {
    await client.close();
    await events.done;
    await daemon.stop();
    await Deno.remove(base, { recursive: true }).catch(() => {});
  }
}

Deno.test("security: fs is not served without --root", async () => {
  const home = await Deno.makeTempDir({ prefix: "awp-sec-noroot-" });
  try {
    const r = await awpCli(home, [
      "up",
      "--listen",
      "tcp:127.0.0.1:0",
      "--serve",
      "fs:read",
    ]);
    assert.notEqual(r.code, 0, r.stdout);
    assert.match(r.stderr, /fs:read needs root/);
  } finally {
    await awpCli(home, ["down"]);
    await Deno.remove(home, { recursive: true });
  }
});

Deno.test("security: the awp home is never served, whatever the root, nor through links to it", async () => {
  await withGranted(
    ["fs:read", "fs:write"],
    (base) => ["--serve", "fs:read,fs:write", "--root", base],
    async ({ base, request }) => {
      const home = `${base}/.awp`;
      await Deno.writeTextFile(`${base}/ok.txt`, "fine");
      await Deno.symlink(home, `${base}/home-link`);
      await Deno.link(`${home}/awp.kv`, `${base}/innocent.db`);
      assert.equal(
        (await request(FS_READ, { path: "ok.txt" })).content,
        "fine",
      );
      for (
        const path of [
          ".awp/awp.kv",
          ".awp/awp.kv-wal",
          ".awp",
          `${home}/awp.kv`,
          "home-link/awp.kv",
          "innocent.db",
        ]
      ) {
        const r = await request(FS_READ, { path });
        assert.match(String(r.error), /never served/, `read ${path}`);
        assert.equal(r.content, undefined);
        assert.equal(r.blob, undefined);
      }
      const before = await Deno.readTextFile(`${home}/daemon.lock`);
      for (const path of [".awp/config.json", ".awp/daemon.lock"]) {
        const w = await request(FS_WRITE, { path, content: "{}" });
        assert.match(String(w.error), /never served/, `write ${path}`);
      }
      assert.equal(await Deno.readTextFile(`${home}/daemon.lock`), before);
      await assert.rejects(Deno.stat(`${home}/config.json`));
    },
  );
});

Deno.test("security: exec gets a minimal environment plus --exec-env-pass", async () => {
  await withGranted(
    ["exec"],
    (base) => [
      "--serve",
      "exec",
      "--root",
      base,
      "--exec-env-pass",
      "AWP_TEST_PASSED",
    ],
    async ({ request }) => {
      const r = await request(EXEC, { cmd: "env", env: { ASKED: "yes" } });
      assert.equal(r.exit, 0, String(r.stderr));
      const env = String(r.stdout);
      assert.doesNotMatch(env, /AWP_TEST_SECRET|hunter2/);
      assert.match(env, /^AWP_TEST_PASSED=passed$/m);
      assert.match(env, /^ASKED=yes$/m);
      assert.match(env, /^PATH=/m);
    },
    { AWP_TEST_SECRET: "hunter2", AWP_TEST_PASSED: "passed" },
  );
});
