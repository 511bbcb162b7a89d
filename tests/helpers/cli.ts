/**
 * The CLI as real processes, for end-to-end tests: run `awp` in a home,
 * expect success or one clear error line, and run two daemons that talk
 * over loopback.
 *
 * @module
 */

import assert from "node:assert/strict";

/** The CLI's entry point, run as `deno run -A --unstable-kv MOD ...`. */
export const MOD = new URL("../../mod.ts", import.meta.url).pathname;

/** Deno's own line for each package it fetches into an empty cache (colors allowed). */
// deno-lint-ignore no-control-regex
const DENO_DOWNLOAD = /^(\x1b\[[0-9;]*m)*Download(\x1b\[[0-9;]*m)* https?:\/\//;

/** What one CLI run gave back. */
export interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * Runs `awp ARGS --home HOME` to its end (stdin optional); after a `--` in
 * ARGS nothing is a flag, so there `--home` goes before the command.
 */
export async function awp(
  home: string,
  args: string[],
  stdin?: string,
  env: Record<string, string> = {},
): Promise<Run> {
  const argv = args.includes("--")
    ? ["--home", home, ...args]
    : [...args, "--home", home];
  return await awpArgs(argv, stdin, env);
}

/** Runs `awp ARGS` exactly as given (no `--home` added) to its end. */
export async function awpArgs(
  args: string[],
  stdin?: string,
  env: Record<string, string> = {},
): Promise<Run> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--unstable-kv", MOD, ...args],
    stdin: stdin === undefined ? "null" : "piped",
    stdout: "piped",
    stderr: "piped",
    env: { NO_COLOR: "1", ...env },
  }).spawn();
  if (stdin !== undefined) {
    const w = child.stdin.getWriter();
    await w.write(new TextEncoder().encode(stdin));
    await w.close();
  }
  const out = await child.output();
  return {
    code: out.code,
    stdout: new TextDecoder().decode(out.stdout),
    stderr: withoutDownloads(new TextDecoder().decode(out.stderr)),
  };
}

/** Stderr without Deno's own download lines (a cold cache), which are not ours. */
export function withoutDownloads(stderr: string): string {
  return stderr.split("\n").filter((line) => !DENO_DOWNLOAD.test(line))
    .join("\n");
}

/** Runs the CLI, asserts exit 0 and resolves with stdout. */
export async function ok(
  home: string,
  args: string[],
  stdin?: string,
  env?: Record<string, string>,
): Promise<string> {
  const r = await awp(home, args, stdin, env);
  assert.equal(
    r.code,
    0,
    `awp ${args.join(" ")} failed (${r.code}): ${r.stderr}${r.stdout}`,
  );
  return r.stdout;
}

/** Runs the CLI with `--json`, asserts exit 0 and parses stdout. */
export async function okJson<T = Record<string, unknown>>(
  home: string,
  args: string[],
): Promise<T> {
  return JSON.parse(await ok(home, [...args, "--json"])) as T;
}

/** A bad input: this exit code, exactly one line on stderr naming `pattern`. */
export async function fails(
  home: string,
  args: string[],
  code: number,
  pattern: RegExp,
): Promise<void> {
  const r = await awp(home, args);
  assert.equal(
    r.code,
    code,
    `awp ${args.join(" ")}: expected exit ${code}, got ${r.code}: ${r.stderr}`,
  );
  const lines = r.stderr.trimEnd().split("\n");
  assert.equal(lines.length, 1, `one line expected, got: ${r.stderr}`);
  assert.match(lines[0], pattern);
}

/** Stops the home's daemon, by `awp down`, else by `kill -9` of the pid in its lock. */
export async function down(home: string): Promise<void> {
  await awp(home, ["down"]).catch(() => {});
  // Kill a daemon that did not stop (its pid is in the lock file).
  const pid = Number(
    (await Deno.readTextFile(`${home}/daemon.lock`).catch(() => "")).trim(),
  );
  if (pid > 0) {
    try {
      Deno.kill(pid, "SIGKILL");
    } catch { /* already gone */ }
  }
}

/** The parts of `awp status --json` the tests read. */
export interface Status {
  key: string;
  pid: number;
  addrs: string[];
  queued: number;
  peers: Array<
    { key: string; name?: string; connected: boolean; queued: number }
  >;
}

/** Runs `fn` with two daemons (alice and bob) on loopback TCP, stopped and removed after. */
export async function twoPeers(
  fn: (
    a: { home: string; status: Status },
    b: { home: string; status: Status },
  ) => Promise<void>,
  extraB: string[] = [],
): Promise<void> {
  const ha = await Deno.makeTempDir({ prefix: "awp-cli-a-" });
  const hb = await Deno.makeTempDir({ prefix: "awp-cli-b-" });
  try {
    await ok(ha, ["up", "--name", "alice", "--listen", "tcp:127.0.0.1:0"]);
    await ok(hb, [
      "up",
      "--name",
      "bob",
      "--listen",
      "tcp:127.0.0.1:0",
      ...extraB,
    ]);
    const sa = await okJson<Status>(ha, ["status"]);
    const sb = await okJson<Status>(hb, ["status"]);
    await fn({ home: ha, status: sa }, { home: hb, status: sb });
  } finally {
    await down(ha);
    await down(hb);
    await Deno.remove(ha, { recursive: true }).catch(() => {});
    await Deno.remove(hb, { recursive: true }).catch(() => {});
  }
}
