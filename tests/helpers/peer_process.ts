/**
 * One `tests/fixtures/peer.ts` process: a real peer in its own process that
 * prints JSON lines (`ready`, `delivered`, `connected`, ...) and takes
 * commands (`reach`, `send`, ...) on stdin, for tests that kill it with -9.
 *
 * @module
 */

import { JsonLineChild } from "./json_line_child.ts";

const FIXTURE = new URL("../fixtures/peer.ts", import.meta.url).pathname;
const CONFIG = new URL("../../deno.json", import.meta.url).pathname;

/**
 * A peer process started with the fixture's flags `args`.
 *
 * @example
 * ```ts ignore
 * const p = new PeerProcess(["--home", `${dir}/p`, "--name", "p"]);
 * const ready = await p.waitFor((l) => l.event === "ready", "ready");
 * p.kill9();
 * await p.reap();
 * ```
 */
export class PeerProcess extends JsonLineChild {
  constructor(args: string[]) {
    super(["run", "-A", "--config", CONFIG, FIXTURE, ...args]);
  }
}
