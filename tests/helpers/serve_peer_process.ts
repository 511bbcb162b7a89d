/**
 * One `tests/fixtures/serve_peer.ts` process: a peer serving the coding-agent
 * profile in its own process, printing JSON lines (`ready`, ...), for tests
 * that kill it or feed it hostile input.
 *
 * @module
 */

import { JsonLineChild } from "./json_line_child.ts";

const FIXTURE = new URL("../fixtures/serve_peer.ts", import.meta.url).pathname;

/**
 * A serving peer started with the fixture's flags `args` (`--home`,
 * `--listen`, `--root`, `--max-serving`, ...).
 *
 * @example
 * ```ts ignore
 * const s = new ServePeerProcess(["--home", home, "--listen", `unix:${home}/sock`]);
 * const ready = await s.waitFor((l) => l.event === "ready", "ready");
 * await s.finish();
 * ```
 */
export class ServePeerProcess extends JsonLineChild {
  constructor(args: string[]) {
    super(["run", "-A", "--unstable-kv", FIXTURE, ...args]);
  }
}
