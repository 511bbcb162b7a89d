/**
 * One `awp driver` process (the stdin/stdout driver of mod.ts): JSON events
 * out, JSON commands in, for tests that drive a real peer process.
 *
 * @module
 */

import { JsonLineChild } from "./json_line_child.ts";

const MOD = new URL("../../mod.ts", import.meta.url).pathname;

/**
 * `awp driver ARGS` as a child process.
 *
 * @example
 * ```ts ignore
 * const d = new DriverProcess(["--state", dir, "listen", "tcp:127.0.0.1:0"]);
 * const l = await d.waitFor((e) => e.event === "listening", "listening");
 * await d.quit();
 * ```
 */
export class DriverProcess extends JsonLineChild {
  /**
   * `main`: the program's path (mod.ts; or e.g. the generated bundle) and
   * the `deno run` flags it runs with.
   */
  constructor(
    args: string[],
    main: string = MOD,
    flags: readonly string[] = ["-A", "--unstable-kv"],
  ) {
    super(["run", ...flags, main, "driver", ...args]);
  }

  /**
   * Sends `{"cmd":"quit"}` (SIGTERM once its stdin is closed), waits for the
   * exit (SIGKILL after `ms`), reaps; resolves with the exit code.
   */
  async quit(ms = 10_000): Promise<number> {
    if (this.stdinOpen) await this.command({ cmd: "quit" }).catch(() => {});
    else {
      try {
        this.child.kill("SIGTERM");
      } catch { /* gone */ }
    }
    await this.reap(ms);
    return (await this.child.status).code;
  }
}
