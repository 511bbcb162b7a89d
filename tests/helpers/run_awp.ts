/**
 * Runs the `awp` CLI (mod.ts) as a real process against a home.
 *
 * @module
 */

const MOD = new URL("../../mod.ts", import.meta.url).pathname;

/** How one run ended. */
export interface AwpRun {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * Runs `awp ARGS --home HOME` and waits for it to exit.
 *
 * @example
 * ```ts ignore
 * import { runAwp } from "./run_awp.ts";
 * const r = await runAwp("/tmp/awp-a", ["status", "--json"]);
 * console.log(r.code);
 * ```
 */
export async function runAwp(home: string, args: string[]): Promise<AwpRun> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--unstable-kv", MOD, ...args, "--home", home],
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

/**
 * Runs `awp ARGS --home HOME` and returns its stdout; throws with stderr
 * when it exits non-zero.
 *
 * @example
 * ```ts ignore
 * import { awpOk } from "./run_awp.ts";
 * console.log(await awpOk("/tmp/awp-a", ["status"]));
 * ```
 */
export async function awpOk(home: string, args: string[]): Promise<string> {
  const r = await runAwp(home, args);
  if (r.code !== 0) {
    throw new Error(
      `awp ${args.join(" ")} failed (${r.code}): ${r.stderr}${r.stdout}`,
    );
  }
  return r.stdout;
}
