/**
 * What every `awp` command is: a table row (summary, usage, flags, help)
 * with a small handler, and the one helper the handlers share to call the
 * daemon's control API and print its answer, as one JSON line under
 * `--json` or as lines for a person.
 *
 * @module
 */

import { type Args, type FlagSpec, UsageError } from "./args.ts";
import { controlCall } from "./control.ts";
import { checkHomeIsDirectory, ensureDaemon } from "./ensure_daemon.ts";
import { homePaths, resolveHome } from "./home.ts";
import type { Output } from "./output.ts";

/** How a command calls the daemon. */
export interface CallOptions {
  /** Start the daemon first when it is not running. */
  start?: boolean;
  /** Takes each item the daemon streams before its answer. */
  onItem?: (item: unknown) => void | Promise<void>;
  signal?: AbortSignal;
}

/** What a command gets to run with. */
export interface CommandContext {
  args: Args;
  out: Output;
  home: string;
  /** Calls the daemon; `start` starts it first when it is not running. */
  call(
    op: string,
    args?: Record<string, unknown>,
    options?: CallOptions,
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

/**
 * The human form of an answer: the lines to print (none for an empty
 * array; a handler that prints otherwise, e.g. to stderr, returns none).
 */
export type HumanForm<T> = (answer: T, out: Output) => string | string[];

/**
 * Builds the context a command's `run` gets: the home from `--home`,
 * `$AWP_HOME` or `~/.awp`, and a `call` that talks to its daemon.
 *
 * @example
 * ```ts
 * import { makeContext } from "./command.ts";
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

/**
 * Prints `answer`: as one JSON line under `--json`, else the lines its
 * human form gives.
 *
 * @example
 * ```ts
 * import { printAnswer } from "./command.ts";
 * import { Output } from "./output.ts";
 * printAnswer(new Output({ json: false }), { key: "k" }, (r) => `key ${r.key}`);
 * ```
 */
export function printAnswer<T>(out: Output, answer: T, human: HumanForm<T>) {
  if (out.json) {
    out.value(answer);
    return;
  }
  const lines = human(answer, out);
  for (const line of typeof lines === "string" ? [lines] : lines) {
    out.line(line);
  }
}

/**
 * Calls the daemon's control op `op` (starting the daemon first unless
 * `options.start` is false) and prints the answer with {@link printAnswer}.
 * Resolves with the answer.
 *
 * @example
 * ```ts ignore
 * import { callPrint, makeContext } from "./command.ts";
 * import { parseArgs } from "./args.ts";
 * import { Output } from "./output.ts";
 * const ctx = makeContext(parseArgs([], []), new Output({ json: false }));
 * await callPrint(ctx, "peers", {}, (r: { peers: unknown[] }) => `${r.peers.length} peers`);
 * ```
 */
export async function callPrint<T>(
  ctx: CommandContext,
  op: string,
  args: Record<string, unknown>,
  human: HumanForm<T>,
  options: CallOptions = {},
): Promise<T> {
  const answer = await ctx.call(op, args, {
    start: true,
    ...options,
  }) as T;
  printAnswer(ctx.out, answer, human);
  return answer;
}

/** A command that takes no arguments says so about the first one given. */
export function noPositionals(args: Args): void {
  atMostPositionals(args, 0);
}

/** A command that needs `n` arguments names what is missing. */
export function needPositional(args: Args, n: number, what: string): void {
  if (args.positionals.length < n) throw new UsageError(`missing ${what}`);
}

/** At most `n` arguments: the first extra one is named. */
export function atMostPositionals(args: Args, n: number): void {
  if (args.positionals.length > n) {
    throw new UsageError(`unexpected argument "${args.positionals[n]}"`);
  }
}
