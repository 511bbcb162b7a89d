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

/**
 * The fixture's flags for a peer named `name` with its home at
 * `${dir}/${name}` that notices a loss and redials quickly (ping every
 * 300 ms, redial backoff 100 ms up to 400 ms), followed by `extra`.
 *
 * @example
 * ```ts
 * import { quickPeerArgs } from "./peer_process.ts";
 * console.log(quickPeerArgs("/tmp/x", "dialer").slice(0, 4).join(" ")); // --home /tmp/x/dialer --name
 * ```
 */
export function quickPeerArgs(
  dir: string,
  name: string,
  extra: string[] = [],
): string[] {
  return [
    "--home",
    `${dir}/${name}`,
    "--name",
    name,
    "--ping",
    "300",
    "--backoff",
    "100",
    "--cap",
    "400",
    ...extra,
  ];
}
