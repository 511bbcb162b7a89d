/**
 * `awp conform`: the command line of the conformance runner.
 *
 * @module
 */

import {
  formatPeer,
  formatResult,
  formatSummary,
  formatTarget,
  reportJson,
} from "./report.ts";
import { ConformError, DEFAULT_TIMEOUT_MS, runConformance } from "./runner.ts";
import { SCENARIOS } from "./scenarios.ts";
import { readTlsFiles } from "../cli/tls_files.ts";

/**
 * The usage text of `awp conform`.
 *
 * @example
 * ```ts
 * import { CONFORM_USAGE } from "./cli.ts";
 * console.log(CONFORM_USAGE.split("\n")[0]); // usage: awp conform [options] ADDR
 * ```
 */
export const CONFORM_USAGE = `usage: awp conform [options] ADDR
       awp conform [options] --listen ADDR --run 'CMD {addr}' [--driver]
       awp conform --list

Checks that the peer at ADDR (tcp:HOST:PORT, unix:/path, ws://HOST:PORT/path
or wss://HOST:PORT/path) speaks AWP v0:
one connection per scenario. With --listen the runner listens instead,
starts CMD with {addr} replaced by its address, and runs the scenarios that
fit one connection in turn.

options:
  --scenario NAME   run only this scenario (repeatable, or comma separated)
  --list            list the scenarios and exit
  --timeout SECS    per scenario timeout (default ${
  DEFAULT_TIMEOUT_MS / 1000
}; also 500ms, 2s)
  --json            print the whole report as JSON
  --trace           print every line sent and received on stderr
  --driver          the --run command speaks the stdin/stdout driver contract
                    (enables the replay scenario)
  --ca FILE         trust this CA certificate (PEM) when dialing wss://
  --cert/--key FILE the runner's TLS certificate and key for --listen wss://
  -h, --help        show this help`;

class UsageError extends Error {}

interface ParsedArgs {
  address?: string;
  listen?: string;
  run?: string;
  driver: boolean;
  ca: string[];
  cert?: string;
  key?: string;
  scenarios: string[];
  timeoutMs: number;
  json: boolean;
  trace: boolean;
  list: boolean;
  help: boolean;
}

function parseTimeout(text: string): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s)?$/.exec(text.trim());
  const value = m ? Number(m[1]) * (m[2] === "ms" ? 1 : 1000) : NaN;
  if (!Number.isFinite(value) || value <= 0) {
    throw new UsageError(
      `--timeout: not a positive duration: ${JSON.stringify(text)}`,
    );
  }
  return value;
}

function parseArgs(args: string[]): ParsedArgs {
  const out: ParsedArgs = {
    driver: false,
    ca: [],
    scenarios: [],
    timeoutMs: DEFAULT_TIMEOUT_MS,
    json: false,
    trace: false,
    list: false,
    help: false,
  };
  const positional: string[] = [];
  for (let i = 0; i < args.length; i++) {
    let arg = args[i];
    let inline: string | undefined;
    const eq = arg.indexOf("=");
    if (arg.startsWith("--") && eq > 0) {
      inline = arg.slice(eq + 1);
      arg = arg.slice(0, eq);
    }
    const value = (): string => {
      if (inline !== undefined) return inline;
      const next = args[++i];
      if (next === undefined) throw new UsageError(`${arg} needs a value`);
      return next;
    };
    switch (arg) {
      case "--scenario":
        out.scenarios.push(
          ...value().split(",").map((s) => s.trim()).filter(Boolean),
        );
        break;
      case "--timeout":
        out.timeoutMs = parseTimeout(value());
        break;
      case "--listen":
        out.listen = value();
        break;
      case "--run":
        out.run = value();
        break;
      case "--driver":
        out.driver = true;
        break;
      case "--ca":
        out.ca.push(value());
        break;
      case "--cert":
        out.cert = value();
        break;
      case "--key":
        out.key = value();
        break;
      case "--json":
        out.json = true;
        break;
      case "--trace":
        out.trace = true;
        break;
      case "--list":
        out.list = true;
        break;
      case "-h":
      case "--help":
        out.help = true;
        break;
      default:
        if (arg.startsWith("-") && arg !== "-") {
          throw new UsageError(`unknown option ${arg}`);
        }
        positional.push(arg);
    }
  }
  if (out.help || out.list) return out;
  if (positional.length > 1) {
    throw new UsageError(`one address expected, got ${positional.join(" ")}`);
  }
  out.address = positional[0];
  if (out.address !== undefined && out.listen !== undefined) {
    throw new UsageError("give either ADDR or --listen ADDR, not both");
  }
  if (out.address === undefined && out.listen === undefined) {
    throw new UsageError("missing the peer's address");
  }
  if (out.listen !== undefined && out.run === undefined) {
    throw new UsageError("--listen needs --run 'CMD {addr}'");
  }
  if (out.run !== undefined && out.listen === undefined) {
    throw new UsageError("--run needs --listen ADDR");
  }
  if (!out.cert !== !out.key) {
    throw new UsageError("--cert and --key go together");
  }
  if (out.driver && out.run === undefined) {
    throw new UsageError("--driver needs --listen and --run");
  }
  const known = new Set(SCENARIOS.map((s) => s.name));
  for (const name of out.scenarios) {
    if (!known.has(name)) {
      throw new UsageError(
        `unknown scenario ${JSON.stringify(name)}; see awp conform --list`,
      );
    }
  }
  return out;
}

function listScenarios(): string {
  return SCENARIOS.map((s) => {
    const notes = [
      s.needs?.length ? `needs ${s.needs.join(", ")}` : "",
      s.breaksConnection ? "own connection" : "",
      s.note ?? "",
    ].filter(Boolean).join("; ");
    return `${s.name.padEnd(16)}${s.section.padEnd(11)}${s.doc}${
      notes ? ` (${notes})` : ""
    }`;
  }).join("\n");
}

/**
 * Runs `awp conform` with the arguments after `conform` and returns the exit
 * status: 0 when every scenario passed or was skipped, 1 on a failure or
 * when the peer cannot be reached, 2 on a usage error.
 *
 * @example
 * ```ts
 * import { conformMain } from "./cli.ts";
 * const status = await conformMain(["--list"]);
 * console.log(status); // 0
 * ```
 */
export async function conformMain(args: string[]): Promise<number> {
  let parsed: ParsedArgs;
  try {
    parsed = parseArgs(args);
  } catch (e) {
    if (!(e instanceof UsageError)) throw e;
    console.error(`awp conform: ${e.message}`);
    console.error(CONFORM_USAGE);
    return 2;
  }
  if (parsed.help) {
    console.log(CONFORM_USAGE);
    return 0;
  }
  if (parsed.list) {
    console.log(listScenarios());
    return 0;
  }
  const text = !parsed.json;
  try {
    const tls = await readTlsFiles(parsed).catch((e) => {
      throw new ConformError(e.message);
    });
    const report = await runConformance({
      ...tls,
      address: parsed.address,
      listen: parsed.listen,
      run: parsed.run,
      driver: parsed.driver,
      scenarios: parsed.scenarios,
      timeoutMs: parsed.timeoutMs,
      trace: parsed.trace ? (line) => console.error(line) : undefined,
      onTarget: text
        ? (mode, target, command) =>
          console.log(formatTarget(mode, target, command))
        : undefined,
      onPeer: text ? (peer) => console.log(formatPeer(peer)) : undefined,
      onResult: text
        ? (() => {
          let first = true;
          return (result) => {
            if (first) console.log("");
            first = false;
            console.log(formatResult(result));
          };
        })()
        : undefined,
    });
    if (text) console.log(`\n${formatSummary(report)}`);
    else await Deno.stdout.write(new TextEncoder().encode(reportJson(report)));
    return report.failed > 0 ? 1 : 0;
  } catch (e) {
    if (e instanceof ConformError) {
      console.error(`awp conform: ${e.message}`);
      return 1;
    }
    throw e;
  }
}

if (import.meta.main) Deno.exit(await conformMain(Deno.args));
