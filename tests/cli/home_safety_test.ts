// The home holds the private key: every file in it is private, a store that
// others can read is refused (as ssh refuses a private key), and a damaged
// or emptied store is never quietly replaced by a new identity. Real
// daemons, real Deno KV files.

import assert from "node:assert/strict";
import {
  awp,
  down,
  fails,
  MOD,
  ok,
  okJson,
  type Status,
} from "../helpers/cli.ts";
import {
  HomeNotDirectoryError,
  openStore,
  StoreDamagedError,
  StorePermissionsError,
} from "../../storage/open_store.ts";

/** Every entry under `dir` with its permission bits, sockets included. */
async function modes(dir: string): Promise<Map<string, number>> {
  const found = new Map<string, number>();
  for await (const entry of Deno.readDir(dir)) {
    const path = `${dir}/${entry.name}`;
    const info = await Deno.lstat(path);
    found.set(path, (info.mode ?? 0) & 0o777);
    if (info.isDirectory) {
      for (const [p, m] of await modes(path)) found.set(p, m);
    }
  }
  return found;
}

Deno.test("home: every file the daemon makes is 0600 (dirs 0700), even in an existing 0755 home", async () => {
  const dir = await Deno.makeTempDir({ prefix: "awp-home-modes-" });
  // As in the report: existing homes that other users may list.
  const [ha, hb] = [`${dir}/a`, `${dir}/b`];
  for (const home of [ha, hb]) await Deno.mkdir(home, { mode: 0o755 });
  await Deno.chmod(ha, 0o755);
  await Deno.chmod(hb, 0o755);
  try {
    await ok(ha, ["up", "--name", "alice", "--listen", "tcp:127.0.0.1:0"]);
    await ok(hb, ["up", "--name", "bob"]); // default listeners: awp.sock too
    const sa = await okJson<Status>(ha, ["status"]);
    await ok(hb, ["connect", sa.addrs[0]]);
    const file = `${dir}/report.txt`;
    await Deno.writeTextFile(file, "x".repeat(70_000));
    await ok(hb, [
      "send",
      "--file",
      file,
      "--wait-ack",
      "30s",
      "alice",
      "a file",
    ]);
    let received = false;
    for (let i = 0; i < 200 && !received; i++) {
      const r = await okJson<{ blobs: Array<{ status: string }> }>(ha, [
        "blobs",
      ]);
      received = r.blobs.some((x) => x.status === "complete");
      if (!received) await new Promise((r) => setTimeout(r, 100));
    }
    assert.ok(received, "the file arrived");
    for (const home of [ha, hb]) {
      const found = await modes(home);
      for (
        const name of [
          "awp.kv",
          "awp.kv-wal",
          "awp.kv-shm",
          "daemon.lock",
          "daemon.log",
          "control.sock",
        ]
      ) {
        assert.ok(found.has(`${home}/${name}`), `${name} in ${home}`);
      }
      for (const [path, mode] of found) {
        assert.equal(
          mode & 0o077,
          0,
          `${path} is ${mode.toString(8)}: others can read it`,
        );
      }
    }
    assert.ok(
      [...(await modes(ha)).keys()].some((p) => p.startsWith(`${ha}/blobs/`)),
      "a received file is among those checked",
    );
    assert.ok((await modes(hb)).has(`${hb}/awp.sock`), "the peer socket too");
  } finally {
    await down(ha);
    await down(hb);
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("home: a store readable by others is refused with the chmod to run; after it, the same identity", async () => {
  const home = await Deno.makeTempDir({ prefix: "awp-home-perm-" });
  try {
    const before = await okJson<Status>(home, [
      "up",
      "--listen",
      "tcp:127.0.0.1:0",
    ]);
    await ok(home, ["down"]);
    await Deno.chmod(`${home}/awp.kv`, 0o644);
    await fails(
      home,
      ["up"],
      1,
      new RegExp(
        `permissions 0644 for ${home}/awp\\.kv are too open.*chmod 600 ${home}/awp\\.kv`,
      ),
    );
    // Nothing was changed by the refusal.
    assert.equal((await Deno.stat(`${home}/awp.kv`)).mode! & 0o777, 0o644);
    await Deno.chmod(`${home}/awp.kv`, 0o600);
    const after = await okJson<Status>(home, ["up"]);
    assert.equal(after.key, before.key);
  } finally {
    await down(home);
    await Deno.remove(home, { recursive: true });
  }
});

Deno.test("home: an emptied or damaged store is refused, never replaced; awp reset starts over on purpose", async () => {
  const home = await Deno.makeTempDir({ prefix: "awp-home-dmg-" });
  try {
    const first = await okJson<Status>(home, [
      "up",
      "--listen",
      "tcp:127.0.0.1:0",
    ]);
    await ok(home, ["down"]);
    const store = `${home}/awp.kv`;
    const good = await Deno.readFile(store);

    for (
      const [damage, why] of [
        [new Uint8Array(0), "it is empty \\(0 bytes\\)"],
        [
          new TextEncoder().encode("not a database ".repeat(300)),
          "it is not a Deno KV database",
        ],
      ] as const
    ) {
      for (const f of [`${store}-wal`, `${store}-shm`]) {
        await Deno.remove(f).catch(() => {});
      }
      await Deno.writeFile(store, damage);
      await fails(
        home,
        ["up"],
        1,
        new RegExp(
          `the store ${store} is damaged: ${why}.*restore it.*awp reset --home ${home}`,
        ),
      );
      // Still the damaged file: nothing replaced it.
      assert.deepEqual(await Deno.readFile(store), damage);
    }

    // Restoring the file brings the same identity back.
    await Deno.writeFile(store, good);
    assert.equal((await okJson<Status>(home, ["up"])).key, first.key);

    // reset refuses while the daemon runs, and needs --home named.
    await fails(home, ["reset"], 1, /daemon .* is running: stop it first/);
    const noHome = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", "--unstable-kv", MOD, "reset"],
      env: { AWP_HOME: home, NO_COLOR: "1" },
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert.equal(noHome.code, 2);
    assert.match(
      new TextDecoder().decode(noHome.stderr),
      new RegExp(`awp reset --home ${home}`),
    );
    await ok(home, ["down"]);
    const moved = await okJson<{ moved: string[] }>(home, ["reset"]);
    assert.ok(moved.moved.length >= 1);
    assert.match(moved.moved[0], /awp\.kv\.[0-9TZ-]+\.bak$/);
    assert.deepEqual(await Deno.readFile(moved.moved[0]), good);
    const fresh = await okJson<Status>(home, ["up"]);
    assert.notEqual(fresh.key, first.key);
  } finally {
    await down(home);
    await Deno.remove(home, { recursive: true });
  }
});

Deno.test("home: a home whose path is a file is named in the error", async () => {
  const dir = await Deno.makeTempDir({ prefix: "awp-home-file-" });
  const home = `${dir}/not-a-dir`;
  await Deno.writeTextFile(home, "x");
  try {
    for (const args of [["up"], ["status"], ["daemon"], ["send", "x", "y"]]) {
      await fails(
        home,
        args,
        1,
        new RegExp(`the awp home ${home} is a file, not a directory`),
      );
    }
    assert.equal(await Deno.readTextFile(home), "x");
    const inside = await awp(`${home}/sub`, ["up"]);
    assert.equal(inside.code, 1);
    assert.match(
      inside.stderr,
      /is a file, not a directory \(or is inside one\)/,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("openStore: 0600 whatever the umask; too-open, empty and foreign stores are refused by type", async () => {
  const home = await Deno.makeTempDir({ prefix: "awp-home-lib-" });
  const before = Deno.umask(0);
  try {
    const store = await openStore({ home });
    await store.identity(() => new Uint8Array(32).fill(7));
    store.close();
  } finally {
    Deno.umask(before);
  }
  try {
    const path = `${home}/awp.kv`;
    assert.equal((await Deno.stat(path)).mode! & 0o777, 0o600);
    await Deno.chmod(path, 0o640);
    await assert.rejects(openStore({ home }), StorePermissionsError);
    await Deno.chmod(path, 0o600);
    await Deno.writeFile(path, new Uint8Array(0));
    for (const f of [`${path}-wal`, `${path}-shm`]) {
      await Deno.remove(f).catch(() => {});
    }
    await assert.rejects(openStore({ home }), StoreDamagedError);
    assert.equal((await Deno.stat(path)).size, 0, "left as it was");
    await Deno.writeTextFile(`${home}/file`, "x");
    await assert.rejects(
      openStore({ home: `${home}/file` }),
      HomeNotDirectoryError,
    );
  } finally {
    await Deno.remove(home, { recursive: true });
  }
});
