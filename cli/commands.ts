/**
 * The commands: each parses its flags, talks to the daemon over the
 * control socket (starting it on demand where that makes sense) and prints
 * the answer for a person, or as JSON under `--json`.
 *
 * @module
 */

import { type Args, type FlagSpec, parseDuration, UsageError } from "./args.ts";
import { controlCall, ControlError, NoDaemonError } from "./control.ts";
import { homePaths, resolveHome } from "./home.ts";
import { formatAge, formatBytes, type Output, ProgressBar } from "./output.ts";
import type {
  InboxItem,
  PeerSummary,
  ProgressItem,
  SendResult,
  StatusResult,
  ThreadRow,
  WaitResult,
} from "./protocol.ts";
import { selfCommand } from "./self_command.ts";
import {
  DAEMON_CONFIG_HELP,
  DAEMON_FLAGS,
  daemonFlagArgv,
  daemonFlagValues,
} from "./daemon_flags.ts";
import { SAMVAD_COMMAND } from "../samvad/cli.ts";
import { addressArg } from "./address_arg.ts";
import { PROFILE_COMMANDS } from "./profile_commands.ts";
import { renderPart, type ShownPart } from "./render_part.ts";
import {
  ensureHomeDir,
  HomeNotDirectoryError,
  moveStoreAside,
} from "../storage/store_file.ts";

/** What a command gets to run with. */
export interface CommandContext {
  args: Args;
  out: Output;
  home: string;
  /** Calls the daemon; `start` starts it first when it is not running. */
  call(
    op: string,
    args?: Record<string, unknown>,
    options?: {
      start?: boolean;
      onItem?: (item: unknown) => void | Promise<void>;
      signal?: AbortSignal;
    },
  ): Promise<unknown>;
}

/** One command of the CLI. */
export interface Command {
  /** One-line description for the command list. */
  summary: string;
  /** Usage line(s) and flags, printed by `--help`. */
  usage: string;
  flags: FlagSpec[];
  /** More help after the flags, if any. */
  help?: string;
  run(ctx: CommandContext): Promise<number>;
}

const DAEMON_START_TIMEOUT_MS = 20_000;

/**
 * Starts the daemon for `home` in the background when none is running and
 * waits until its control socket answers. Its output goes to
 * `${home}/daemon.log`.
 *
 * @example
 * ```ts ignore
 * import { ensureDaemon } from "./commands.ts";
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
  const { command, args } = selfCommand([
    "daemon",
    "--home",
    home,
    "--log",
    paths.log,
    ...extra,
  ]);
  const child = new Deno.Command(command, {
    args,
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
 * Builds the context a command's `run` gets: the home from `--home`,
 * `$AWP_HOME` or `~/.awp`, and a `call` that talks to its daemon.
 *
 * @example
 * ```ts
 * import { makeContext } from "./commands.ts";
 * import { parseArgs } from "./args.ts";
 * import { Output } from "./output.ts";
 * const ctx = makeContext(parseArgs(["--home", "/tmp/h"], []), new Output({ json: true }));
 * console.log(ctx.home); // "/tmp/h"
 * ```
 */
export function makeContext(args: Args, out: Output): CommandContext {
  const home = resolveHome(args.string("home"));
  const paths = homePaths(home);
  return {
    args,
    out,
    home,
    async call(op, opArgs = {}, options = {}) {
      await checkHomeIsDirectory(home);
      if (options.start) await ensureDaemon(home);
      return await controlCall(
        paths.control,
        home,
        op,
        opArgs,
        options.onItem,
        options.signal,
      );
    },
  };
}

/** A home that is a file is named in the error, before anything else is tried. */
async function checkHomeIsDirectory(home: string): Promise<void> {
  try {
    if ((await Deno.stat(home)).isDirectory) return;
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return; // made on first start
    if (!(error instanceof Deno.errors.NotADirectory)) throw error;
  }
  throw new HomeNotDirectoryError(home);
}

function shortKey(key: string): string {
  return key.startsWith("ed25519:") ? key.slice(8, 16) : key.slice(0, 8);
}

function who(peer: string, name?: string): string {
  return name ? `${name} (${shortKey(peer)})` : shortKey(peer);
}

async function readStdin(): Promise<string> {
  return (await new Response(Deno.stdin.readable).text()).replace(/\n$/, "");
}

async function readFileText(path: string): Promise<string> {
  try {
    return await Deno.readTextFile(path);
  } catch (error) {
    throw new ControlError(fileError(path, error));
  }
}

function fileError(path: string, error: unknown): string {
  if (error instanceof Deno.errors.NotFound) return `no such file: ${path}`;
  if (error instanceof Deno.errors.PermissionDenied) {
    return `permission denied: ${path}`;
  }
  if (error instanceof Deno.errors.IsADirectory) return `not a file: ${path}`;
  return `cannot read ${path}: ${
    error instanceof Error ? error.message : String(error)
  }`;
}

async function checkReadable(path: string): Promise<string> {
  const abs = path.startsWith("/") ? path : `${Deno.cwd()}/${path}`;
  try {
    const info = await Deno.stat(abs);
    if (!info.isFile) throw new ControlError(`not a file: ${path}`);
    const f = await Deno.open(abs, { read: true });
    f.close();
  } catch (error) {
    if (error instanceof ControlError) throw error;
    throw new ControlError(fileError(path, error));
  }
  return abs;
}

const LANGS: Record<string, string> = {
  ts: "typescript",
  js: "javascript",
  py: "python",
  go: "go",
  rs: "rust",
  sh: "sh",
  md: "markdown",
  json: "json",
  diff: "diff",
  patch: "diff",
  c: "c",
  h: "c",
  cpp: "cpp",
  java: "java",
  rb: "ruby",
  yml: "yaml",
  yaml: "yaml",
  toml: "toml",
  html: "html",
  css: "css",
};

function itemLine(out: Output, item: InboxItem): string {
  const from = item.dir === "out"
    ? `to ${who(item.peer, item.peerName)}`
    : who(item.peer, item.peerName);
  const th = item.th ? out.dim(` [${item.th}]`) : "";
  switch (item.event) {
    case "message": {
      const firstLine = (item.text ?? "").split("\n")[0];
      const subject = item.subject && item.subject !== firstLine
        ? `${out.bold(item.subject)}: `
        : "";
      const blobs = (item.blobs ?? []) as Array<
        { name?: string; ref: string; path?: string; status: string }
      >;
      const extra = blobs.map((b) =>
        `\n  file ${b.name ?? b.ref}: ${b.path ?? b.status}`
      ).join("");
      const more = ((item.parts ?? []) as ShownPart[]).map(renderPart)
        .join("");
      return `${from}${th}: ${subject}${item.text ?? ""}${more}${extra}`;
    }
    case "state":
      return `${from}${th}: state ${out.bold(item.state ?? "")}${
        item.note ? ` (${item.note})` : ""
      }`;
    case "connected":
      return `${from}: connected`;
    case "disconnected":
      return `${from}: disconnected${item.detail ? ` (${item.detail})` : ""}`;
    default:
      return `${from}${th}: ${item.kind ?? "notice"}${
        item.detail ? `: ${item.detail}` : ""
      }`;
  }
}

function printItems(ctx: CommandContext, items: InboxItem[]): void {
  for (const item of items) {
    if (ctx.out.json) ctx.out.value(item);
    else ctx.out.line(itemLine(ctx.out, item));
  }
}

/** Transfers that have ended, one way or another. */
const ENDED = new Set(["done", "complete", "refused", "failed"]);

/** One progress bar per blob transfer, fed by streamed progress items (TTY only). */
class ProgressBars {
  readonly #bars = new Map<string, ProgressBar>();

  /** Takes an item; true when it was a progress item. */
  take(item: unknown): boolean {
    const p = item as ProgressItem;
    if (p?.event !== "progress") return false;
    const id = `${p.dir} ${p.ref}`;
    let bar = this.#bars.get(id);
    if (!bar) {
      if (ENDED.has(p.status)) return true; // nothing left to draw
      const label = `${p.dir === "out" ? "send" : "recv"} ${p.name ?? p.ref}`;
      this.#bars.set(id, bar = new ProgressBar(label, p.total));
    }
    bar.update(p.bytes, { total: p.total, rate: p.rate });
    if (ENDED.has(p.status)) {
      bar.done(p.status === "done" || p.status === "complete");
      this.#bars.delete(id);
    }
    return true;
  }

  /** Ends every bar still drawn. */
  finish(): void {
    for (const bar of this.#bars.values()) bar.done(false);
    this.#bars.clear();
  }
}

/** A command that takes no arguments says so about the first one given. */
function noPositionals(args: Args): void {
  if (args.positionals.length > 0) {
    throw new UsageError(`unexpected argument "${args.positionals[0]}"`);
  }
}

function needPositional(args: Args, n: number, what: string): void {
  if (args.positionals.length < n) throw new UsageError(`missing ${what}`);
}

/**
 * Every command, by name.
 *
 * @example
 * ```ts
 * import { COMMANDS } from "./commands.ts";
 * console.log(COMMANDS.send.usage.startsWith("awp send")); // true
 * ```
 */
export const COMMANDS: Record<string, Command> = {
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
      if (ctx.out.json) ctx.out.value({ ...status, started });
      else printIdentity(ctx.out, status);
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
      let url: string;
      try {
        // A running daemon starts inspecting now (nothing was recorded before).
        const where = ctx.args.string("inspect");
        ({ url } = await ctx.call("inspect", {
          ...(where ? { addr: where } : {}),
          allowHosts: ctx.args.list("allow-host"),
        }) as { url: string });
      } catch (error) {
        if (!(error instanceof NoDaemonError)) throw error;
        // Not running: start it with the inspector on.
        await ensureDaemon(ctx.home, [
          ...(ctx.args.has("inspect") ? [] : ["--inspect"]),
          ...inspectFlags(ctx.args),
        ]);
        const status = await ctx.call("status") as StatusResult;
        if (!status.inspector) {
          throw new ControlError("the daemon started without the inspector");
        }
        url = status.inspector;
      }
      if (ctx.out.json) ctx.out.value({ url });
      else ctx.out.line(url);
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
      let answer: { url: string; write: boolean; note?: string };
      try {
        answer = await ctx.call("web", {
          ...(where ? { addr: where } : {}),
          write,
          allowHosts: ctx.args.list("allow-host"),
        }) as typeof answer;
      } catch (error) {
        if (!(error instanceof NoDaemonError)) throw error;
        // Not running: start it with the dashboard on.
        await ensureDaemon(ctx.home, [
          where ? `--web=${where}` : "--web",
          ...(write ? ["--web-write"] : []),
          ...ctx.args.list("allow-host").flatMap((h) => ["--allow-host", h]),
        ]);
        const status = await ctx.call("status") as StatusResult;
        if (!status.web) {
          throw new ControlError("the daemon started without the dashboard");
        }
        answer = { url: status.web, write };
      }
      if (answer.note && !ctx.out.json) ctx.out.note(answer.note);
      if (ctx.out.json) ctx.out.value({ url: answer.url, write: answer.write });
      else ctx.out.line(answer.url);
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
        if (error instanceof NoDaemonError) {
          if (ctx.out.json) ctx.out.value({ stopped: false, running: false });
          else ctx.out.line("not running");
          return 0;
        }
        throw error;
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
      if (ctx.out.json) ctx.out.value({ stopped: true });
      else ctx.out.line("stopped");
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
      if (ctx.out.json) ctx.out.value({ home: ctx.home, moved });
      else if (moved.length === 0) ctx.out.line(`no store in ${ctx.home}`);
      else {
        ctx.out.line(
          `moved the store aside to ${
            moved[0]
          }; the next start creates a new identity`,
        );
      }
      return 0;
    },
  },
  status: {
    summary: "show identity, addresses and peers (does not start the daemon)",
    usage: "awp status",
    flags: [],
    async run(ctx) {
      const s = await ctx.call("status") as StatusResult;
      if (ctx.out.json) {
        ctx.out.value(s);
        return 0;
      }
      printIdentity(ctx.out, s);
      ctx.out.line(
        `unread ${s.unread}, ${s.notices} notices, queued ${s.queued}`,
      );
      for (const p of s.peers) ctx.out.line(peerLine(ctx.out, p));
      return 0;
    },
  },
  listen: {
    summary:
      "listen (optionally on ADDR) and stream inbound messages as NDJSON",
    usage: "awp listen [--text] [--mark] [ADDR]",
    flags: [{ name: "text", type: "boolean" }, {
      name: "mark",
      type: "boolean",
    }],
    async run(ctx) {
      const addr = ctx.args.positionals[0];
      const res = await ctx.call(
        "listen",
        addr ? { addr: addressArg(addr, true) } : {},
        {
          start: true,
        },
      ) as {
        key: string;
        addrs: string[];
      };
      const text = ctx.args.bool("text") && !ctx.out.json;
      if (text) {
        ctx.out.line(`listening on ${res.addrs.join(" ")} as ${res.key}`);
      } else {ctx.out.value({
          event: "listening",
          key: res.key,
          addrs: res.addrs,
          addr: res.addrs[0],
        });}
      await ctx.call("tail", { follow: true, mark: ctx.args.bool("mark") }, {
        onItem: (item) => {
          if (text) ctx.out.line(itemLine(ctx.out, item as InboxItem));
          else ctx.out.value(item);
        },
      });
      return 0;
    },
  },
  connect: {
    summary: "connect to a peer by address or known name",
    usage: "awp connect [--wait] [--timeout 1m] ADDRESS\n" +
      "ADDRESS: tcp:HOST:PORT, unix:/path, ws://HOST:PORT/path, wss://HOST:PORT/path, or a known name",
    help:
      "A peer that does not answer is dialed again and again by the daemon until it\n" +
      "does; the command says so and exits 0, or with --wait waits for it (exit 2\n" +
      "after --timeout, the daemon still dialing).",
    flags: [
      { name: "timeout", type: "string" },
      { name: "wait", type: "boolean" },
    ],
    async run(ctx) {
      needPositional(ctx.args, 1, "address");
      // A malformed address is a usage error, caught before the daemon is involved.
      const target = addressArg(ctx.args.positionals[0]);
      const timeoutMs = parseDuration(ctx.args.string("timeout") ?? "1m");
      const r = await ctx.call("connect", {
        target,
        timeoutMs,
        wait: ctx.args.bool("wait"),
      }, { start: true }) as {
        key?: string;
        name?: string;
        already?: boolean;
        dialing?: boolean;
        address?: string;
        error?: string;
      };
      if (ctx.out.json) ctx.out.value(r);
      else if (r.dialing) {
        ctx.out.line(
          `${r.address} does not answer (${r.error}); the daemon keeps dialing it (awp connect --wait waits)`,
        );
      } else {
        ctx.out.line(
          `${r.already ? "already connected to" : "connected to"} ${
            who(r.key!, r.name)
          } ${r.key}`,
        );
      }
      return 0;
    },
  },
  send: {
    summary: "send a message (queued when the peer is away)",
    usage: "awp send [flags] [PEER] TEXT...   (TEXT '-' reads stdin)",
    flags: [
      { name: "subject", short: "s", type: "string" },
      { name: "thread", short: "t", type: "string" },
      { name: "to", type: "string" },
      { name: "re", type: "string" },
      { name: "code", type: "list" },
      { name: "lang", type: "string" },
      { name: "data", type: "list" },
      { name: "mime", type: "string" },
      { name: "file", short: "f", type: "list" },
      { name: "wait-ack", type: "string" },
    ],
    async run(ctx) {
      const a = ctx.args;
      const parts: Record<string, unknown>[] = [];
      for (const path of a.list("code")) {
        const ext = path.split(".").pop()?.toLowerCase() ?? "";
        const lang = a.string("lang") ?? LANGS[ext];
        parts.push({
          k: "code",
          text: await readFileText(path),
          ...(lang ? { lang } : {}),
        });
      }
      for (const json of a.list("data")) {
        let data: unknown;
        try {
          data = JSON.parse(json);
        } catch (error) {
          throw new UsageError(
            `bad --data JSON: ${
              error instanceof Error ? error.message : String(error)
            }`,
          );
        }
        parts.push({
          k: "data",
          data,
          mime: a.string("mime") ?? "application/json",
        });
      }
      const files: string[] = [];
      for (const f of a.list("file")) files.push(await checkReadable(f));
      const words = [...a.positionals];
      // A malformed address as the peer is a usage error, as for connect.
      const to = a.string("to") ?? (words.length > 1 ? words[0] : undefined);
      if (to !== undefined) addressArg(to);
      if (words.includes("-")) {
        const stdin = await readStdin();
        for (let i = 0; i < words.length; i++) {
          if (words[i] === "-") words[i] = stdin;
        }
      }
      const waitAck = a.string("wait-ack");
      // On a terminal, the daemon streams the blobs' progress until the ack.
      const progress = files.length > 0 && Deno.stderr.isTerminal();
      const bars = new ProgressBars();
      let r: SendResult;
      try {
        r = await ctx.call("send", {
          to: a.string("to"),
          thread: a.string("thread"),
          subject: a.string("subject"),
          re: a.string("re"),
          words,
          parts,
          files,
          waitAckMs: waitAck === undefined ? undefined : parseDuration(waitAck),
          progress,
        }, {
          start: true,
          onItem: (item) => void bars.take(item),
        }) as SendResult;
      } finally {
        bars.finish();
      }
      if (r.note && !ctx.out.json) ctx.out.note(r.note);
      if (ctx.out.json) ctx.out.value(r);
      else {
        const how = r.acked
          ? "delivered"
          : r.connected
          ? "(delivering)"
          : "queued until the peer is reachable";
        ctx.out.line(`${r.th} ${r.id} ${how}`);
      }
      return 0;
    },
  },
  state: {
    summary:
      "tell the peer your state of a thread (open, working, waiting, done, failed, closed)",
    usage: "awp state [-n NOTE] [PEER] THREAD STATE",
    flags: [{ name: "note", short: "n", type: "string" }, {
      name: "wait-ack",
      type: "string",
    }],
    async run(ctx) {
      const p = ctx.args.positionals;
      needPositional(ctx.args, 2, "thread and state");
      const [to, th, state] = p.length >= 3 ? p : [undefined, p[0], p[1]];
      const waitAck = ctx.args.string("wait-ack");
      const r = await ctx.call("state", {
        to,
        thread: th,
        state,
        note: ctx.args.string("note"),
        waitAckMs: waitAck === undefined ? undefined : parseDuration(waitAck),
      }, { start: true }) as SendResult;
      if (ctx.out.json) ctx.out.value(r);
      else {ctx.out.line(
          `${r.th} ${state} ${
            r.acked ? "delivered" : r.connected ? "(delivering)" : "queued"
          }`,
        );}
      return 0;
    },
  },
  wait: {
    summary:
      "block until messages arrive (or the peer's state is one of --state)",
    usage:
      "awp wait [-t THREAD] [-p PEER] [--state done,failed] [--timeout 5m]",
    flags: [
      { name: "thread", short: "t", type: "string" },
      { name: "peer", short: "p", type: "string" },
      { name: "state", type: "string" },
      { name: "timeout", type: "string" },
    ],
    async run(ctx) {
      const states = ctx.args.string("state")?.split(",").map((s) => s.trim())
        .filter(Boolean);
      if (states && !ctx.args.string("thread")) {
        throw new UsageError("--state needs --thread");
      }
      const timeoutMs = parseDuration(ctx.args.string("timeout") ?? "5m");
      const bars = new ProgressBars();
      let r: WaitResult;
      try {
        r = await ctx.call("wait", {
          thread: ctx.args.string("thread"),
          peer: ctx.args.string("peer"),
          states,
          timeoutMs,
          progress: Deno.stderr.isTerminal(),
        }, {
          start: true,
          onItem: (item) => void bars.take(item),
        }) as WaitResult;
      } finally {
        bars.finish();
      }
      if (ctx.out.json) ctx.out.value(r);
      else {
        printItems(ctx, r.items);
        if (states) {
          ctx.out.line(
            `state: ${r.state ?? "none"}${r.matched ? "" : " (still waiting)"}`,
          );
        }
        if (r.timedOut) {
          ctx.out.error(
            `timed out after ${ctx.args.string("timeout") ?? "5m"}`,
          );
        }
      }
      return r.timedOut ? 2 : 0;
    },
  },
  tail: {
    summary: "print inbound messages (--once: the unread ones, then exit)",
    usage: "awp tail [--once] [--all] [--mark] [-p PEER] [-t THREAD]",
    flags: [
      { name: "once", type: "boolean" },
      { name: "all", type: "boolean" },
      { name: "mark", type: "boolean" },
      { name: "peer", short: "p", type: "string" },
      { name: "thread", short: "t", type: "string" },
    ],
    async run(ctx) {
      const once = ctx.args.bool("once");
      const bars = new ProgressBars();
      let r: { items: InboxItem[] };
      try {
        r = await ctx.call("tail", {
          follow: !once,
          all: ctx.args.bool("all"),
          mark: once || ctx.args.bool("mark"),
          peer: ctx.args.string("peer"),
          thread: ctx.args.string("thread"),
          progress: !once && Deno.stderr.isTerminal(),
        }, {
          start: true,
          onItem: (item) => {
            if (!bars.take(item)) printItems(ctx, [item as InboxItem]);
          },
        }) as { items: InboxItem[] };
      } finally {
        bars.finish();
      }
      if (once && r.items.length === 0 && !ctx.out.json) {
        ctx.out.line("no unread messages");
      }
      return 0;
    },
  },
  read: {
    summary:
      "show a conversation, both directions, oldest first; marks it read",
    usage: "awp read [-n 50] [-p PEER] [--no-mark] [THREAD]",
    flags: [
      { name: "last", short: "n", type: "string" },
      { name: "peer", short: "p", type: "string" },
      { name: "no-mark", type: "boolean" },
    ],
    async run(ctx) {
      const last = Number(ctx.args.string("last") ?? "50");
      if (!Number.isInteger(last) || last <= 0) {
        throw new UsageError("-n needs a positive whole number");
      }
      const r = await ctx.call("read", {
        thread: ctx.args.positionals[0],
        peer: ctx.args.string("peer"),
        last,
        mark: !ctx.args.bool("no-mark"),
      }, { start: true }) as { items: InboxItem[] };
      if (ctx.out.json) ctx.out.value(r);
      else printItems(ctx, r.items);
      return 0;
    },
  },
  threads: {
    summary: "list threads, most recently active first",
    usage: "awp threads [--open] [-p PEER] [--wide]",
    flags: [
      { name: "open", type: "boolean" },
      { name: "peer", short: "p", type: "string" },
      { name: "wide", type: "boolean" },
    ],
    async run(ctx) {
      const r = await ctx.call("threads", {
        open: ctx.args.bool("open"),
        peer: ctx.args.string("peer"),
      }, {
        start: true,
      }) as { threads: ThreadRow[] };
      if (ctx.out.json) {
        ctx.out.value(r);
        return 0;
      }
      if (r.threads.length === 0) ctx.out.line("no threads");
      const now = Date.now();
      for (const t of r.threads) {
        const side = (s?: { state: string; ts: string }) =>
          s ? `${s.state} ${formatAge(now - Date.parse(s.ts))}` : "-";
        let subject = t.subject ?? "";
        if (!ctx.args.bool("wide") && subject.length > 50) {
          subject = subject.slice(0, 49) + "…";
        }
        ctx.out.line(
          `${t.th}  ${who(t.peer, t.peerName)}  mine ${side(t.mine)}  theirs ${
            side(t.theirs)
          }` +
            `${t.unread ? `  ${t.unread} unread` : ""}${
              t.refused ? `  refused ${t.refused}` : ""
            }  ${subject}`,
        );
      }
      return 0;
    },
  },
  peers: {
    summary: "list known peers",
    usage: "awp peers",
    flags: [],
    async run(ctx) {
      const r = await ctx.call("peers", {}, { start: true }) as {
        peers: PeerSummary[];
      };
      if (ctx.out.json) ctx.out.value(r);
      else if (r.peers.length === 0) ctx.out.line("no peers");
      else for (const p of r.peers) ctx.out.line(peerLine(ctx.out, p));
      return 0;
    },
  },
  blobs: {
    summary: "list files sent and received, with local paths",
    usage: "awp blobs [-p PEER]",
    flags: [{ name: "peer", short: "p", type: "string" }],
    async run(ctx) {
      const r = await ctx.call("blobs", { peer: ctx.args.string("peer") }, {
        start: true,
      }) as {
        blobs: Array<
          {
            peer: string;
            ref: string;
            dir: string;
            name?: string;
            size: number;
            status: string;
            path: string;
          }
        >;
      };
      if (ctx.out.json) ctx.out.value(r);
      else if (r.blobs.length === 0) ctx.out.line("no blobs");
      else {
        for (const b of r.blobs) {
          ctx.out.line(
            `${b.dir === "out" ? "sent" : "recv"} ${b.name ?? b.ref} ${
              formatBytes(b.size)
            } ${b.status} ${shortKey(b.peer)} ${b.path}`,
          );
        }
      }
      return 0;
    },
  },
  grant: {
    summary:
      "grant capabilities to a peer (exec, fs:read, fs:write, introduce, admin)",
    usage: "awp grant [--ttl 1h] PEER CAP...",
    flags: [{ name: "ttl", type: "string" }],
    async run(ctx) {
      needPositional(ctx.args, 2, "peer and capability");
      const [to, ...caps] = ctx.args.positionals;
      const ttlMs = parseDuration(ctx.args.string("ttl") ?? "1h");
      const r = await ctx.call("grant", { to, caps, ttlMs }, {
        start: true,
      }) as {
        hash: string;
        grant: { sub: string; caps: string[]; exp: string };
      };
      if (ctx.out.json) ctx.out.value(r);
      else {ctx.out.line(
          `granted ${r.grant.caps.join(",")} to ${
            shortKey(r.grant.sub)
          } until ${r.grant.exp} (${r.hash})`,
        );}
      return 0;
    },
  },
  grants: {
    summary: "list grants issued, held and presented",
    usage: "awp grants",
    flags: [],
    async run(ctx) {
      const r = await ctx.call("grants", {}, { start: true }) as {
        grants: Array<
          {
            kind: string;
            hash: string;
            revoked: boolean;
            grant: { iss: string; sub: string; caps: string[]; exp: string };
            issName?: string;
            subName?: string;
          }
        >;
      };
      if (ctx.out.json) ctx.out.value(r);
      else if (r.grants.length === 0) ctx.out.line("no grants");
      else {
        for (const g of r.grants) {
          ctx.out.line(
            `${g.kind} ${g.grant.caps.join(",")} ${
              who(g.grant.iss, g.issName)
            } -> ${who(g.grant.sub, g.subName)} until ${g.grant.exp}${
              g.revoked ? " revoked" : ""
            } ${g.hash}`,
          );
        }
      }
      return 0;
    },
  },
  revoke: {
    summary: "stop honoring a grant, by hash",
    usage: "awp revoke HASH",
    flags: [],
    async run(ctx) {
      needPositional(ctx.args, 1, "grant hash");
      const r = await ctx.call("revoke", { hash: ctx.args.positionals[0] }, {
        start: true,
      });
      if (ctx.out.json) ctx.out.value(r);
      else ctx.out.line(`revoked ${ctx.args.positionals[0]}`);
      return 0;
    },
  },
  introduce: {
    summary: "send TO the key and address of PEER, with a grant bound to PEER",
    usage: "awp introduce [-t THREAD] [--ttl 1h] TO PEER [CAP...]",
    flags: [{ name: "thread", short: "t", type: "string" }, {
      name: "ttl",
      type: "string",
    }],
    async run(ctx) {
      needPositional(ctx.args, 2, "the peer to tell and the peer to introduce");
      const [to, peer, ...caps] = ctx.args.positionals;
      const r = await ctx.call("introduce", {
        to,
        peer,
        caps,
        thread: ctx.args.string("thread"),
        ttlMs: parseDuration(ctx.args.string("ttl") ?? "1h"),
      }, { start: true });
      if (ctx.out.json) ctx.out.value(r);
      else ctx.out.line(`introduced ${peer} to ${to}`);
      return 0;
    },
  },
  bye: {
    summary: "close the connection to a peer gracefully",
    usage: "awp bye [--reason done] PEER",
    flags: [{ name: "reason", type: "string" }],
    async run(ctx) {
      needPositional(ctx.args, 1, "peer");
      const r = await ctx.call("bye", {
        to: ctx.args.positionals[0],
        reason: ctx.args.string("reason"),
      }, {
        start: true,
      }) as { key: string; name?: string; connected: boolean };
      if (ctx.out.json) ctx.out.value(r);
      else {ctx.out.line(
          r.connected
            ? `said bye to ${who(r.key, r.name)}`
            : `${who(r.key, r.name)} is not connected`,
        );}
      return 0;
    },
  },
  alias: {
    summary: "give a peer a local nickname",
    usage: "awp alias PEER ALIAS",
    flags: [],
    async run(ctx) {
      needPositional(ctx.args, 2, "peer and alias");
      const [peer, alias] = ctx.args.positionals;
      const r = await ctx.call("alias", { peer, alias }, { start: true }) as {
        key: string;
      };
      if (ctx.out.json) ctx.out.value(r);
      else ctx.out.line(`${alias} = ${r.key}`);
      return 0;
    },
  },
  presence: {
    summary:
      "list the presence documents the daemon holds (origin, name, seq, hops, age)",
    usage: "awp presence",
    flags: [],
    help:
      "Publishing is opt-in: awp up --presence, AWP_PRESENCE=1 in the daemon's environment,\n" +
      'or "presence": true in config.json in the home. --no-relay (or "relay": false) stops\n' +
      "forwarding other agents' documents.",
    async run(ctx) {
      noPositionals(ctx.args);
      const r = await ctx.call("presence", {}, { start: true }) as {
        publishing: boolean;
        relaying: boolean;
        docs: Array<
          {
            origin: string;
            name?: string;
            seq: number;
            hops: number;
            age_ms: number;
            viaName?: string;
            via: string;
          }
        >;
      };
      if (ctx.out.json) {
        ctx.out.value(r);
        return 0;
      }
      ctx.out.line(
        `publishing ${r.publishing ? "on" : "off"}, relaying ${
          r.relaying ? "on" : "off"
        }`,
      );
      if (r.docs.length === 0) ctx.out.line("no presence documents");
      for (const d of r.docs) {
        ctx.out.line(
          `${who(d.origin, d.name)}  seq ${d.seq}  hops ${d.hops}  age ${
            formatAge(d.age_ms)
          }${d.hops > 0 ? `  via ${who(d.via, d.viaName)}` : ""}  ${d.origin}`,
        );
      }
      return 0;
    },
  },
  share: {
    summary: "show or set the hosts this agent mirrors its conversations to",
    usage: "awp share [HOST...]\n       awp share --stop",
    flags: [{ name: "stop", type: "boolean" }],
    help:
      "Hosts are names, aliases or keys of known peers. With hosts, replaces the list\n" +
      "(remembered across restarts); --stop stops sharing. The other party of each\n" +
      "thread is told. awp private keeps one thread out.",
    async run(ctx) {
      const hosts = ctx.args.positionals;
      const stop = ctx.args.bool("stop");
      if (stop && hosts.length > 0) {
        throw new UsageError("give hosts or --stop, not both");
      }
      const r = await ctx.call("share", { hosts, stop }, { start: true }) as {
        sharing: Array<{ key: string; name?: string }>;
      };
      if (ctx.out.json) ctx.out.value(r);
      else if (r.sharing.length === 0) ctx.out.line("not sharing");
      else {
        ctx.out.line(
          `sharing with ${r.sharing.map((h) => who(h.key, h.name)).join(", ")}`,
        );
      }
      return 0;
    },
  },
  private: {
    summary: "keep a thread out of conversation sharing, on both sides",
    usage: "awp private [PEER] THREAD",
    flags: [],
    help:
      "This agent stops mirroring the thread, the other agent is asked to stop too, and\n" +
      "hosts that hold a copy forget it. PEER can be left out when the thread id is unique.",
    async run(ctx) {
      const p = ctx.args.positionals;
      needPositional(ctx.args, 1, "thread");
      if (p.length > 2) throw new UsageError(`unexpected argument "${p[2]}"`);
      const [peer, thread] = p.length === 2 ? p : [undefined, p[0]];
      const r = await ctx.call("private", { peer, thread }, {
        start: true,
      }) as { th: string; id: string; peer: string; peerName?: string };
      if (ctx.out.json) ctx.out.value(r);
      else ctx.out.line(`${r.th} private with ${who(r.peer, r.peerName)}`);
      return 0;
    },
  },
  ...PROFILE_COMMANDS,
  mirrored: {
    summary:
      "list threads other agents mirror here, or one thread's lines (kept apart from ours)",
    usage: "awp mirrored [--sharer PEER] [THREAD]",
    flags: [{ name: "sharer", type: "string" }],
    async run(ctx) {
      const p = ctx.args.positionals;
      if (p.length > 1) throw new UsageError(`unexpected argument "${p[1]}"`);
      const r = await ctx.call("mirrored", {
        sharer: ctx.args.string("sharer"),
        thread: p[0],
      }, { start: true }) as {
        threads?: Array<
          {
            sharer: string;
            sharerName?: string;
            of: string;
            of_name?: string;
            th: string;
            subject?: string;
            count: number;
            updated: number;
          }
        >;
        lines?: Array<
          {
            from: string;
            fromName?: string;
            n: number;
            t: string;
            line: Record<string, unknown>;
          }
        >;
      };
      if (ctx.out.json) {
        ctx.out.value(r);
        return 0;
      }
      if (r.lines) {
        for (const l of r.lines) {
          const parts = Array.isArray(l.line.parts)
            ? l.line.parts as Array<Record<string, unknown>>
            : [];
          const text = l.t === "state"
            ? `state ${String(l.line.state)}${
              typeof l.line.note === "string" ? ` (${l.line.note})` : ""
            }`
            : parts.filter((x) => x.k === "text").map((x) => String(x.text))
              .join("\n") || l.t;
          ctx.out.line(`${l.n} ${who(l.from, l.fromName)}: ${text}`);
        }
        return 0;
      }
      const threads = r.threads ?? [];
      if (threads.length === 0) ctx.out.line("no mirrored threads");
      const now = Date.now();
      for (const t of threads) {
        ctx.out.line(
          `${t.th}  ${who(t.sharer, t.sharerName)} with ${
            who(t.of, t.of_name)
          }  ${t.count} lines  ${formatAge(now - t.updated)}  ${
            t.subject ?? ""
          }`.trimEnd(),
        );
      }
      return 0;
    },
  },
  samvad: SAMVAD_COMMAND,
};

function peerLine(out: Output, p: PeerSummary): string {
  const state = p.connected
    ? out.green("connected")
    : p.waking
    ? `waking${p.unreachable ? ` since ${p.unreachable.since}` : ""}`
    : p.unreachable
    ? `unreachable since ${p.unreachable.since}${
      p.unreachable.error ? ` (${p.unreachable.error})` : ""
    }`
    : "away";
  return `${
    who(p.key, p.alias ?? p.name)
  }  ${state}  queued ${p.queued}  open ${p.openThreads}  unread ${p.unread}` +
    `${p.caps.length ? `  holds ${p.caps.join(",")}` : ""}  ${p.key}`;
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

function printIdentity(out: Output, s: StatusResult): void {
  out.line(`${out.bold(s.name ?? "awp")} ${s.key}`);
  for (const a of s.addrs) out.line(`  ${a}`);
  if (s.inspector) out.line(`inspector ${s.inspector}`);
  if (s.web) out.line(`web ${s.web}`);
}
