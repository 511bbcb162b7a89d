/**
 * The daemon binds its listen addresses before it opens its peer (like a
 * listening driver, conn2): a peer that dials while the daemon starts waits
 * in the socket's backlog and is answered once the daemon is up, and a
 * daemon that fails to start leaves no socket file behind. Real daemon
 * processes; the daemon is held at its start by a `config.json` that is a
 * FIFO (the daemon reads it after binding the flags' addresses and before
 * it opens its store), released by the test writing it.
 */

import assert from "node:assert/strict";
import { Peer } from "../../peer/peer.ts";

const CLI = new URL("../../cli.ts", import.meta.url).pathname;

/** Starts `awp daemon` (the foreground daemon) in `home`. */
function startDaemon(home: string, args: string[]): Deno.ChildProcess {
  return new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      "--unstable-kv",
      CLI,
      "daemon",
      "--home",
      home,
      ...args,
    ],
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
    env: { NO_COLOR: "1" },
  }).spawn();
}

async function exists(path: string): Promise<boolean> {
  try {
    await Deno.lstat(path);
    return true;
  } catch {
    return false;
  }
}

/** Waits (at most 20 s) until `path` exists; false if it never did. */
async function appears(path: string): Promise<boolean> {
  const deadline = Date.now() + 20_000;
  while (Date.now() < deadline) {
    if (await exists(path)) return true;
    await new Promise((r) => setTimeout(r, 20));
  }
  return false;
}

async function mkfifo(path: string): Promise<void> {
  const r = await new Deno.Command("mkfifo", { args: [path] }).output();
  assert.equal(r.code, 0, new TextDecoder().decode(r.stderr));
}

/**
 * A daemon listening on a unix socket in a new temp dir, held at its start
 * by a FIFO `config.json` (released when the test writes it).
 */
async function daemonHeldAtStart(): Promise<
  { dir: string; home: string; socket: string; daemon: Deno.ChildProcess }
> {
  const dir = await Deno.makeTempDir({ prefix: "awp-daemon-bind-" });
  const home = `${dir}/home`;
  const socket = `${dir}/peer.sock`;
  await Deno.mkdir(home, { mode: 0o700 });
  await mkfifo(`${home}/config.json`);
  const daemon = startDaemon(home, ["--listen", `unix:${socket}`]);
  return { dir, home, socket, daemon };
}

async function down(home: string): Promise<void> {
  await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--unstable-kv", CLI, "down", "--home", home],
    stdin: "null",
    stdout: "null",
    stderr: "null",
  }).output();
}

Deno.test("awp daemon: a peer that dials before the daemon's peer is open is served once it is", async () => {
  const { dir, home, socket, daemon } = await daemonHeldAtStart();
  const dialer = await Peer.open({ memory: true });
  let stopped = false;
  try {
    // Bound while the daemon still waits for its config.json.
    assert.ok(await appears(socket), "the daemon never bound its socket");
    let settled = false;
    const connected = dialer.connect(`unix:${socket}`).finally(() =>
      settled = true
    );
    // The daemon cannot answer yet: it is blocked reading its config.
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(settled, false);
    await Deno.writeTextFile(`${home}/config.json`, "{}\n");
    const key = await connected;
    assert.match(key, /^ed25519:/);
    await down(home);
    const out = await daemon.output();
    stopped = true;
    assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
  } finally {
    await dialer.close();
    if (!stopped) {
      // Failed: the daemon may still wait for its config.
      daemon.kill("SIGKILL");
      await daemon.output();
    }
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("awp daemon: a daemon that fails to start removes the unix socket it bound", async () => {
  const { dir, home, socket, daemon } = await daemonHeldAtStart();
  let stopped = false;
  try {
    assert.ok(await appears(socket), "the daemon never bound its socket");
    await Deno.writeTextFile(`${home}/config.json`, "not json\n");
    const out = await daemon.output();
    stopped = true;
    assert.equal(out.code, 1);
    assert.match(new TextDecoder().decode(out.stderr), /config\.json/);
    assert.equal(await exists(socket), false, "the socket file was left");
  } finally {
    if (!stopped) {
      daemon.kill("SIGKILL");
      await daemon.output();
    }
    await Deno.remove(dir, { recursive: true });
  }
});
