/**
 * The `awp` command line: dispatches to the daemon, the commands, the
 * driver and the conformance runner. With no command it runs the daemon in
 * the foreground.
 *
 * @module
 */

import config from "../deno.json" with { type: "json" };
import { type FlagSpec, parseArgs, UsageError } from "./args.ts";
import { COMMANDS } from "./commands.ts";
import { makeContext, noPositionals } from "./command.ts";
import { ControlError } from "./control.ts";
import {
  DAEMON_CONFIG_HELP,
  DAEMON_FLAGS,
  daemonFlagValues,
} from "./daemon_flags.ts";
import { resolveHome } from "./home.ts";
import { Output } from "./output.ts";
import { kvAvailable, reexecWithKv } from "./self_command.ts";
import { errorText } from "../wire/error_text.ts";
import { lazyImport } from "../peer/lazy_import.ts";

/**
 * The package version and protocol, as `version` prints them.
 *
 * @example
 * ```ts
 * import { VERSION } from "./main.ts";
 * console.log(VERSION.endsWith("(protocol v0)")); // true
 * ```
 */
export const VERSION = `awp ${config.version} (protocol v0)`;

const DAEMON_USAGE =
  "awp [daemon] [--home DIR] [--name NAME] [--about TEXT] [--listen ADDR]... [--max-blob BYTES]\n" +
  "       [--trust KEY]... [--accept any|allowlist] [--allow KEY]... [--serve exec,fs:read,fs:write]\n" +
  "       [--root DIR] [--presence] [--no-relay] [--store URL] [--inspect[=HOST:PORT]] [--allow-host HOST]...\n" +
  "       [--web[=HOST:PORT]] [--web-write]";

async function loadSchema(): Promise<unknown> {
  return (await import("../schema/awp.schema.json", { with: { type: "json" } }))
    .default;
}

function usageText(): string {
  const names = Object.keys(COMMANDS);
  const rows = names.map((n) => `  ${n.padEnd(10)} ${COMMANDS[n].summary}`);
  return [
    "usage: awp <command> [flags] [args]",
    "",
    "With no command, runs the daemon in the foreground and prints the address to share.",
    "",
    "commands:",
    `  ${"daemon".padEnd(10)} run the daemon in the foreground`,
    ...rows,
    `  ${"schema".padEnd(10)} print the JSON Schema of every message`,
    `  ${"version".padEnd(10)} print the version`,
    `  ${
      "conform".padEnd(10)
    } check a peer against the protocol (awp conform --help)`,
    `  ${
      "driver".padEnd(10)
    } run a peer driven over stdin/stdout (awp driver --help)`,
    `  ${
      "mcp".padEnd(10)
    } serve MCP over stdio for a coding agent (awp mcp --help)`,
    `  ${
      "hook".padEnd(10)
    } print what a coding agent's hook injects (awp hook --help)`,
    `  ${
      "bootstrap".padEnd(10)
    } add awp to Claude Code, Codex, Cursor, Gemini (awp bootstrap --help)`,
    "",
    "Every command takes --home DIR (default $AWP_HOME, else ~/.awp), --json and --help.",
    "A peer is its name, an alias, a key prefix (4+ characters) or an address.",
    "Exit codes: 0 ok, 1 error, 2 usage error or wait timeout, 3 no daemon.",
  ].join("\n");
}

function flagHelp(flags: FlagSpec[]): string {
  if (flags.length === 0) return "";
  const rows = flags.map((f) => {
    const name = `${f.short ? `-${f.short}, ` : ""}--${f.name}${
      f.type === "boolean" ? "" : " VALUE"
    }`;
    return `  ${name}${f.type === "list" ? "   (repeatable)" : ""}`;
  });
  return `\nflags:\n${rows.join("\n")}\n  --home DIR\n  --json\n  -h, --help`;
}

async function daemonCommand(argv: string[], out: Output): Promise<number> {
  const args = parseArgs(argv, DAEMON_FLAGS);
  if (args.bool("help")) {
    out.line(
      `usage: ${DAEMON_USAGE}${
        flagHelp([...DAEMON_FLAGS])
      }\n${DAEMON_CONFIG_HELP}`,
    );
    return 0;
  }
  noPositionals(args);
  const v = daemonFlagValues(args);
  const reexec = await reexecWithKv(["daemon", ...argv]);
  if (reexec !== undefined) return reexec;
  if (!kvAvailable()) {
    out.error(
      "durable storage needs Deno KV: run with --unstable-kv (deno run -A --unstable-kv ...)",
    );
    return 1;
  }
  // Loaded here, not at the top: `awp status` must not load the runtime.
  const { runDaemon } = await lazyImport<typeof import("./daemon.ts")>(
    "cli/daemon.ts",
  );
  return await runDaemon({
    home: resolveHome(args.string("home")),
    name: v.name,
    about: v.about,
    listen: v.listen,
    maxBlobBytes: v.maxBlobBytes,
    log: v.log,
    ...(v.inspect !== undefined ? { inspect: v.inspect } : {}),
    allowHosts: v.allowHosts,
    trust: v.trust,
    allow: v.allow,
    serve: v.serve,
    presence: v.presence,
    ...(v.relay === false ? { relay: false } : {}),
    ...(v.store ? { store: v.store } : {}),
    ...(v.accept ? { accept: v.accept } : {}),
    ...(v.root ? { root: v.root } : {}),
    ...(v.samvad ? { samvad: v.samvad } : {}),
    ...(v.execEnvPass ? { execEnvPass: v.execEnvPass } : {}),
    ...(v.bounds ? { bounds: v.bounds } : {}),
    ...(v.web !== undefined ? { web: v.web } : {}),
    ...(v.webWrite ? { webWrite: true } : {}),
    ...(v.ca?.length ? { ca: v.ca } : {}),
    ...(v.advertise ? { advertise: v.advertise } : {}),
    ...(v.cert && v.key ? { cert: v.cert, key: v.key } : {}),
    announce: !v.log,
  });
}

/** A command whose module (`path`, see `lazyImport`) loads when it runs. */
function onDemand<M>(
  path: string,
  entry: (m: M) => (rest: string[]) => Promise<number>,
): (rest: string[]) => Promise<number> {
  return async (rest) => await entry(await lazyImport<M>(path))(rest);
}

/**
 * Commands that parse their own flags (they get `--home` passed on too),
 * each loaded on demand: the MCP SDK and zod, for one, stay out of the
 * other commands.
 */
const OWN_PARSERS: Record<
  string,
  (rest: string[], out: Output) => Promise<number>
> = {
  daemon: daemonCommand,
  conform: onDemand<typeof import("../conform/cli.ts")>(
    "conform/cli.ts",
    (m) => m.conformMain,
  ),
  driver: onDemand<typeof import("./driver.ts")>(
    "cli/driver.ts",
    (m) => m.driverMain,
  ),
  mcp: onDemand<typeof import("./mcp_server.ts")>(
    "cli/mcp_server.ts",
    (m) => m.mcpMain,
  ),
  hook: onDemand<typeof import("./hook.ts")>("cli/hook.ts", (m) => m.hookMain),
  bootstrap: onDemand<typeof import("./bootstrap.ts")>(
    "cli/bootstrap.ts",
    (m) => m.bootstrapMain,
  ),
};

/** Flags every command takes, so they may come before the command too. */
const GLOBAL_FLAGS = new Set(["--home", "--json"]);

/**
 * Moves global flags given before the command (`awp --home DIR up`, as git
 * and docker allow) to after it, where every command reads them. With no
 * command after them, the words are the daemon's, unchanged.
 */
function globalsAfterCommand(argv: readonly string[]): string[] {
  const globals: string[] = [];
  let i = 0;
  while (i < argv.length) {
    const word = argv[i];
    const name = word.split("=")[0];
    if (!GLOBAL_FLAGS.has(name)) break;
    globals.push(word);
    i++;
    if (name === "--home" && !word.includes("=")) {
      if (i >= argv.length) throw new UsageError("flag --home needs a value");
      globals.push(argv[i++]);
    }
  }
  const command = argv[i];
  if (
    globals.length === 0 || command === undefined ||
    (command.startsWith("-") && command !== "-h" && command !== "--help")
  ) return [...argv];
  // Commands without a home (version, schema, help) take only --json.
  const homeless = !(command in COMMANDS) &&
    !Object.hasOwn(OWN_PARSERS, command);
  const kept = homeless ? globals.filter((g) => g === "--json") : globals;
  // Right after the command: before any `--`, after which words are not flags.
  return [command, ...kept, ...argv.slice(i + 1)];
}

/**
 * Runs the CLI with `argv` (without the program name) and resolves with
 * the exit code. Errors are printed as one line on stderr. `--home` and
 * `--json` may come before the command or after it.
 *
 * @example
 * ```ts
 * import { main } from "./main.ts";
 * const code = await main(["version"]); // prints "awp 0.1.0 (protocol v0)"
 * console.log(code); // 0
 * ```
 */
export async function main(argv: string[]): Promise<number> {
  const json = argv.includes("--json");
  const out = new Output({ json });
  try {
    const args = globalsAfterCommand(argv);
    const [first, ...rest] = args;
    if (
      first === undefined ||
      (first.startsWith("-") && first !== "-h" && first !== "--help")
    ) {
      return await daemonCommand(args, out);
    }
    switch (first) {
      case "-h":
      case "--help":
        out.line(usageText());
        return 0;
      case "help": {
        const cmd = rest[0] ? COMMANDS[rest[0]] : undefined;
        if (rest[0] && !cmd) {
          throw new UsageError(`unknown command "${rest[0]}"`);
        }
        out.line(
          cmd
            ? `usage: ${cmd.usage}\n\n${cmd.summary}${flagHelp(cmd.flags)}${
              cmd.help ? `\n${cmd.help}` : ""
            }`
            : usageText(),
        );
        return 0;
      }
      case "version":
      case "--version":
        if (rest.includes("--help") || rest.includes("-h")) {
          out.line("usage: awp version [--json]");
          return 0;
        }
        if (json) out.value({ version: config.version, protocol: 0 });
        else out.line(VERSION);
        return 0;
      case "schema":
        if (rest.includes("--help") || rest.includes("-h")) {
          out.line(
            "usage: awp schema\n\nprints the JSON Schema (draft 2020-12) of every AWP message",
          );
          return 0;
        }
        out.line(JSON.stringify(await loadSchema(), null, 2));
        return 0;
    }
    if (Object.hasOwn(OWN_PARSERS, first)) {
      return await OWN_PARSERS[first](rest, out);
    }
    const command = COMMANDS[first];
    if (!command) {
      throw new UsageError(
        `unknown command "${first}" (awp --help lists them)`,
      );
    }
    const parsed = parseArgs(rest, command.flags);
    if (parsed.bool("help")) {
      out.line(
        `usage: ${command.usage}\n\n${command.summary}${
          flagHelp(command.flags)
        }${command.help ? `\n${command.help}` : ""}`,
      );
      return 0;
    }
    return await command.run(makeContext(parsed, out));
  } catch (error) {
    // The reader went away (`awp read | head`): stop quietly, as cat does.
    if (error instanceof Deno.errors.BrokenPipe) return 0;
    if (error instanceof UsageError) {
      out.error(error.message);
      return 2;
    }
    if (error instanceof ControlError) {
      out.error(error.message);
      return error.code;
    }
    out.error(errorText(error));
    return 1;
  }
}
