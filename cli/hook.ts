/**
 * `awp hook [--format claude|codex|gemini|cursor|text] session-start|inbox|stop`:
 * what a coding agent's harness injects at the right moments, in that
 * harness's documented hook output shape.
 *
 * - session-start: identity, addresses, connected peers, unread messages.
 * - inbox: messages that arrived since the last hook (they are marked read).
 * - stop: blocks the agent's stop while something waits on it (unread
 *   messages, a peer waiting for a reply, a thread it said it is working
 *   on), once: it stays quiet when the harness says a stop hook already
 *   continued the agent (`stop_hook_active`, or Cursor's `loop_count`).
 *
 * Prints nothing when there is nothing new or no daemon runs (a hook never
 * starts it) and never fails the session: errors go to stderr, exit 0.
 *
 * @module
 */

import { parseArgs, UsageError } from "./args.ts";
import { controlCall, NoDaemonError } from "./control.ts";
import { homePaths, resolveHome } from "./home.ts";
import {
  peerLabel,
  renderItems,
  UNTRUSTED_NOTICE,
  wrapUntrusted,
} from "./agent_text.ts";
import type { InboxItem, StatusResult, ThreadRow } from "./protocol.ts";
import { errorText } from "../wire/error_text.ts";

/** The harness hook output shapes. */
export type HookFormat = "claude" | "codex" | "gemini" | "cursor" | "text";

/** The moments a hook runs at. */
export type HookEvent = "session-start" | "inbox" | "stop";

/** One thread as the daemon lists it, and whether we answered its latest state. */
export interface HookThread extends Omit<ThreadRow, "updated"> {
  /** We sent something in the thread after the peer's latest state. */
  answered?: boolean;
}

/** What the daemon said, gathered before rendering. */
export interface HookSnapshot {
  /** For session-start. */
  status?: StatusResult;
  /** Unread messages and notices (now marked read). */
  items: InboxItem[];
  /** Open threads (for stop). */
  threads?: HookThread[];
}

/** Longest a hook waits for the daemon. */
const HOOK_DEADLINE_MS = 3_000;

const FORMATS: readonly HookFormat[] = [
  "claude",
  "codex",
  "gemini",
  "cursor",
  "text",
];
const EVENTS: readonly HookEvent[] = ["session-start", "inbox", "stop"];

const HELP =
  `usage: awp hook [--format claude|codex|gemini|cursor|text] session-start|inbox|stop

Prints what a coding agent's hook injects, in the harness's JSON hook output
(default claude). Reads the hook's JSON input on stdin when there is one.
Never starts the daemon; prints nothing when it is not running or nothing is new.

  session-start  identity, addresses, connected peers and unread messages
  inbox          messages that arrived since the last hook (marked read)
  stop           keeps the agent going, once, while messages or a peer wait on it

awp bootstrap installs these hooks.`;

/** The event name the harness expects back, when its input does not say. */
function defaultEventName(format: HookFormat, event: HookEvent): string {
  if (format === "gemini") {
    return event === "session-start"
      ? "SessionStart"
      : event === "stop"
      ? "AfterAgent"
      : "BeforeAgent";
  }
  return event === "session-start"
    ? "SessionStart"
    : event === "stop"
    ? "Stop"
    : "UserPromptSubmit";
}

/** True when the harness says a stop hook already kept the agent going. */
function stopAlreadyContinued(input: Record<string, unknown>): boolean {
  if (input.stop_hook_active === true) return true;
  return typeof input.loop_count === "number" && input.loop_count > 0;
}

function sessionText(s: StatusResult, items: InboxItem[]): string {
  const lines = [
    `awp is running on this machine as ${s.name ?? "awp"} (key ${s.key}).`,
    `Addresses another agent can reach you at: ${s.addrs.join(" ")}`,
  ];
  const connected = s.peers.filter((p) => p.connected);
  if (connected.length) {
    lines.push(
      `Connected peers: ${
        connected.map((p) =>
          `${
            peerLabel(p.key, p.alias ?? p.name)
          } (${p.openThreads} open threads)`
        ).join(", ")
      }`,
    );
  }
  if (items.length) {
    lines.push(`Unread awp messages (${items.length}):`, renderItems(items));
  }
  lines.push(
    "Use the awp tools (awp_read, awp_send, awp_state) to answer; reply in the same thread.",
  );
  return lines.join("\n");
}

/** Open threads where the other agent waits on this one. */
function waitingThreads(threads: HookThread[]): string[] {
  const out: string[] = [];
  for (const t of threads) {
    const theirs = t.theirs;
    const mine = t.mine;
    const who = peerLabel(t.peer, t.peerName);
    if (
      theirs?.state === "waiting" && !t.answered &&
      (!mine || Date.parse(mine.ts) <= Date.parse(theirs.ts))
    ) {
      out.push(`${t.th}: ${who} is waiting for your reply`);
    } else if (mine?.state === "working") {
      out.push(
        `${t.th}: you told ${who} you are working on it; report done or failed (awp_state) or send what you have`,
      );
    }
  }
  return out;
}

function stopText(items: InboxItem[], waiting: string[]): string {
  const lines = [
    "Before you stop: other agents are waiting on you over awp. Handle this (reply with awp_send in the thread, set awp_state, or tell your user why not), then finish.",
    UNTRUSTED_NOTICE,
  ];
  if (waiting.length) {
    lines.push(wrapUntrusted(waiting.join("\n"), { kind: "threads" }));
  }
  if (items.length) {
    lines.push(
      `New messages (${items.length}):`,
      renderItems(items, { notice: false }),
    );
  }
  return lines.join("\n");
}

/**
 * Renders a hook's output for `format` from what the daemon said, or
 * `undefined` when the hook should print nothing. Pure: the golden tests
 * call it with fixed snapshots.
 *
 * @example
 * ```ts
 * import { renderHook } from "./hook.ts";
 * console.log(renderHook("claude", "inbox", {}, { items: [] })); // undefined
 * ```
 */
export function renderHook(
  format: HookFormat,
  event: HookEvent,
  input: Record<string, unknown>,
  snapshot: HookSnapshot,
): string | undefined {
  const eventName = typeof input.hook_event_name === "string"
    ? input.hook_event_name
    : defaultEventName(format, event);
  let text: string;
  if (event === "stop") {
    if (stopAlreadyContinued(input)) return undefined;
    const waiting = waitingThreads(snapshot.threads ?? []);
    if (snapshot.items.length === 0 && waiting.length === 0) return undefined;
    const reason = stopText(snapshot.items, waiting);
    switch (format) {
      case "text":
        return reason;
      case "cursor":
        return JSON.stringify({ followup_message: reason });
      case "gemini":
        return JSON.stringify({ decision: "deny", reason });
      default:
        return JSON.stringify({ decision: "block", reason });
    }
  }
  if (event === "session-start") {
    if (!snapshot.status) return undefined;
    text = sessionText(snapshot.status, snapshot.items);
  } else {
    if (snapshot.items.length === 0) return undefined;
    text = `New awp messages (${snapshot.items.length}):\n${
      renderItems(snapshot.items)
    }`;
  }
  switch (format) {
    case "text":
      return text;
    case "cursor":
      return JSON.stringify({ additional_context: text });
    default:
      return JSON.stringify({
        hookSpecificOutput: {
          hookEventName: eventName,
          additionalContext: text,
        },
      });
  }
}

/** Reads the hook's JSON input from stdin, if a harness piped one (never waits long). */
async function readInput(): Promise<Record<string, unknown>> {
  if (Deno.stdin.isTerminal()) return {};
  const decoder = new TextDecoder();
  let text = "";
  const reading = (async () => {
    for await (const chunk of Deno.stdin.readable) {
      text += decoder.decode(chunk, { stream: true });
      if (text.length > 1 << 20) break;
    }
  })().catch(() => {});
  let timer: ReturnType<typeof setTimeout> | undefined;
  await Promise.race([
    reading,
    new Promise((r) => timer = setTimeout(r, 1000)),
  ]);
  clearTimeout(timer);
  try {
    const value = JSON.parse(text);
    return typeof value === "object" && value !== null && !Array.isArray(value)
      ? value
      : {};
  } catch {
    return {};
  }
}

/** True when our latest line in the thread comes after the peer's latest state (log order). */
async function answered(
  call: (op: string, a: Record<string, unknown>) => Promise<unknown>,
  t: HookThread,
): Promise<boolean> {
  const { items } = await call("read", {
    thread: t.th,
    peer: t.peer,
    last: 50,
    mark: false,
  }) as { items: InboxItem[] };
  const theirState = items.findLastIndex((i) =>
    i.dir === "in" && i.event === "state"
  );
  return items.findLastIndex((i) => i.dir === "out") > theirState;
}

/**
 * `awp hook`: resolves with the exit code (0 unless the command line is
 * wrong).
 *
 * @example
 * ```ts ignore
 * import { hookMain } from "./hook.ts";
 * await hookMain(["--format", "text", "inbox"]);
 * ```
 */
export async function hookMain(argv: string[]): Promise<number> {
  const args = parseArgs(argv, [{ name: "format", type: "string" }]);
  if (args.bool("help")) {
    console.log(HELP);
    return 0;
  }
  const format = (args.string("format") ?? "claude") as HookFormat;
  if (!FORMATS.includes(format)) {
    throw new UsageError(
      `unknown --format "${format}": use ${FORMATS.join(", ")}`,
    );
  }
  const event = args.positionals[0] as HookEvent;
  if (!EVENTS.includes(event) || args.positionals.length > 1) {
    throw new UsageError(
      `usage: awp hook [--format ${FORMATS.join("|")}] ${EVENTS.join("|")}`,
    );
  }
  const home = resolveHome(args.string("home"));
  const control = homePaths(home).control;
  const input = await readInput();
  if (event === "stop" && stopAlreadyContinued(input)) return 0;
  // Harnesses wait on hooks: a daemon that does not answer is given up on.
  const deadline = AbortSignal.timeout(HOOK_DEADLINE_MS);
  const call = (op: string, a: Record<string, unknown> = {}) =>
    controlCall(control, home, op, a, undefined, deadline);
  let output: string | undefined;
  try {
    // Never starts the daemon: with none running, controlCall fails at once.
    const [status, tail, threads] = await Promise.all([
      event === "session-start" ? call("status") : undefined,
      call("tail", { follow: false, mark: true }),
      event === "stop" ? call("threads", { open: true }) : undefined,
    ]) as [
      StatusResult | undefined,
      { items: InboxItem[] },
      { threads: HookThread[] } | undefined,
    ];
    for (const t of threads?.threads ?? []) {
      if (t.theirs?.state === "waiting") t.answered = await answered(call, t);
    }
    output = renderHook(format, event, input, {
      ...(status ? { status } : {}),
      items: tail.items,
      ...(threads ? { threads: threads.threads } : {}),
    });
  } catch (error) {
    if (error instanceof NoDaemonError) return 0; // nothing to say
    // A hook must not break the session: say why on stderr, print nothing.
    const why = deadline.aborted
      ? `the daemon did not answer within ${HOOK_DEADLINE_MS / 1000}s`
      : errorText(error);
    console.error(`awp hook: ${why}`);
    return 0;
  }
  if (output !== undefined) console.log(output);
  return 0;
}

// Run directly (`deno run -A cli/hook.ts inbox`), a hook skips loading the
// library and the rest of the CLI: harnesses wait on every hook.
if (import.meta.main) {
  try {
    // `awp bootstrap` writes `cli/hook.ts hook --format ...`, like the CLI's words.
    const argv = Deno.args[0] === "hook" ? Deno.args.slice(1) : Deno.args;
    Deno.exit(await hookMain(argv));
  } catch (error) {
    console.error(`awp: ${errorText(error)}`);
    Deno.exit(error instanceof UsageError ? 2 : 1);
  }
}
