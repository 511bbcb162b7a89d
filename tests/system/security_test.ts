// Attacks on real daemon processes (issue 25): each test starts `awp up`
// in a temp home and talks to it over loopback TCP as a granted peer.

import assert from "node:assert/strict";
import { Peer } from "../../peer/peer.ts";
import type { PeerMessageEvent } from "../../peer/peer_events.ts";
import type { Part } from "../../wire/types.ts";
import { EventLog } from "../helpers/event_log.ts";
import { awpCli, type AwpDaemon, startDaemon } from "../helpers/awp_daemon.ts";

const EXEC = "application/vnd.awp.exec+json";
const FS_READ = "application/vnd.awp.fs-read+json";
const FS_WRITE = "application/vnd.awp.fs-write+json";

interface Granted {
  daemon: AwpDaemon;
  client: Peer;
  events: EventLog;
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
      client,
      events,
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

/** Seconds the symlink race runs (AWP_STRESS_SECONDS for a longer run). */
const RACE_SECONDS = Number(Deno.env.get("AWP_STRESS_SECONDS") ?? "4");

Deno.test("security: a directory swapped for a symlink during requests never lets a read or write out; hard links are not written", async () => {
  await withGranted(
    ["fs:read", "fs:write"],
    (base) => ["--serve", "fs:read,fs:write", "--root", `${base}/root`],
    async ({ base, client, events, daemon, request }) => {
      const root = `${base}/root`;
      const outside = `${base}/outside`;
      // The served root exists before the daemon serves a request.
      await Deno.mkdir(`${root}/d`, { recursive: true });
      await Deno.mkdir(outside);
      await Deno.writeTextFile(`${root}/d/secret.txt`, "inside");
      await Deno.writeTextFile(`${outside}/secret.txt`, "SECRET");
      await Deno.writeTextFile(`${outside}/target.txt`, "original");
      // A hard link inside the root to a file outside it.
      await Deno.link(`${outside}/target.txt`, `${root}/hard.txt`);
      const hard = await request(FS_WRITE, {
        path: "hard.txt",
        content: "pwned",
      });
      assert.match(String(hard.error), /hard links/);
      assert.equal(
        await Deno.readTextFile(`${outside}/target.txt`),
        "original",
      );

      // Another process flips root/d between the real directory and a
      // symlink to the outside, as fast as it can.
      await Deno.symlink(outside, `${root}/link.tmp`);
      const flipper = new Deno.Command(Deno.execPath(), {
        args: [
          "eval",
          `const r = ${JSON.stringify(root)};
           for (;;) {
             try { Deno.renameSync(r + "/d", r + "/dir.tmp"); Deno.renameSync(r + "/link.tmp", r + "/d"); } catch {}
             try { Deno.renameSync(r + "/d", r + "/link.tmp"); Deno.renameSync(r + "/dir.tmp", r + "/d"); } catch {}
           }`,
        ],
        stdout: "null",
        stderr: "null",
      }).spawn();
      let requests = 0;
      let escapes = 0;
      let served = 0;
      try {
        const deadline = Date.now() + RACE_SECONDS * 1000;
        while (Date.now() < deadline) {
          // Ten reads and ten writes per msg, a few msgs in flight.
          const batch = await Promise.all(
            Array.from({ length: 4 }, (_, i) =>
              client.send(daemon.key, "", {
                parts: Array.from({ length: 20 }, (_, k) => ({
                  k: "data",
                  mime: k % 2 ? FS_WRITE : FS_READ,
                  data: k % 2
                    ? { path: `d/w${i}-${k}.txt`, content: "x" }
                    : { path: "d/secret.txt" },
                } as Part)),
              })),
          );
          requests += batch.length * 20;
          const ids = new Set(batch.map((b) => b.id));
          await events.until(
            () =>
              events.of("message").filter((m) => ids.has(m.re ?? "")).length >=
                batch.length * 20,
            "every result",
          );
          for (const m of events.of("message")) {
            if (!ids.has(m.re ?? "")) continue;
            for (const p of m.parts) {
              const data = (p as { data?: Record<string, unknown> }).data;
              if (!data) continue;
              if (data.error === undefined) served++;
              if (data.content === "SECRET") escapes++;
            }
          }
        }
      } finally {
        flipper.kill("SIGKILL");
        await flipper.status;
      }
      const leaked = [...Deno.readDirSync(outside)].map((e) => e.name)
        .filter((n) => n.startsWith("w"));
      assert.equal(escapes, 0, `reads that escaped, of ${requests}`);
      assert.deepEqual(leaked, [], `writes that landed outside`);
      assert.ok(served > 0, "some requests were served meanwhile");
    },
  );
});

Deno.test("security: an over-long path gets a PATH_MAX error at once; a long one within it is answered", async () => {
  await withGranted(
    ["fs:read", "fs:write"],
    (base) => ["--serve", "fs:read,fs:write", "--root", base],
    async ({ request }) => {
      const started = performance.now();
      const huge = await request(FS_READ, { path: "a/".repeat(50_000) });
      assert.match(String(huge.error), /longer than 4096 bytes \(PATH_MAX\)/);
      const multibyte = await request(FS_WRITE, {
        path: "é".repeat(2100), // 4,200 bytes in UTF-8
        content: "x",
      });
      assert.match(String(multibyte.error), /PATH_MAX/);
      // 2,000 components, missing from the first: answered, not slow.
      const deep = await request(FS_WRITE, {
        path: "a/".repeat(2000) + "f",
        content: "x",
      });
      assert.equal(deep.error, "no such file or directory");
      // Generous: the quadratic version took seconds for 100,000 chars.
      assert.ok(performance.now() - started < 15_000);
    },
  );
});

Deno.test("security: served results stop filling the spool for a peer that does not take them", async () => {
  const base = await Deno.realPath(
    await Deno.makeTempDir({ prefix: "awp-sec-spool-" }),
  );
  const mib = 1024 * 1024;
  await Deno.mkdir(`${base}/root`);
  await Deno.writeFile(`${base}/root/big.bin`, new Uint8Array(900 * 1024));
  const daemon = await startDaemon(`${base}/.awp`, [
    "--serve",
    "fs:read",
    "--root",
    `${base}/root`,
    "--max-blob",
    String(mib),
    "--max-unfinished-blob-bytes",
    String(2 * mib),
  ]);
  const clientHome = `${base}/client`;
  try {
    // The client asks for four 900 KiB results, then goes away at once.
    let client = await Peer.open({ home: clientHome, name: "taker" });
    await client.connect(daemon.addr);
    await daemon.ok(["grant", "--ttl", "10m", client.key, "fs:read"]);
    let events = new EventLog(client, 20_000);
    await events.until(() => events.of("grant").length > 0, "the grant");
    const { id } = await client.send(daemon.key, "", {
      parts: Array.from({ length: 4 }, () => ({
        k: "data",
        mime: FS_READ,
        data: { path: "big.bin" },
      } as Part)),
    });
    await client.waitAck(id);
    await client.close();
    await events.done;
    await new Promise((r) => setTimeout(r, 2000)); // served meanwhile
    client = await Peer.open({ home: clientHome, name: "taker" });
    events = new EventLog(client, 20_000);
    // Peer.open may redial the daemon itself (an open thread): either wins.
    await client.connect(daemon.addr).catch(() => {});
    const results = () =>
      events.of("message").filter((m) => m.re === id).map((m) =>
        (m.parts.find((p) => p.k === "data") as {
          data: Record<string, unknown>;
        })
          .data
      );
    await events.until(() => results().length === 4, "four results");
    const sent = results().filter((r) => r.blob !== undefined).length;
    const refused = results().filter((r) =>
      /unacked blobs to this peer would pass/.test(String(r.error))
    ).length;
    assert.equal(sent, 2, JSON.stringify(results()));
    assert.equal(refused, 2);
    await client.close();
    await events.done;
  } finally {
    await daemon.stop();
    await Deno.remove(base, { recursive: true }).catch(() => {});
  }
});
