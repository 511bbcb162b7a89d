/**
 * The commands that run the daemon itself: `up`, `inspect`, `web`, `down`,
 * `reset` and `status`.
 *
 * @module
 */

import { type Args, UsageError } from "./args.ts";
import {
  callPrint,
  type Command,
  type CommandContext,
  noPositionals,
  printAnswer,
} from "./command.ts";
import { controlCall, ControlError, NoDaemonError } from "./control.ts";
import {
  DAEMON_CONFIG_HELP,
  DAEMON_FLAGS,
  daemonFlagArgv,
  daemonFlagValues,
} from "./daemon_flags.ts";
import { checkHomeIsDirectory, ensureDaemon } from "./ensure_daemon.ts";
import { homePaths } from "./home.ts";
import { identityLines, peerLine } from "./person_text.ts";
import type { StatusResult } from "./protocol.ts";
import { moveStoreAside } from "../storage/store_file.ts";

/**
 * Calls `op` on a running daemon; when none runs, starts one with
 * `startFlags` and answers from its status (`url` is what it serves, or
 * `missing` is the error when it does not).
 */
async function callOrStart<T>(
  ctx: CommandContext,
  op: string,
  args: Record<string, unknown>,
  startFlags: string[],
  fromStatus: (status: StatusResult) => T | undefined,
  missing: string,
): Promise<T> {
  try {
    return await ctx.call(op, args) as T;
  } catch (error) {
    if (!(error instanceof NoDaemonError)) throw error;
  }
  await ensureDaemon(ctx.home, startFlags);
  const answer = fromStatus(await ctx.call("status") as StatusResult);
  if (answer === undefined) throw new ControlError(missing);
  return answer;
}

/** `--inspect[=ADDR]` and `--allow-host` as daemon arguments. */
function inspectFlags(args: Args): string[] {
  const out: string[] = [];
  if (args.has("inspect")) {
    const where = args.string("inspect");
    out.push(where ? `--inspect=${where}` : "--inspect");
  }
  for (const h of args.list("allow-host")) out.push("--allow-host", h);
  return out;
}

/**
 * `up`, `inspect`, `web`, `down`, `reset` and `status`, by name.
 *
 * @example
 * ```ts
 * import { DAEMON_COMMANDS } from "./daemon_commands.ts";
 * console.log(Object.keys(DAEMON_COMMANDS)[0]); // "up"
 * ```
 */
export const DAEMON_COMMANDS: Record<string, Command> = {
  up: {
    summary:
      "start the daemon in the background and print the address to share",
    usage:
      "awp up [--name NAME] [--about TEXT] [--listen ADDR]... [--max-blob BYTES] [--presence] [--no-relay]\n" +
      "       [--trust KEY]... [--accept any|allowlist] [--allow KEY]... [--serve CAPS] [--root DIR]\n" +
      "       [--store URL] [--inspect[=HOST:PORT]] [--allow-host HOST]... [--web[=HOST:PORT]] [--web-write]\n" +
      "       [--cert FILE --key FILE] [--ca FILE]... [--advertise ADDR]\n" +
      "ADDR: tcp:HOST:PORT, unix:/path, ws://HOST:PORT/path or wss://HOST:PORT/path",
    flags: DAEMON_FLAGS.filter((f) => f.name !== "log"),
    help: DAEMON_CONFIG_HELP +
      "\nWhen the daemon is already running, the flags apply from its next start (awp down; awp up ...).",
    async run(ctx) {
      noPositionals(ctx.args);
      const values = daemonFlagValues(ctx.args);
      if (values.store && !Deno.env.get("DENO_KV_ACCESS_TOKEN")) {
        throw new UsageError(
          "--store needs DENO_KV_ACCESS_TOKEN in the environment",
        );
      }
      const extra = daemonFlagArgv(values);
      const started = await ensureDaemon(ctx.home, extra);
      if (!started && extra.length > 0 && !ctx.out.json) {
        ctx.out.note(
          "note: the daemon is already running; the flags apply from its next start (awp down; awp up ...)",
        );
      }
      const status = await ctx.call("status") as StatusResult;
      printAnswer(ctx.out, { ...status, started }, identityLines);
      return 0;
    },
  },
  inspect: {
    summary: "print the URL of the daemon's live statechart inspector",
    usage: "awp inspect [--inspect=HOST:PORT] [--allow-host HOST]...",
    flags: [
      { name: "inspect", type: "optional" },
      { name: "allow-host", type: "list" },
    ],
    async run(ctx) {
      // A running daemon starts inspecting now (nothing was recorded before);
      // one that is not running starts with the inspector on.
      const where = ctx.args.string("inspect");
      const { url } = await callOrStart<{ url: string }>(
        ctx,
        "inspect",
        {
          ...(where ? { addr: where } : {}),
          allowHosts: ctx.args.list("allow-host"),
        },
        [
          ...(ctx.args.has("inspect") ? [] : ["--inspect"]),
          ...inspectFlags(ctx.args),
        ],
        (s) => s.inspector ? { url: s.inspector } : undefined,
        "the daemon started without the inspector",
      );
      printAnswer(ctx.out, { url }, (r) => r.url);
      return 0;
    },
  },
  web: {
    summary: "print the URL of the daemon's live dashboard, serving it first",
    usage:
      "awp web [--listen HOST:PORT] [--write] [--allow-host HOST]...  (default 127.0.0.1:7788)",
    flags: [
      { name: "listen", type: "string" },
      { name: "write", type: "boolean" },
      { name: "allow-host", type: "list" },
    ],
    help:
      "Read-only unless --write (then the page can send, set states and grant).\n" +
      "Serves on loopback unless --listen says otherwise; stops with the daemon.",
    async run(ctx) {
      const where = ctx.args.string("listen");
      if (where !== undefined && !/^(\[[^\]]+\]|[^:\s]+):\d+$/.test(where)) {
        throw new UsageError(`bad --listen "${where}": use HOST:PORT`);
      }
      const write = ctx.args.bool("write");
      const answer = await callOrStart<
        { url: string; write: boolean; note?: string }
      >(
        ctx,
        "web",
        {
          ...(where ? { addr: where } : {}),
          write,
          allowHosts: ctx.args.list("allow-host"),
        },
        [
          where ? `--web=${where}` : "--web",
          ...(write ? ["--web-write"] : []),
          ...ctx.args.list("allow-host").flatMap((h) => ["--allow-host", h]),
        ],
        (s) => s.web ? { url: s.web, write } : undefined,
        "the daemon started without the dashboard",
      );
      if (answer.note && !ctx.out.json) ctx.out.note(answer.note);
      printAnswer(
        ctx.out,
        { url: answer.url, write: answer.write },
        (r) => r.url,
      );
      return 0;
    },
  },
  down: {
    summary: "stop the daemon (queued messages stay on disk)",
    usage: "awp down",
    flags: [],
    async run(ctx) {
      try {
        await ctx.call("down");
      } catch (error) {
        if (!(error instanceof NoDaemonError)) throw error;
        printAnswer(
          ctx.out,
          { stopped: false, running: false },
          () => "not running",
        );
        return 0;
      }
      // Wait for it to let go of the socket, so a following `up` starts afresh.
      const paths = homePaths(ctx.home);
      for (let i = 0; i < 100; i++) {
        try {
          await controlCall(paths.control, ctx.home, "ping", {});
        } catch {
          break;
        }
        await new Promise((r) => setTimeout(r, 50));
      }
      printAnswer(ctx.out, { stopped: true }, () => "stopped");
      return 0;
    },
  },
  reset: {
    summary:
      "start over with a new identity: move the store aside (nothing is deleted)",
    usage: "awp reset --home DIR",
    flags: [],
    help:
      "Moves awp.kv (and its -wal and -shm) to awp.kv.<time>.bak in the home; the next start\n" +
      "creates a new identity with no peers or threads. The daemon must be stopped (awp down).\n" +
      "To undo, stop the daemon and move the .bak files back.",
    async run(ctx) {
      noPositionals(ctx.args);
      if (!ctx.args.has("home")) {
        // Starting over is never the default: the home is named on purpose.
        throw new UsageError(
          `name the home to reset: awp reset --home ${ctx.home}`,
        );
      }
      await checkHomeIsDirectory(ctx.home);
      const running = await ctx.call("ping").then(() => true, (error) => {
        if (error instanceof NoDaemonError) return false;
        throw error;
      });
      // Holding the daemon's lock keeps one from starting while we move.
      using lock = await Deno.open(homePaths(ctx.home).lock, {
        create: true,
        read: true,
        write: true,
        mode: 0o600,
      });
      if (running || !(await lock.tryLock(true))) {
        throw new ControlError(
          `the daemon for ${ctx.home} is running: stop it first (awp down --home ${ctx.home})`,
        );
      }
      const moved = await moveStoreAside(ctx.home);
      printAnswer(
        ctx.out,
        { home: ctx.home, moved },
        (r) =>
          r.moved.length === 0
            ? `no store in ${r.home}`
            : `moved the store aside to ${
              r.moved[0]
            }; the next start creates a new identity`,
      );
      return 0;
    },
  },
  status: {
    summary: "show identity, addresses and peers (does not start the daemon)",
    usage: "awp status",
    flags: [],
    async run(ctx) {
      await callPrint<StatusResult>(ctx, "status", {}, (s, out) => [
        ...identityLines(s, out),
        `unread ${s.unread}, ${s.notices} notices, queued ${s.queued}`,
        ...s.peers.map((p) => peerLine(out, p)),
      ], { start: false });
      return 0;
    },
  },
};
