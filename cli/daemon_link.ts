/**
 * The MCP server's link to the daemon: control requests over its socket,
 * starting the daemon on first need (and again after `awp down`), and
 * the inbox stream that follows it without ever starting it.
 *
 * @module
 */

import { controlCall, NoDaemonError } from "./control.ts";
import { ensureDaemon } from "./ensure_daemon.ts";
import { homePaths } from "./home.ts";

/**
 * The daemon, reached over its control socket; started on first need.
 *
 * @example
 * ```ts ignore
 * import { DaemonLink } from "./daemon_link.ts";
 * const link = new DaemonLink("/tmp/awp-home");
 * console.log(await link.call("status"));
 * ```
 */
export class DaemonLink {
  readonly home: string;
  readonly #control: string;
  #started = false;

  constructor(home: string) {
    this.home = home;
    this.#control = homePaths(home).control;
  }

  /** One control request; starts the daemon (once) when it is not running. */
  async call(
    op: string,
    args: Record<string, unknown> = {},
    options: { signal?: AbortSignal; onItem?: (item: unknown) => void } = {},
  ): Promise<unknown> {
    if (!this.#started) {
      await ensureDaemon(this.home);
      this.#started = true;
    }
    try {
      return await this.#raw(op, args, options);
    } catch (error) {
      if (!(error instanceof NoDaemonError)) throw error;
      // It went away (awp down): start it again, once.
      await ensureDaemon(this.home);
      return await this.#raw(op, args, options);
    }
  }

  /** One control request without starting anything. */
  #raw(
    op: string,
    args: Record<string, unknown>,
    options: { signal?: AbortSignal; onItem?: (item: unknown) => void },
  ): Promise<unknown> {
    return controlCall(
      this.#control,
      this.home,
      op,
      args,
      options.onItem,
      options.signal,
    );
  }

  /** Unread messages and notices, marked read, without starting the daemon. */
  peek(): Promise<unknown> {
    return this.#raw("tail", { follow: false, mark: true }, {});
  }

  /** A following stream that never starts the daemon. */
  follow(
    args: Record<string, unknown>,
    onItem: (item: unknown) => void,
    signal: AbortSignal,
  ): Promise<unknown> {
    return this.#raw("tail", { ...args, follow: true }, { onItem, signal });
  }
}
