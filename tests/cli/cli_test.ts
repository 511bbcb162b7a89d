// End to end through the CLI, as real processes: two homes in temp dirs,
// each with its own daemon on tcp 127.0.0.1 port 0, talking over real
// sockets and storing in real Deno KV files.

import assert from "node:assert/strict";

import {
  awp,
  down,
  fails,
  MOD,
  ok,
  okJson,
  type Status,
  twoPeers,
  withoutDownloads,
} from "../helpers/cli.ts";
import { until } from "../helpers/until.ts";

Deno.test("cli: connect, send code/data/file, wait, read, state done, threads, grants, bye", async () => {
  await twoPeers(async (a, b) => {
    // `awp up` starts its daemon with no Deno update check (CHILD_ENV).
    const environ = await Deno.readTextFile(`/proc/${a.status.pid}/environ`);
    assert.ok(environ.split("\0").includes("DENO_NO_UPDATE_CHECK=1"));
    const c = await okJson<{ key: string; already: boolean }>(b.home, [
      "connect",
      a.status.addrs[0],
    ]);
    assert.equal(c.key, a.status.key);
    assert.equal(c.already, false);
    const again = await okJson<{ already: boolean }>(b.home, [
      "connect",
      "alice",
    ]);
    assert.equal(again.already, true);

    const dir = await Deno.makeTempDir({ prefix: "awp-cli-files-" });
    try {
      await Deno.writeTextFile(`${dir}/main.ts`, "console.log(1);\n");
      const blob = new Uint8Array(300_000).map((_, i) => (i * 7919) % 251);
      await Deno.writeFile(`${dir}/data.bin`, blob);
      const sent = await okJson<
        { th: string; thread: string; id: string; acked: boolean }
      >(b.home, [
        "send",
        "-s",
        "Port the middleware",
        "--code",
        `${dir}/main.ts`,
        "--data",
        '{"branch":"feature/x"}',
        "--file",
        `${dir}/data.bin`,
        "--wait-ack",
        "10s",
        "alice",
        "please",
        "look",
      ]);
      assert.equal(sent.th, sent.thread);
      assert.equal(sent.acked, true);

      const waited = await okJson<
        { items: Array<Record<string, unknown>>; timedOut: boolean }
      >(a.home, [
        "wait",
        "--timeout",
        "20s",
      ]);
      assert.equal(waited.timedOut, false);
      const msg = waited.items.find((i) => i.event === "message")!;
      assert.equal(msg.text, "please look");
      assert.equal(msg.subject, "Port the middleware");
      assert.equal(msg.th, sent.th);
      const parts = msg.parts as Array<Record<string, unknown>>;
      assert.deepEqual(parts.find((p) => p.k === "code"), {
        k: "code",
        text: "console.log(1);\n",
        lang: "typescript",
      });
      assert.deepEqual(
        (parts.find((p) => p.k === "data") as { data: unknown }).data,
        { branch: "feature/x" },
      );
      const blobs = msg.blobs as Array<
        { status: string; path: string; size: number }
      >;
      assert.equal(blobs[0].status, "complete");
      assert.deepEqual(await Deno.readFile(blobs[0].path), blob);

      // wait marked it read: nothing unread any more.
      assert.equal(await ok(a.home, ["tail", "--once", "--json"]), "");
      assert.equal(
        await ok(a.home, ["tail", "--once"]),
        "no unread messages\n",
      );

      // alice answers from stdin in the thread, then says done.
      await ok(a.home, ["send", "--thread", sent.th, "-"], "on it\n");
      await ok(a.home, ["state", "-n", "merged", sent.th, "done"]);
      const done = await okJson<
        { matched: boolean; state: string; timedOut: boolean }
      >(b.home, [
        "wait",
        "--thread",
        sent.th,
        "--state",
        "done,failed",
        "--timeout",
        "20s",
      ]);
      // Either the msg or the state may end the wait first; wait again if needed.
      if (!done.matched) {
        const second = await okJson<{ matched: boolean }>(b.home, [
          "wait",
          "--thread",
          sent.th,
          "--state",
          "done,failed",
          "--timeout",
          "20s",
        ]);
        assert.equal(second.matched, true);
      }

      const read = await okJson<
        {
          items: Array<
            { dir: string; event: string; text?: string; state?: string }
          >;
        }
      >(
        b.home,
        ["read", sent.th],
      );
      assert.deepEqual(
        read.items.map((i) => `${i.dir} ${i.event} ${i.text ?? i.state}`),
        ["out message please look", "in message on it", "in state done"],
      );
      const human = await ok(b.home, ["read", sent.th]);
      assert.match(human, /alice \(.{8}\) \[thr_[0-9a-f]+\]: on it/);

      const threads = await okJson<
        {
          threads: Array<
            { th: string; theirs?: { state: string }; subject?: string }
          >;
        }
      >(
        b.home,
        ["threads"],
      );
      assert.equal(threads.threads.length, 1);
      assert.equal(threads.threads[0].theirs?.state, "done");
      assert.equal(threads.threads[0].subject, "Port the middleware");
      const open = await okJson<{ threads: unknown[] }>(b.home, [
        "threads",
        "--open",
      ]);
      assert.equal(open.threads.length, 0);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }

    // Grants: bob grants alice fs:read; alice holds it, bob issued it.
    const g = await okJson<{ hash: string }>(b.home, [
      "grant",
      "--ttl",
      "10m",
      "alice",
      "fs:read",
    ]);
    assert.match(g.hash, /^[0-9a-f]{64}$/);
    let held: Array<{ kind: string; hash: string }> = [];
    for (let i = 0; i < 50 && held.length === 0; i++) {
      held = (await okJson<{ grants: Array<{ kind: string; hash: string }> }>(
        a.home,
        ["grants"],
      )).grants
        .filter((x) => x.kind === "held");
      if (held.length === 0) await new Promise((r) => setTimeout(r, 100));
    }
    assert.equal(held[0]?.hash, g.hash);
    const peers = await okJson<{ peers: Array<{ caps: string[] }> }>(b.home, [
      "peers",
    ]);
    assert.deepEqual(peers.peers[0].caps, ["fs:read"]);
    await ok(b.home, ["revoke", g.hash.slice(0, 10)]);
    const issued =
      (await okJson<{ grants: Array<{ kind: string; revoked: boolean }> }>(
        b.home,
        ["grants"],
      )).grants;
    assert.equal(issued.find((x) => x.kind === "issued")?.revoked, true);

    // Alias, then bye by alias.
    await ok(b.home, ["alias", "alice", "al"]);
    const bye = await okJson<{ connected: boolean; key: string }>(b.home, [
      "bye",
      "--reason",
      "done",
      "al",
    ]);
    assert.equal(bye.connected, true);
    assert.equal(bye.key, a.status.key);
    // alice is told (a notice, printed by tail --once).
    let notices: Array<{ kind?: string; detail?: string }> = [];
    for (let i = 0; i < 50 && notices.length === 0; i++) {
      const out = await ok(a.home, ["tail", "--once", "--json"]);
      notices = out.trim().split("\n").filter(Boolean).map((l) => JSON.parse(l))
        .filter((n) => n.kind === "bye");
      if (notices.length === 0) await new Promise((r) => setTimeout(r, 100));
    }
    assert.equal(notices[0]?.detail, "done");
  });
});

Deno.test("cli: every bad input gets one line, a non-zero exit and queues nothing", async () => {
  await twoPeers(async (a, b) => {
    await ok(b.home, ["connect", a.status.addrs[0]]);
    const dir = await Deno.makeTempDir({ prefix: "awp-cli-bad-" });
    try {
      await Deno.writeFile(`${dir}/big.bin`, new Uint8Array(2048));
      await fails(b.home, ["connect", "tcp:nohost"], 2, /invalid address/);
      await fails(
        b.home,
        ["send", "nobody-here", "hi"],
        1,
        /unknown peer "nobody-here"/,
      );
      await fails(b.home, ["send", "ab", "hi"], 1, /at least 4 characters/);
      await fails(b.home, ["send", "tcp:999.1:x", "hi"], 2, /invalid address/);
      await fails(
        b.home,
        ["send", "--file", `${dir}/missing.txt`, "alice", "hi"],
        1,
        /no such file/,
      );
      await fails(
        b.home,
        ["send", "--code", dir, "alice", "hi"],
        1,
        /not a file|cannot read/,
      );
      await fails(
        b.home,
        ["send", "--data", "{oops", "alice", "hi"],
        2,
        /bad --data JSON/,
      );
      await fails(
        b.home,
        ["send", "--file", `${dir}/big.bin`, "alice", "hi"],
        1,
        /limit|too large|over/i,
      );
      await fails(b.home, ["listen", a.status.addrs[0]], 1, /in use/);
      await fails(
        b.home,
        ["grant", "alice", "root"],
        2,
        /unknown capability "root"/,
      );
      await fails(b.home, ["wait", "--timeout", "300ms"], 2, /timed out/);
      await fails(
        b.home,
        ["send", "--wait-ack", "soon", "alice", "x"],
        2,
        /bad duration/,
      );
      await fails(b.home, ["frobnicate"], 2, /unknown command/);
      await fails(
        b.home,
        ["send", "--bogus", "alice", "x"],
        2,
        /unknown flag --bogus/,
      );
      await fails(`${dir}/nohome`, ["status"], 3, /no daemon running/);
      await fails(
        b.home,
        ["daemon", "--listen", "tcp:127.0.0.1:0"],
        1,
        /already running/,
      );

      // Ambiguous: a second peer also announcing itself as "alice".
      const hc = await Deno.makeTempDir({ prefix: "awp-cli-c-" });
      try {
        await ok(hc, ["up", "--name", "alice", "--listen", "tcp:127.0.0.1:0"]);
        const sc = await okJson<Status>(hc, ["status"]);
        await ok(b.home, ["connect", sc.addrs[0]]);
        await fails(
          b.home,
          ["send", "alice", "hi"],
          1,
          /ambiguous peer "alice"/,
        );
      } finally {
        await down(hc);
        await Deno.remove(hc, { recursive: true }).catch(() => {});
      }

      // Nothing was queued by any of it.
      const s = await okJson<Status>(b.home, ["status"]);
      assert.equal(s.queued, 0);
      const threads = await okJson<{ threads: unknown[] }>(b.home, ["threads"]);
      assert.equal(threads.threads.length, 0);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  }, ["--max-blob", "1024"]);
});

Deno.test("cli: version, schema and help need no daemon", async () => {
  const home = await Deno.makeTempDir({ prefix: "awp-cli-v-" });
  try {
    assert.match(
      await ok(home, ["version"]),
      /^awp \d+\.\d+\.\d+ \(protocol v0\)\n$/,
    );
    const schema = JSON.parse(await ok(home, ["schema"]));
    assert.equal(typeof schema, "object");
    assert.match(await ok(home, ["send", "--help"]), /usage: awp send/);
    assert.match(await ok(home, ["driver", "--help"]), /usage: awp driver/);
    // No daemon was started by any of it.
    await assert.rejects(Deno.stat(`${home}/daemon.lock`));
  } finally {
    await Deno.remove(home, { recursive: true });
  }
});

Deno.test("cli: without --unstable-kv the daemon re-executes itself once; default listeners; long home", async () => {
  const root = await Deno.makeTempDir({ prefix: "awp-cli-kv-" });
  // A home too long for a Unix socket path: sockets fall back to /tmp/awp-<uid>/.
  const home = `${root}/${"h".repeat(60)}/${"o".repeat(60)}`;
  const config = `${root}/nokv.json`;
  const main = JSON.parse(
    await Deno.readTextFile(new URL("../../deno.json", import.meta.url)),
  );
  await Deno.writeTextFile(config, JSON.stringify({ imports: main.imports }));
  // The project's lockfile beside the config: without it Deno must resolve
  // every npm version range again (and fetch registry metadata to do so).
  await Deno.copyFile(
    new URL("../../deno.lock", import.meta.url),
    `${root}/deno.lock`,
  );
  const run = (env: Record<string, string>, args: string[]) =>
    new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", "--config", config, MOD, ...args],
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
      env,
    });
  try {
    // Already re-executed once and still no KV: one clear line, exit 1.
    const refused = await run({ AWP_REEXECUTED: "1" }, [
      "daemon",
      "--home",
      home,
    ]).output();
    assert.equal(refused.code, 1);
    // With a cold cache Deno itself reports what it fetches (`Download URL`)
    // before our program runs; everything else is ours and must be one line.
    const err = withoutDownloads(new TextDecoder().decode(refused.stderr))
      .trimEnd().split("\n");
    assert.equal(err.length, 1, err.join("\n"));
    assert.match(err[0], /needs Deno KV.*--unstable-kv/);

    // No command: the foreground daemon, re-executed with --unstable-kv.
    const child = run({}, ["--home", home]).spawn();
    try {
      let status: Status | undefined;
      for (let i = 0; i < 60 && !status; i++) {
        const r = await awp(home, ["status", "--json"]);
        if (r.code === 0) status = JSON.parse(r.stdout);
        else await new Promise((res) => setTimeout(res, 100));
      }
      assert.ok(status, "the daemon came up");
      assert.equal(status.addrs.length, 2);
      assert.match(
        status.addrs[0],
        /^unix:\/tmp\/awp-[^/]+\/[0-9a-f]{16}-awp\.sock$/,
      );
      assert.match(status.addrs[1], /^tcp:127\.0\.0\.1:70\d\d$/);
      const mode = (await Deno.stat(
        status.addrs[0].slice(5).replace("awp.sock", "control.sock"),
      )).mode! & 0o777;
      assert.equal(mode, 0o600);
      // The re-executed daemon makes no Deno update check (CHILD_ENV).
      const environ = await Deno.readTextFile(`/proc/${status.pid}/environ`);
      assert.ok(environ.split("\0").includes("DENO_NO_UPDATE_CHECK=1"));
      await ok(home, ["down"]);
      const out = await child.output();
      assert.equal(out.code, 0);
      assert.match(
        new TextDecoder().decode(out.stdout),
        new RegExp(status.key),
      );
    } finally {
      try {
        child.kill("SIGKILL");
      } catch { /* exited */ }
      await down(home);
    }
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

interface InspectedActor {
  id: string;
  kind: string;
  label: string;
  parentId?: string;
  status: string;
  active: string[];
}

Deno.test("cli: inspect attaches to a daemon started without --inspect; the tree is complete at once", async () => {
  await twoPeers(async (a, b) => {
    await ok(b.home, ["connect", a.status.addrs[0]]);
    const before = await okJson<Status & { inspector?: string }>(a.home, [
      "status",
    ]);
    assert.equal(before.inspector, undefined, "inspection starts off");
    const url = (await ok(a.home, ["inspect"])).trim();
    assert.match(url, /^http:\/\/127\.0\.0\.1:\d+\/$/);
    // Asked again: the same server.
    assert.equal((await ok(a.home, ["inspect"])).trim(), url);
    const s = await okJson<Status & { inspector?: string }>(a.home, [
      "status",
    ]);
    assert.equal(s.inspector, url);
    const actors = async () =>
      await (await fetch(new URL("api/actors", url)))
        .json() as InspectedActor[];
    // The supervisor and the connection that existed before the attach.
    const tree = await actors();
    const sup = tree.find((x) => x.kind === "supervisor");
    assert.ok(sup, `a supervisor: ${JSON.stringify(tree)}`);
    const conn = tree.find((x) =>
      x.kind === "connection" && x.active.includes("connection.open")
    );
    assert.ok(conn, `an open connection: ${JSON.stringify(tree)}`);
    assert.equal(conn.parentId, sup.id);
    assert.equal(conn.label, "peer bob");
    // A thread created after the attach hangs under the connection.
    await ok(b.home, ["send", "--wait-ack", "10s", "alice", "hello"]);
    const thread = await until(
      "a thread actor",
      async () => (await actors()).find((x) => x.kind === "thread"),
    );
    assert.equal(thread.parentId, conn.id);
    assert.equal(thread.label, "thread hello");
  });
});

Deno.test("cli: inspect serves the live inspector of the daemon, starting it when it is down", async () => {
  const home = await Deno.makeTempDir({ prefix: "awp-cli-i-" });
  try {
    await ok(home, ["up", "--listen", "tcp:127.0.0.1:0"]);
    await fails(
      home,
      ["inspect", "--inspect=127.0.0.1:99999"],
      2,
      /bad --inspect address "127\.0\.0\.1:99999"/,
    );
    await ok(home, ["down"]);
    // Not running: inspect starts it with the inspector on (listeners remembered).
    const url = (await ok(home, ["inspect"])).trim();
    assert.match(url, /^http:\/\/127\.0\.0\.1:\d+\/$/);
    const page = await fetch(url);
    assert.equal(page.status, 200);
    assert.match(await page.text(), /<html|<!doctype/i);
    const s = await okJson<Status & { inspector?: string }>(home, ["status"]);
    assert.equal(s.inspector, url);
    assert.match(s.addrs[0], /^tcp:127\.0\.0\.1:\d+$/);
  } finally {
    await down(home);
    await Deno.remove(home, { recursive: true });
  }
});

Deno.test("cli: daemon flags, --store, config.json and the new commands check their input without a daemon", async () => {
  const home = await Deno.makeTempDir({ prefix: "awp-cli-flags-" });
  try {
    await fails(home, ["up", "--store", "notaurl"], 2, /bad --store "notaurl"/);
    await fails(home, ["daemon", "--store", "ftp://x/y"], 2, /bad --store/);
    await fails(
      home,
      [
        "driver",
        "--state",
        `${home}/d`,
        "--store",
        "kv:nope",
        "listen",
        "tcp:127.0.0.1:0",
      ],
      2,
      /bad --store/,
    );
    // A well-formed URL still needs the KV Connect token.
    const noToken = await awp(
      home,
      ["up", "--store", "https://kv.example/db"],
      undefined,
      {
        DENO_KV_ACCESS_TOKEN: "",
      },
    );
    assert.equal(noToken.code, 2);
    assert.match(
      noToken.stderr.trim(),
      /^awp: --store needs DENO_KV_ACCESS_TOKEN/,
    );
    await fails(home, ["up", "--accept", "maybe"], 2, /bad --accept "maybe"/);
    await fails(home, ["up", "--serve", "exec,root"], 2, /bad --serve "root"/);
    await fails(home, ["up", "--trust", "nope"], 2, /bad --trust "nope"/);
    await fails(home, ["up", "--listen", "tcp:x"], 2, /bad --listen/);
    await fails(
      home,
      ["share", "--stop", "bob"],
      2,
      /hosts or --stop, not both/,
    );
    await fails(home, ["private"], 2, /missing thread/);
    await fails(home, ["presence", "extra"], 2, /unexpected argument "extra"/);
    for (const cmd of ["up", "presence", "share", "private", "mirrored"]) {
      assert.match(
        await ok(home, [cmd, "--help"]),
        new RegExp(`usage: awp ${cmd}`),
      );
    }
    assert.match(
      await ok(home, ["up", "--help"]),
      /config\.json[\s\S]*"presence": true/,
    );
    assert.match(
      await ok(home, ["daemon", "--help"]),
      /--store URL[\s\S]*KV Connect/,
    );
    // None of it started a daemon.
    await assert.rejects(Deno.stat(`${home}/daemon.lock`));

    // A broken config.json: the daemon refuses to start with one line.
    await Deno.writeTextFile(`${home}/config.json`, '{"presence": "yes"}');
    await fails(
      home,
      ["up"],
      1,
      /config\.json: "presence" must be true or false/,
    );
    await Deno.writeTextFile(`${home}/config.json`, "{oops");
    await fails(home, ["up"], 1, /config\.json is not JSON/);
  } finally {
    await down(home);
    await Deno.remove(home, { recursive: true });
  }
});

interface PresenceList {
  publishing: boolean;
  relaying: boolean;
  docs: Array<
    { origin: string; name?: string; hops: number; seq: number; age_ms: number }
  >;
}

Deno.test("cli: presence three ways and --no-relay, sharing and private, admission and served in the log", async () => {
  const ha = await Deno.makeTempDir({ prefix: "awp-cli-pa-" });
  const hb = await Deno.makeTempDir({ prefix: "awp-cli-pb-" });
  const hc = await Deno.makeTempDir({ prefix: "awp-cli-pc-" });
  const root = await Deno.makeTempDir({ prefix: "awp-cli-root-" });
  try {
    // alice: presence and no relaying from config.json (and her name).
    await Deno.writeTextFile(
      `${ha}/config.json`,
      JSON.stringify({ name: "alice", presence: true, relay: false }),
    );
    await ok(ha, ["up", "--listen", "tcp:127.0.0.1:0"]);
    // bob: presence from the environment; serves fs:read under a root.
    await Deno.writeTextFile(`${root}/notes.txt`, "hello from the root\n");
    await ok(
      hb,
      [
        "up",
        "--name",
        "bob",
        "--listen",
        "tcp:127.0.0.1:0",
        "--serve",
        "fs:read",
        "--root",
        root,
      ],
      undefined,
      { AWP_PRESENCE: "1" },
    );
    // carol: presence from the flag.
    await ok(hc, [
      "up",
      "--name",
      "carol",
      "--listen",
      "tcp:127.0.0.1:0",
      "--presence",
    ]);
    const sa = await okJson<Status>(ha, ["status"]);
    const sb = await okJson<Status>(hb, ["status"]);
    const sc = await okJson<Status>(hc, ["status"]);
    assert.equal(
      (await okJson<{ name: string }>(ha, ["status"])).name,
      "alice",
    );
    await ok(hb, ["connect", sa.addrs[0]]);
    await ok(hc, ["connect", sa.addrs[0]]);

    // alice holds bob's and carol's documents, first hand.
    const atAlice = await until("alice to hold two documents", async () => {
      const p = await okJson<PresenceList>(ha, ["presence"]);
      return p.docs.length >= 2 ? p : undefined;
    });
    assert.equal(atAlice.publishing, true);
    assert.equal(atAlice.relaying, false);
    assert.deepEqual(
      atAlice.docs.map((d) => `${d.name} ${d.origin} ${d.hops}`).sort(),
      [`bob ${sb.key} 0`, `carol ${sc.key} 0`],
    );
    assert.match(
      await ok(ha, ["presence"]),
      /bob \(.{8}\) {2}seq \d+ {2}hops 0 {2}age \d+s/,
    );
    // bob holds alice's (config.json turned it on) but never carol's: alice does not relay.
    await until("bob to hold alice's document", async () => {
      const p = await okJson<PresenceList>(hb, ["presence"]);
      return p.docs.some((d) => d.origin === sa.key) ? p : undefined;
    });
    await new Promise((r) => setTimeout(r, 3000)); // past the 2 s settle delay
    const atBob = await okJson<PresenceList>(hb, ["presence"]);
    assert.equal(atBob.publishing, true);
    assert.deepEqual(atBob.docs.map((d) => d.origin), [sa.key]);

    // Admission under accept any: one log line per new key.
    const logA = await Deno.readTextFile(`${ha}/daemon.log`);
    assert.match(logA, new RegExp(`admission admitted ${sb.key} \\(any\\)`));
    assert.match(logA, new RegExp(`admission admitted ${sc.key} \\(any\\)`));

    // Served: bob grants alice fs:read; her request is served and logged.
    await ok(hb, ["grant", "--ttl", "10m", "alice", "fs:read"]);
    await ok(ha, [
      "send",
      "--data",
      '{"path":"notes.txt"}',
      "--mime",
      "application/vnd.awp.fs-read+json",
      "bob",
      "read this",
    ]);
    await until("bob to log the served request", async () => {
      const log = await Deno.readTextFile(`${hb}/daemon.log`);
      return /served fs:read for .* ok in \d+ms/.test(log) ? log : undefined;
    });

    // Sharing: alice mirrors to carol; her thread with bob shows up there.
    assert.equal(await ok(ha, ["share"]), "not sharing\n");
    const shared = await okJson<{ sharing: Array<{ key: string }> }>(ha, [
      "share",
      "carol",
    ]);
    assert.deepEqual(shared.sharing.map((h) => h.key), [sc.key]);
    assert.match(await ok(ha, ["share"]), /^sharing with carol \(/);
    const sent = await okJson<{ th: string }>(ha, [
      "send",
      "--wait-ack",
      "10s",
      "bob",
      "mirrored hello",
    ]);
    const mirrored = await until(
      "carol to hold the mirrored thread",
      async () => {
        const r = await okJson<
          { threads: Array<{ th: string; sharer: string; of: string }> }
        >(
          hc,
          ["mirrored"],
        );
        return r.threads.find((t) => t.th === sent.th);
      },
    );
    assert.equal(mirrored.sharer, sa.key);
    assert.equal(mirrored.of, sb.key);
    assert.match(
      await ok(hc, ["mirrored", "--sharer", "alice", sent.th]),
      /alice \(.{8}\): mirrored hello/,
    );
    // Nothing mixed into carol's own threads.
    assert.equal(
      (await okJson<{ threads: unknown[] }>(hc, ["threads"])).threads.length,
      0,
    );

    // private: carol forgets the thread.
    assert.match(
      await ok(ha, ["private", sent.th]),
      new RegExp(`${sent.th} private with bob`),
    );
    await until("carol to forget the private thread", async () => {
      const r = await okJson<{ threads: Array<{ th: string }> }>(hc, [
        "mirrored",
      ]);
      return r.threads.some((t) => t.th === sent.th) ? undefined : true;
    });
    await fails(hc, ["mirrored", sent.th], 1, /no mirrored thread/);
    assert.deepEqual(await okJson(ha, ["share", "--stop"]), { sharing: [] });
  } finally {
    await down(ha);
    await down(hb);
    await down(hc);
    for (const d of [ha, hb, hc, root]) {
      await Deno.remove(d, { recursive: true }).catch(() => {});
    }
  }
});
