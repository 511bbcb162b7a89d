/**
 * A real `awp` daemon process in a temp home, for tests that attack it.
 *
 * @module
 */

import assert from "node:assert/strict";
import { awp, AWP_MOD, awpDown, type AwpRun } from "./awp_cli.ts";

/**
 * Runs `awp ARGS --home HOME` to its end; with `shellPrefix` (e.g.
 * "ulimit -n 200") through `sh`, which then execs deno.
 *
 * @example
 * ```ts ignore
 * const r = await awpCli("/tmp/h", ["status", "--json"]);
 * ```
 */
export async function awpCli(
  home: string,
  args: string[],
  env: Record<string, string> = {},
  shellPrefix?: string,
): Promise<AwpRun> {
  if (shellPrefix === undefined) return await awp(home, args, { env });
  const argv = ["run", "-A", "--unstable-kv", AWP_MOD, ...args, "--home", home];
  const out = await new Deno.Command("sh", {
    args: ["-c", `${shellPrefix} && exec "$0" "$@"`, Deno.execPath(), ...argv],
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
    env: { NO_COLOR: "1", ...env },
  }).output();
  return {
    code: out.code,
    stdout: new TextDecoder().decode(out.stdout),
    stderr: new TextDecoder().decode(out.stderr),
  };
}

/** A daemon started with `awp up`; `stop()` ends it (and kills it if it hangs). */
export interface AwpDaemon {
  home: string;
  key: string;
  addr: string;
  /** Runs a CLI command against this daemon; asserts exit 0; stdout. */
  ok(args: string[]): Promise<string>;
  stop(): Promise<void>;
}

/**
 * Starts a daemon in `home` listening on a free loopback TCP port, with
 * `flags` added to `up`.
 *
 * @example
 * ```ts ignore
 * const d = await startDaemon(home, ["--serve", "exec", "--root", dir]);
 * await d.stop();
 * ```
 */
export async function startDaemon(
  home: string,
  flags: string[] = [],
  env: Record<string, string> = {},
  shellPrefix?: string,
): Promise<AwpDaemon> {
  const ok = async (args: string[]) => {
    const r = await awpCli(
      home,
      args,
      env,
      args[0] === "up" ? shellPrefix : undefined,
    );
    assert.equal(
      r.code,
      0,
      `awp ${args.join(" ")} failed (${r.code}): ${r.stderr}${r.stdout}`,
    );
    return r.stdout;
  };
  await ok(["up", "--listen", "tcp:127.0.0.1:0", ...flags]);
  const status = JSON.parse(await ok(["status", "--json"])) as {
    key: string;
    addrs: string[];
  };
  const stop = () => awpDown(home);
  return {
    home,
    key: status.key,
    addr: status.addrs.find((a) => a.startsWith("tcp:")) ?? status.addrs[0],
    ok,
    stop,
  };
}
