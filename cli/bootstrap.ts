/**
 * `awp bootstrap [--harness NAME | --all] [--dry-run] [--uninstall] [--list]`:
 * writes the `awp mcp` server entry and the `awp hook` hooks into the
 * configuration of Claude Code, Codex, Cursor and Gemini CLI, merged with
 * what is there. Running it again changes nothing; the first change to a
 * file keeps a copy in `FILE.awp-backup`; `--uninstall` puts the file back
 * as it was when nothing else changed it since, and otherwise removes just
 * our entries; `--dry-run` prints the diff and writes nothing.
 *
 * @module
 */

import { createTwoFilesPatch } from "npm:diff@^9.0.0";
import { parseArgs, UsageError } from "./args.ts";
import { noPositionals } from "./command.ts";
import {
  addHooks,
  formatJson,
  type HookSpec,
  type JsonObject,
  parseJsonObject,
  removeEntry,
  removeHooks,
  removeTomlTable,
  setEntry,
  setTomlTable,
} from "./config_edit.ts";
import { resolveHome } from "./home.ts";
import { selfCommand } from "./self_command.ts";
import { packageModuleUrl } from "../peer/lazy_import.ts";
import { errorText } from "../wire/error_text.ts";

/** How `awp mcp` and `awp hook` are started by a harness. */
export interface AwpCommands {
  /** The MCP server: executable and arguments. */
  mcp: { command: string; args: string[] };
  /** The shell command of a hook. */
  hook(format: string, event: "session-start" | "inbox" | "stop"): string;
}

/** One configuration file of a harness and how our entries go in and out. */
interface ConfigFile {
  /** Relative to the user's home directory. */
  path: string;
  install(text: string | undefined, awp: AwpCommands, path: string): string;
  uninstall(text: string, path: string): string;
}

/** A coding agent whose configuration bootstrap knows. */
interface Harness {
  id: string;
  title: string;
  /** Its configuration directory (relative to home): present means installed. */
  dir: string;
  files: ConfigFile[];
}

const HOOK_TIMEOUT_S = 10;
/** Long enough for a 600 s long poll (awp_read, awp_request). */
const TOOL_TIMEOUT_S = 660;

function jsonFile(
  path: string,
  install: (obj: JsonObject, awp: AwpCommands) => void,
  uninstall: (obj: JsonObject) => void,
): ConfigFile {
  return {
    path,
    install(text, awp, full) {
      const obj = parseJsonObject(text, full);
      install(obj, awp);
      return formatJson(obj, text);
    },
    uninstall(text, full) {
      const obj = parseJsonObject(text, full);
      uninstall(obj);
      return formatJson(obj, text);
    },
  };
}

/** Hooks in the event → [{matcher?, hooks: [...]}] layout, for `format`. */
function groupedHooks(
  awp: AwpCommands,
  format: string,
  events: Record<string, "session-start" | "inbox" | "stop">,
  extra: (event: string) => JsonObject = () => ({}),
): HookSpec[] {
  return Object.entries(events).map(([event, kind]) => ({
    event,
    entry: {
      type: "command",
      command: awp.hook(format, kind),
      ...extra(kind),
    },
  }));
}

/** Claude Code's hooks file layout, which Codex shares. */
function claudeStyleHooks(path: string, format: string): ConfigFile {
  return jsonFile(path, (obj, awp) =>
    addHooks(
      obj,
      groupedHooks(awp, format, {
        SessionStart: "session-start",
        UserPromptSubmit: "inbox",
        PostToolUse: "inbox",
        Stop: "stop",
      }, () => ({ timeout: HOOK_TIMEOUT_S })),
      true,
    ), removeHooks);
}

const HARNESSES: Harness[] = [
  {
    id: "claude",
    title: "Claude Code",
    dir: ".claude",
    files: [
      jsonFile(
        ".claude.json",
        (obj, awp) =>
          setEntry(obj, "mcpServers", "awp", {
            type: "stdio",
            command: awp.mcp.command,
            args: awp.mcp.args,
            env: {},
          }),
        (obj) => removeEntry(obj, "mcpServers", "awp"),
      ),
      claudeStyleHooks(".claude/settings.json", "claude"),
    ],
  },
  {
    id: "codex",
    title: "Codex",
    dir: ".codex",
    files: [
      {
        path: ".codex/config.toml",
        install: (text, awp) =>
          setTomlTable(text ?? "", "mcp_servers.awp", {
            command: awp.mcp.command,
            args: awp.mcp.args,
            tool_timeout_sec: TOOL_TIMEOUT_S,
          }),
        uninstall: (text) => removeTomlTable(text, "mcp_servers.awp"),
      },
      claudeStyleHooks(".codex/hooks.json", "codex"),
    ],
  },
  {
    id: "cursor",
    title: "Cursor",
    dir: ".cursor",
    files: [
      jsonFile(
        ".cursor/mcp.json",
        (obj, awp) =>
          setEntry(obj, "mcpServers", "awp", {
            command: awp.mcp.command,
            args: awp.mcp.args,
          }),
        (obj) => removeEntry(obj, "mcpServers", "awp"),
      ),
      jsonFile(".cursor/hooks.json", (obj, awp) => {
        obj.version ??= 1;
        addHooks(obj, [
          {
            event: "sessionStart",
            entry: { command: awp.hook("cursor", "session-start") },
          },
          { event: "stop", entry: { command: awp.hook("cursor", "stop") } },
        ], false);
      }, removeHooks),
    ],
  },
  {
    id: "gemini",
    title: "Gemini CLI",
    dir: ".gemini",
    files: [
      jsonFile(".gemini/settings.json", (obj, awp) => {
        setEntry(obj, "mcpServers", "awp", {
          command: awp.mcp.command,
          args: awp.mcp.args,
          timeout: TOOL_TIMEOUT_S * 1000,
        });
        addHooks(
          obj,
          groupedHooks(
            awp,
            "gemini",
            {
              SessionStart: "session-start",
              BeforeAgent: "inbox",
              AfterAgent: "stop",
            },
            (kind) => ({ name: `awp-${kind}`, timeout: HOOK_TIMEOUT_S * 1000 }),
          ),
          true,
        );
      }, (obj) => {
        removeEntry(obj, "mcpServers", "awp");
        removeHooks(obj);
      }),
    ],
  },
];

/**
 * The harness ids bootstrap knows.
 *
 * @example
 * ```ts
 * import { HARNESS_IDS } from "./bootstrap.ts";
 * console.log(HARNESS_IDS); // ["claude", "codex", "cursor", "gemini"]
 * ```
 */
export const HARNESS_IDS: readonly string[] = HARNESSES.map((h) => h.id);

/** Quotes a word for a POSIX shell when it needs it. */
function shellWord(s: string): string {
  return /^[A-Za-z0-9_\/.:@%+=,-]+$/.test(s)
    ? s
    : `'${s.replace(/'/g, `'\\''`)}'`;
}

/**
 * How a harness starts `awp mcp` and `awp hook` from this installation: the
 * compiled binary itself when run from one; else Deno with this checkout's
 * entry (a hook runs `cli/hook.ts` directly, which loads far less).
 *
 * @example
 * ```ts
 * import { awpCommands } from "./bootstrap.ts";
 * console.log(awpCommands([]).hook("claude", "stop").endsWith("hook --format claude stop")); // true
 * ```
 */
export function awpCommands(homeArgs: string[]): AwpCommands {
  const mcp = selfCommand(["mcp", ...homeArgs]);
  const hookEntry = packageModuleUrl("cli/hook.ts");
  return {
    mcp,
    hook(format, event) {
      const words = ["hook", "--format", format, event, ...homeArgs];
      const argv = !Deno.build.standalone && hookEntry.protocol === "file:"
        ? [Deno.execPath(), "run", "-A", hookEntry.pathname, ...words]
        : (({ command, args }) => [command, ...args])(selfCommand(words));
      return argv.map(shellWord).join(" ");
    },
  };
}

interface Change {
  harness: string;
  /** Absolute path. */
  path: string;
  before?: string;
  /** undefined: the file is removed. */
  after?: string;
  /** Restore mode: the backup is used up. */
  dropBackup?: boolean;
  note?: string;
}

function userHome(): string {
  const home = Deno.env.get("HOME") ?? Deno.env.get("USERPROFILE");
  if (!home) throw new Error("cannot find your home directory: set HOME");
  return home.replace(/\/+$/, "");
}

async function readMaybe(path: string): Promise<string | undefined> {
  try {
    return await Deno.readTextFile(path);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return undefined;
    throw new Error(
      `cannot read ${path}: ${errorText(error)}`,
    );
  }
}

async function plan(
  harness: Harness,
  home: string,
  awp: AwpCommands,
  uninstall: boolean,
): Promise<Change[]> {
  const changes: Change[] = [];
  for (const file of harness.files) {
    const path = `${home}/${file.path}`;
    const before = await readMaybe(path);
    if (!uninstall) {
      changes.push({
        harness: harness.id,
        path,
        before,
        after: file.install(before, awp, path),
      });
      continue;
    }
    if (before === undefined) continue;
    const backup = await readMaybe(`${path}.awp-backup`);
    // Untouched since we installed: put back exactly what was there.
    if (before === file.install(backup, awp, path)) {
      changes.push({
        harness: harness.id,
        path,
        before,
        after: backup,
        dropBackup: true,
      });
      continue;
    }
    changes.push({
      harness: harness.id,
      path,
      before,
      after: file.uninstall(before, path),
      ...(backup !== undefined
        ? {
          note:
            `the file changed since; the copy from before stays in ${path}.awp-backup`,
        }
        : {}),
    });
  }
  return changes;
}

async function writeAtomically(path: string, text: string): Promise<void> {
  const dir = path.slice(0, path.lastIndexOf("/"));
  await Deno.mkdir(dir, { recursive: true });
  let mode = 0o600;
  try {
    mode = (await Deno.stat(path)).mode! & 0o777;
  } catch { /* a new file: private, it may come to hold tokens */ }
  const tmp = `${path}.awp-tmp-${Deno.pid}`;
  await Deno.writeTextFile(tmp, text, { mode });
  await Deno.chmod(tmp, mode);
  await Deno.rename(tmp, path);
}

async function apply(change: Change): Promise<void> {
  const backup = `${change.path}.awp-backup`;
  if (change.dropBackup) {
    if (change.after === undefined) await Deno.remove(change.path);
    else await writeAtomically(change.path, change.after);
    await Deno.remove(backup).catch(() => {});
    return;
  }
  if (change.before !== undefined && (await readMaybe(backup)) === undefined) {
    await writeAtomically(backup, change.before);
  }
  await writeAtomically(change.path, change.after!);
}

function display(path: string, home: string): string {
  return path.startsWith(`${home}/`) ? `~${path.slice(home.length)}` : path;
}

const USAGE =
  "awp bootstrap [--harness NAME]... [--all] [--dry-run] [--uninstall] [--list] [--home DIR]";

const HELP = `usage: ${USAGE}

Adds awp to coding agents: the MCP server (awp mcp) and the hooks (awp hook)
in each one's configuration, merged with what is there.

  --harness NAME  ${
  HARNESS_IDS.join(", ")
} (repeatable; default: those installed)
  --all           every harness bootstrap knows, installed or not
  --dry-run       print the changes as a diff; write nothing
  --uninstall     take awp out again (the file as it was, when nothing else changed it)
  --list          show each harness, its files and whether awp is in them
  --home DIR      the awp home the MCP server and hooks use (default ~/.awp)

Running it again changes nothing. The first change to a file keeps the old one as
FILE.awp-backup. Restart the agent afterwards.`;

/**
 * `awp bootstrap`: resolves with the exit code (1 when a file could not be
 * changed, 2 on a usage error).
 *
 * @example
 * ```ts ignore
 * import { bootstrapMain } from "./bootstrap.ts";
 * await bootstrapMain(["--all", "--dry-run"]);
 * ```
 */
export async function bootstrapMain(argv: string[]): Promise<number> {
  const args = parseArgs(argv, [
    { name: "harness", type: "list" },
    { name: "all", type: "boolean" },
    { name: "dry-run", type: "boolean" },
    { name: "uninstall", type: "boolean" },
    { name: "list", type: "boolean" },
  ]);
  if (args.bool("help")) {
    console.log(HELP);
    return 0;
  }
  noPositionals(args);
  const names = args.list("harness").flatMap((n) => n.split(",")).map((n) =>
    n.trim().toLowerCase()
  ).filter(Boolean);
  for (const n of names) {
    if (!HARNESS_IDS.includes(n)) {
      throw new UsageError(
        `unknown harness "${n}": use ${HARNESS_IDS.join(", ")}`,
      );
    }
  }
  if (names.length && args.bool("all")) {
    throw new UsageError("give --harness or --all, not both");
  }
  const home = userHome();
  const homeArgs = args.has("home")
    ? ["--home", resolveHome(args.string("home"))]
    : [];
  const awp = awpCommands(homeArgs);
  const installed = async (h: Harness) => {
    try {
      return (await Deno.stat(`${home}/${h.dir}`)).isDirectory;
    } catch {
      return false;
    }
  };

  if (args.bool("list")) {
    for (const h of HARNESSES) {
      const states = [];
      for (const f of h.files) {
        const text = await readMaybe(`${home}/${f.path}`).catch(() =>
          undefined
        );
        const has = text !== undefined && /\bmcp\b|hook --format/.test(text) &&
          /awp/.test(text);
        states.push(
          `${display(`${home}/${f.path}`, home)} ${has ? "has awp" : "-"}`,
        );
      }
      console.log(
        `${h.id.padEnd(7)} ${h.title.padEnd(12)} ${
          (await installed(h)) ? "installed" : "not found"
        }  ${states.join("  ")}`,
      );
    }
    return 0;
  }

  let chosen = args.bool("all")
    ? HARNESSES
    : names.length
    ? HARNESSES.filter((h) => names.includes(h.id))
    : [];
  if (!args.bool("all") && names.length === 0) {
    for (const h of HARNESSES) if (await installed(h)) chosen.push(h);
    if (chosen.length === 0) {
      throw new UsageError(
        `no coding agent found in ${home} (${
          HARNESSES.map((h) => `~/${h.dir}`).join(", ")
        }): give --harness NAME or --all`,
      );
    }
  }
  chosen = [...new Set(chosen)];
  const dry = args.bool("dry-run");
  const uninstall = args.bool("uninstall");
  let failed = 0;
  for (const h of chosen) {
    let changes: Change[];
    try {
      changes = await plan(h, home, awp, uninstall);
    } catch (error) {
      console.error(
        `awp: ${h.id}: ${errorText(error)}`,
      );
      failed++;
      continue;
    }
    for (const c of changes) {
      const shown = display(c.path, home);
      if (c.after === c.before) {
        console.log(`${h.id}: ${shown} unchanged`);
        continue;
      }
      if (dry) {
        console.log(
          createTwoFilesPatch(
            c.before === undefined ? "/dev/null" : `a/${shown}`,
            c.after === undefined ? "/dev/null" : `b/${shown}`,
            c.before ?? "",
            c.after ?? "",
            "",
            "",
            { context: 3 },
          ).replace(/^=+\n/, "").trimEnd(),
        );
        continue;
      }
      try {
        await apply(c);
      } catch (error) {
        console.error(
          `awp: ${h.id}: cannot write ${shown}: ${errorText(error)}`,
        );
        failed++;
        continue;
      }
      const what = c.after === undefined
        ? "removed (awp had created it)"
        : c.dropBackup
        ? "restored"
        : uninstall
        ? "awp removed"
        : c.before === undefined
        ? "created"
        : `updated (the old one is in ${shown}.awp-backup)`;
      console.log(`${h.id}: ${shown} ${what}${c.note ? `; ${c.note}` : ""}`);
    }
  }
  if (!dry && !uninstall && failed === 0) {
    console.log("Restart the coding agent to load awp.");
  }
  return failed ? 1 : 0;
}
