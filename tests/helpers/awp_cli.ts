/**
 * Runs the real `awp` CLI (mod.ts) as a child process against a home, for
 * end-to-end tests: each call is a fresh process, daemons run in the
 * background as users start them.
 *
 * @module
 */

import assert from "node:assert/strict";

/** mod.ts, the CLI's entry point. */
export const AWP_MOD = new URL("../../mod.ts", import.meta.url).pathname;

/** What one CLI run printed and returned. */
export interface AwpRun {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * Runs `awp ARGS --home HOME`, with `stdin` piped in when given.
 *
 * @example
 * ```ts ignore
 * import { awp } from "./awp_cli.ts";
 * const r = await awp("/tmp/h", ["version"]);
 * ```
 */
export async function awp(
  home: string,
  args: string[],
  options: { stdin?: string; env?: Record<string, string> } = {},
): Promise<AwpRun> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--unstable-kv", AWP_MOD, ...args, "--home", home],
    stdin: options.stdin === undefined ? "null" : "piped",
    stdout: "piped",
    stderr: "piped",
    env: { NO_COLOR: "1", ...options.env },
  }).spawn();
  if (options.stdin !== undefined) {
    const w = child.stdin.getWriter();
    await w.write(new TextEncoder().encode(options.stdin));
    await w.close();
  }
  const out = await child.output();
  return {
    code: out.code,
    stdout: new TextDecoder().decode(out.stdout),
    stderr: new TextDecoder().decode(out.stderr),
  };
}

/**
 * Runs `awp ARGS` and resolves with its stdout; fails the test (with its
 * stderr) on a non-zero exit.
 *
 * @example
 * ```ts ignore
 * import { awpOk } from "./awp_cli.ts";
 * await awpOk("/tmp/h", ["up"]);
 * ```
 */
export async function awpOk(home: string, args: string[]): Promise<string> {
  const r = await awp(home, args);
  assert.equal(
    r.code,
    0,
    `awp ${args.join(" ")} failed (${r.code}): ${r.stderr}${r.stdout}`,
  );
  return r.stdout;
}

/**
 * Runs `awp ARGS --json` and parses its stdout; fails the test on a
 * non-zero exit.
 *
 * @example
 * ```ts ignore
 * import { awpJson } from "./awp_cli.ts";
 * const status = await awpJson<{ key: string }>("/tmp/h", ["status"]);
 * ```
 */
export async function awpJson<T = Record<string, unknown>>(
  home: string,
  args: string[],
): Promise<T> {
  return JSON.parse(await awpOk(home, [...args, "--json"])) as T;
}

/**
 * Stops the home's daemon: `awp down`, then SIGKILL by the pid in the lock
 * file if it is still there.
 *
 * @example
 * ```ts ignore
 * import { awpDown } from "./awp_cli.ts";
 * await awpDown("/tmp/h");
 * ```
 */
export async function awpDown(home: string): Promise<void> {
  await awp(home, ["down"]).catch(() => {});
  const pid = Number(
    (await Deno.readTextFile(`${home}/daemon.lock`).catch(() => "")).trim(),
  );
  if (pid > 0) {
    try {
      Deno.kill(pid, "SIGKILL");
    } catch { /* already gone */ }
  }
}
