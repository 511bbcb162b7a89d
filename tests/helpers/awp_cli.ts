/**
 * Runs the real `awp` CLI (mod.ts) as a child process against a home, for
 * end-to-end tests: each call is a fresh process, daemons run in the
 * background as users start them. The names the MCP, hook and bootstrap
 * tests use, over the same runner as the CLI tests (`./cli.ts`).
 *
 * @module
 */

import { awp as runAwp, type Run } from "./cli.ts";

export {
  /**
   * Stops the home's daemon: `awp down`, then SIGKILL by the pid in the
   * lock file if it is still there.
   */
  down as awpDown,
  /** mod.ts, the CLI's entry point. */
  MOD as AWP_MOD,
  /** Runs `awp ARGS --home HOME` and resolves with stdout; fails on a non-zero exit. */
  ok as awpOk,
  /** Runs `awp ARGS --home HOME --json` and parses stdout; fails on a non-zero exit. */
  okJson as awpJson,
} from "./cli.ts";

/** What one CLI run printed and returned. */
export type AwpRun = Run;

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
  return await runAwp(home, args, options.stdin, options.env);
}
