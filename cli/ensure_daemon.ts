/**
 * Starting the daemon on demand: a command that needs it starts it in the
 * background and waits until its control socket answers.
 *
 * @module
 */

import { controlCall, ControlError, NoDaemonError } from "./control.ts";
import { homePaths } from "./home.ts";
import { selfCommandPreferBundle } from "./process_bundle.ts";
import { CHILD_ENV } from "./self_command.ts";
import { ensureHomeDir, HomeNotDirectoryError } from "../storage/store_file.ts";

const DAEMON_START_TIMEOUT_MS = 20_000;

/**
 * Starts the daemon for `home` in the background when none is running and
 * waits until its control socket answers. Its output goes to
 * `${home}/daemon.log`.
 *
 * @example
 * ```ts ignore
 * import { ensureDaemon } from "./ensure_daemon.ts";
 * await ensureDaemon("/tmp/awp-home");
 * ```
 */
export async function ensureDaemon(
  home: string,
  extra: string[] = [],
): Promise<boolean> {
  await checkHomeIsDirectory(home);
  const paths = homePaths(home);
  try {
    await controlCall(paths.control, home, "ping", {});
    return false;
  } catch (error) {
    if (!(error instanceof NoDaemonError)) throw error;
  }
  await ensureHomeDir(home);
  const { command, args } = await selfCommandPreferBundle([
    "daemon",
    "--home",
    home,
    "--log",
    paths.log,
    ...extra,
  ]);
  const child = new Deno.Command(command, {
    args,
    env: CHILD_ENV,
    stdin: "null",
    stdout: "null",
    stderr: "null",
    detached: true,
  }).spawn();
  child.unref();
  let exited: number | undefined;
  child.status.then((s) => exited = s.code).catch(() => {});
  const deadline = Date.now() + DAEMON_START_TIMEOUT_MS;
  while (Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 50));
    try {
      await controlCall(paths.control, home, "ping", {});
      return true;
    } catch (error) {
      if (!(error instanceof NoDaemonError)) throw error;
    }
    if (exited !== undefined) {
      // Another CLI may have started it at the same time: that one holds the lock.
      try {
        await controlCall(paths.control, home, "ping", {});
        return true;
      } catch { /* really failed */ }
      throw new ControlError(
        `the daemon did not start: ${await lastLogLine(paths.log)}`,
      );
    }
  }
  throw new ControlError(
    `the daemon did not start within ${
      DAEMON_START_TIMEOUT_MS / 1000
    }s (see ${paths.log})`,
  );
}

async function lastLogLine(path: string): Promise<string> {
  try {
    const lines = (await Deno.readTextFile(path)).trim().split("\n");
    // The log's own timestamp and level are noise in a one-line error.
    return lines.at(-1)?.replace(/^\S+Z (error: )?/, "") || `see ${path}`;
  } catch {
    return `see ${path}`;
  }
}

/**
 * Throws {@link HomeNotDirectoryError} when `home` is a file: it is named
 * in the error, before anything else is tried. A missing home is fine (it
 * is made on first start).
 *
 * @example
 * ```ts
 * import { checkHomeIsDirectory } from "./ensure_daemon.ts";
 * await checkHomeIsDirectory("/tmp/no-such-awp-home");
 * ```
 */
export async function checkHomeIsDirectory(home: string): Promise<void> {
  try {
    if ((await Deno.stat(home)).isDirectory) return;
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return; // made on first start
    if (!(error instanceof Deno.errors.NotADirectory)) throw error;
  }
  throw new HomeNotDirectoryError(home);
}
