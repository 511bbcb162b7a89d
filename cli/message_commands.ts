/**
 * The commands of a conversation: `listen`, `connect`, `send`, `state`,
 * `wait`, `tail`, `read` and `threads`.
 *
 * @module
 */

import { parseDuration, UsageError } from "./args.ts";
import {
  callPrint,
  type Command,
  type CommandContext,
  type HumanForm,
  needPositional,
  printAnswer,
} from "./command.ts";
import { addressArg } from "./address_arg.ts";
import { formatAge } from "./output.ts";
import { itemLine, printItems, who } from "./person_text.ts";
import { ProgressBars } from "./progress_bars.ts";
import type {
  InboxItem,
  SendResult,
  ThreadRow,
  WaitResult,
} from "./protocol.ts";
import { sendParts, wordsWithStdin } from "./send_parts.ts";

/**
 * {@link callPrint} with blob progress bars drawn from the items the
 * daemon streams meanwhile; `onItem` gets the items that are not progress.
 */
async function callPrintWithBars<T>(
  ctx: CommandContext,
  op: string,
  args: Record<string, unknown>,
  human: HumanForm<T>,
  onItem?: (item: unknown) => void,
): Promise<T> {
  const bars = new ProgressBars();
  let answer: T;
  try {
    answer = await ctx.call(op, args, {
      start: true,
      onItem: (item) => {
        if (!bars.take(item)) onItem?.(item);
      },
    }) as T;
  } finally {
    bars.finish();
  }
  printAnswer(ctx.out, answer, human);
  return answer;
}

/** The daemon's word for how far a sent line got. */
function delivery(r: SendResult, queued: string): string {
  return r.acked ? "delivered" : r.connected ? "(delivering)" : queued;
}

/** The wait-ack flag as milliseconds, when given. */
function waitAckMs(ctx: CommandContext): number | undefined {
  const waitAck = ctx.args.string("wait-ack");
  return waitAck === undefined ? undefined : parseDuration(waitAck);
}

/**
 * `listen`, `connect`, `send`, `state`, `wait`, `tail`, `read` and
 * `threads`, by name.
 *
 * @example
 * ```ts
 * import { MESSAGE_COMMANDS } from "./message_commands.ts";
 * console.log(MESSAGE_COMMANDS.send.usage.startsWith("awp send")); // true
 * ```
 */
export const MESSAGE_COMMANDS: Record<string, Command> = {
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
        { start: true },
      ) as { key: string; addrs: string[] };
      const text = ctx.args.bool("text") && !ctx.out.json;
      if (text) {
        ctx.out.line(`listening on ${res.addrs.join(" ")} as ${res.key}`);
      } else {
        ctx.out.value({
          event: "listening",
          key: res.key,
          addrs: res.addrs,
          addr: res.addrs[0],
        });
      }
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
      await callPrint<{
        key?: string;
        name?: string;
        already?: boolean;
        dialing?: boolean;
        address?: string;
        error?: string;
      }>(
        ctx,
        "connect",
        { target, timeoutMs, wait: ctx.args.bool("wait") },
        (r) =>
          r.dialing
            ? `${r.address} does not answer (${r.error}); the daemon keeps dialing it (awp connect --wait waits)`
            : `${r.already ? "already connected to" : "connected to"} ${
              who(r.key!, r.name)
            } ${r.key}`,
      );
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
      const { parts, files } = await sendParts(a);
      // A malformed address as the peer is a usage error, as for connect.
      const to = a.string("to") ??
        (a.positionals.length > 1 ? a.positionals[0] : undefined);
      if (to !== undefined) addressArg(to);
      const words = await wordsWithStdin([...a.positionals]);
      await callPrintWithBars<SendResult>(ctx, "send", {
        to: a.string("to"),
        thread: a.string("thread"),
        subject: a.string("subject"),
        re: a.string("re"),
        words,
        parts,
        files,
        waitAckMs: waitAckMs(ctx),
        // On a terminal, the daemon streams the blobs' progress until the ack.
        progress: files.length > 0 && Deno.stderr.isTerminal(),
      }, (r, out) => {
        if (r.note) out.note(r.note);
        return `${r.th} ${r.id} ${
          delivery(r, "queued until the peer is reachable")
        }`;
      });
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
      await callPrint<SendResult>(ctx, "state", {
        to,
        thread: th,
        state,
        note: ctx.args.string("note"),
        waitAckMs: waitAckMs(ctx),
      }, (r) => `${r.th} ${state} ${delivery(r, "queued")}`);
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
      const timeout = ctx.args.string("timeout") ?? "5m";
      const r = await callPrintWithBars<WaitResult>(ctx, "wait", {
        thread: ctx.args.string("thread"),
        peer: ctx.args.string("peer"),
        states,
        timeoutMs: parseDuration(timeout),
        progress: Deno.stderr.isTerminal(),
      }, (r, out) => [
        ...r.items.map((item) => itemLine(out, item)),
        ...(states
          ? [
            `state: ${r.state ?? "none"}${r.matched ? "" : " (still waiting)"}`,
          ]
          : []),
      ]);
      if (r.timedOut && !ctx.out.json) {
        ctx.out.error(`timed out after ${timeout}`);
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
            if (!bars.take(item)) printItems(ctx.out, [item as InboxItem]);
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
      await callPrint<{ items: InboxItem[] }>(ctx, "read", {
        thread: ctx.args.positionals[0],
        peer: ctx.args.string("peer"),
        last,
        mark: !ctx.args.bool("no-mark"),
      }, (r, out) => r.items.map((item) => itemLine(out, item)));
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
      const wide = ctx.args.bool("wide");
      await callPrint<{ threads: ThreadRow[] }>(ctx, "threads", {
        open: ctx.args.bool("open"),
        peer: ctx.args.string("peer"),
      }, (r) => {
        const now = Date.now();
        return r.threads.length === 0
          ? "no threads"
          : r.threads.map((t) => threadLine(t, wide, now));
      });
      return 0;
    },
  },
};

/** One thread as `threads` lists it. */
function threadLine(t: ThreadRow, wide: boolean, now: number): string {
  const side = (s?: { state: string; ts: string }) =>
    s ? `${s.state} ${formatAge(now - Date.parse(s.ts))}` : "-";
  let subject = t.subject ?? "";
  if (!wide && subject.length > 50) subject = subject.slice(0, 49) + "…";
  return `${t.th}  ${who(t.peer, t.peerName)}  mine ${side(t.mine)}  theirs ${
    side(t.theirs)
  }` +
    `${t.unread ? `  ${t.unread} unread` : ""}${
      t.refused ? `  refused ${t.refused}` : ""
    }  ${subject}`;
}
