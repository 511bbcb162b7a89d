/**
 * The conformance runner: a scripted raw peer, with a key of its own, that
 * drives the peer under test through the scenarios of `conform/scenarios.ts`
 * and checks every line the peer sends against the schema.
 *
 * Two modes, as `awp conform` (seed 004): dial the peer once per scenario,
 * or listen, start the peer with `--run`, and run the scenarios that fit one
 * connection in turn.
 *
 * @module
 */

import { listen, type Listener } from "../net/transport.ts";
import { AddressError, parseAddress } from "../wire/address.ts";
import { Signer } from "../wire/keys.ts";
import { validateMessage } from "../wire/validate.ts";
import {
  type ConformReport,
  type PeerInfo,
  type ScenarioResult,
  summarize,
} from "./report.ts";
import {
  type Scenario,
  ScenarioFailure,
  SCENARIOS,
  ScenarioSkip,
} from "./scenarios.ts";

import { ConformError } from "./conform_error.ts";
import { Context } from "./context.ts";
import { seconds } from "./line_text.ts";
import { Session } from "./session.ts";
import { spawnPeer, splitCommand } from "./spawn_peer.ts";
import { errorText } from "../wire/error_text.ts";

export { ConformError } from "./conform_error.ts";
export { DEFAULT_TIMEOUT_MS } from "./session.ts";
export { splitCommand } from "./spawn_peer.ts";
/** Options of {@link runConformance}. Exactly one of `address` and `listen` is set. */
export interface ConformOptions {
  /** Dial mode: the address the peer under test listens on. */
  address?: string;
  /** Listen mode: where the runner listens (`tcp:127.0.0.1:0` picks a port). */
  listen?: string;
  /** Listen mode: the command starting the peer; `{addr}` becomes the listening address. */
  run?: string;
  /** The `--run` command speaks the stdin/stdout driver contract (enables `replay`). */
  driver?: boolean;
  /** Scenario names to run; all when absent. */
  scenarios?: string[];
  /** Per scenario timeout in ms (default 5000). */
  timeoutMs?: number;
  /** The runner's identity; a fresh key when absent. */
  signer?: Signer;
  /** wss: extra CA certificates (PEM) trusted when dialing (`--ca`). */
  caCerts?: string[];
  /** wss in listen mode: the runner's certificate and key (PEM). */
  tls?: { cert: string; key: string };
  /** Receives one trace line per line sent and received (`--trace`). */
  trace?: (line: string) => void;
  /** Called once the target is known (listen mode: after binding). */
  onTarget?: (
    mode: "dial" | "listen",
    target: string,
    command?: string,
  ) => void;
  /** Called when the peer's first hello arrives. */
  onPeer?: (peer: PeerInfo) => void;
  /** Called as each scenario ends. */
  onResult?: (result: ScenarioResult) => void;
}

async function runScenario(
  session: Session,
  scenario: Scenario,
): Promise<ScenarioResult> {
  const start = Date.now();
  const budget = Math.max(session.timeoutMs, scenario.minTimeoutMs ?? 0);
  const deadline = start + budget;
  const ctx = new Context(session, scenario, deadline);
  const result = (
    status: ScenarioResult["status"],
    detail?: string,
  ): ScenarioResult => {
    const r: ScenarioResult = {
      name: scenario.name,
      section: scenario.section,
      doc: scenario.doc,
      status,
      seconds: (Date.now() - start) / 1000,
    };
    if (detail !== undefined) r.detail = detail;
    return r;
  };
  // Skip on caps already known, without a connection for nothing.
  const known = session.wire?.peer?.caps ?? session.firstPeer?.caps;
  const missing = (caps: string[]) =>
    (scenario.needs ?? []).filter((c) => !caps.includes(c));
  if (known && missing(known).length) {
    return result(
      "skip",
      `the peer does not list ${missing(known).join(", ")} in its hello caps`,
    );
  }
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    const body = async () => {
      if (!scenario.raw && !ctx.open) await ctx.handshake();
      const caps = ctx.peer?.caps ?? [];
      if (missing(caps).length) {
        ctx.skip(
          `the peer does not list ${
            missing(caps).join(", ")
          } in its hello caps`,
        );
      }
      await scenario.run(ctx);
    };
    await Promise.race([
      body(),
      new Promise<never>((_, reject) => {
        // A safety net: waits end at the deadline, but a write to a peer that
        // stopped reading would not.
        timer = setTimeout(
          () =>
            reject(
              new ScenarioFailure(`did not finish within ${seconds(budget)}`),
            ),
          budget + 1000,
        );
      }),
    ]);
    const invalid = session.wire?.drainInvalid() ?? [];
    if (invalid.length) return result("fail", invalid[0]);
    return result("ok");
  } catch (e) {
    if (e instanceof ScenarioSkip) return result("skip", e.message);
    if (e instanceof ScenarioFailure) return result("fail", e.message);
    if (e instanceof ConformError) throw e;
    return result(
      "fail",
      `runner error: ${errorText(e)}`,
    );
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Selects scenarios by name, in table order; throws {@link ConformError} on
 * an unknown name.
 *
 * @example
 * ```ts
 * import { selectScenarios } from "./runner.ts";
 * console.log(selectScenarios(["bye", "ping"]).map((s) => s.name)); // ["ping", "bye"]
 * ```
 */
export function selectScenarios(names?: string[]): Scenario[] {
  if (!names || names.length === 0) return [...SCENARIOS];
  for (const name of names) {
    if (!SCENARIOS.some((s) => s.name === name)) {
      throw new ConformError(
        `unknown scenario ${JSON.stringify(name)} (known: ${
          SCENARIOS.map((s) => s.name).join(", ")
        })`,
      );
    }
  }
  return SCENARIOS.filter((s) => names.includes(s.name));
}

/**
 * Runs the conformance scenarios against a peer and returns the report.
 * Throws {@link ConformError} (one line) when the run cannot start: a bad
 * address, a refused first connection, a `--run` command that exits or never
 * connects.
 *
 * @example
 * ```ts ignore
 * import { runConformance } from "./runner.ts";
 * const report = await runConformance({ address: "tcp:127.0.0.1:7000" });
 * console.log(report.passed, report.failed);
 * ```
 */
export async function runConformance(
  options: ConformOptions,
): Promise<ConformReport> {
  const started = Date.now();
  if ((options.address === undefined) === (options.listen === undefined)) {
    throw new ConformError(
      "give either the peer's address or --listen ADDR --run CMD",
    );
  }
  if (options.listen !== undefined && !options.run) {
    throw new ConformError("--listen needs --run CMD");
  }
  const scenarios = selectScenarios(options.scenarios);
  const target = options.address ?? options.listen!;
  try {
    parseAddress(target);
  } catch (e) {
    throw new ConformError(e instanceof AddressError ? e.message : String(e));
  }
  const mode = options.address !== undefined ? "dial" : "listen";
  const signer = options.signer ?? await Signer.generate();
  // Compiling the schema takes a while: not on any scenario's clock.
  validateMessage({});
  const session = new Session(mode, signer, options);
  const results: ScenarioResult[] = [];
  const report = (extra: { target: string; command?: string }) =>
    summarize(
      { mode, ...extra, peer: session.firstPeer },
      results,
      (Date.now() - started) / 1000,
    );
  const record = (r: ScenarioResult) => {
    results.push(r);
    options.onResult?.(r);
  };

  if (mode === "dial") {
    // A refused or unreachable peer is a one-line error, not fifteen failures.
    await session.dialNew();
    options.onTarget?.(mode, target);
    for (const scenario of scenarios) {
      record(await runScenario(session, scenario));
      const invalid = await session.teardown();
      const last = results.at(-1)!;
      if (invalid.length && last.status === "ok") {
        last.status = "fail";
        last.detail = invalid[0];
      }
    }
    return report({ target });
  }

  let listener: Listener;
  try {
    listener = await listen(target, (t) => session.accept(t), {
      allowPublic: true,
      ...options.tls,
    });
  } catch (e) {
    throw new ConformError(errorText(e));
  }
  const command = options.run!.replaceAll("{addr}", listener.addr);
  try {
    options.onTarget?.(mode, listener.addr, command);
    const argv = splitCommand(options.run!).map((w) =>
      w.replaceAll("{addr}", listener.addr)
    );
    session.spawned = spawnPeer(
      argv,
      command,
      options.driver ?? false,
      options.trace,
    );
    session.driver = session.spawned.driver;
    // Starting a process (a compile, a runtime) can take longer than a scenario.
    const first = await session.acceptNext(
      Date.now() + Math.max(2 * session.timeoutMs, 10_000),
    );
    if (!first) {
      throw new ConformError(
        `the peer command did not connect to ${listener.addr} within ${
          seconds(Math.max(2 * session.timeoutMs, 10_000))
        }`,
      );
    }
    let closedDuring: string | undefined;
    for (const scenario of scenarios) {
      const base = {
        name: scenario.name,
        section: scenario.section,
        doc: scenario.doc,
        seconds: 0,
      };
      if (scenario.breaksConnection) {
        record({
          ...base,
          status: "skip",
          detail:
            "breaks the connection on purpose; run it with the peer listening",
        });
        continue;
      }
      if (closedDuring !== undefined) {
        record({ ...base, status: "skip", detail: closedDuring });
        continue;
      }
      record(await runScenario(session, scenario));
      // Later scenarios need the one connection, open: a failed handshake
      // leaves it in no known state.
      if (!session.wire || session.wire.ended) {
        closedDuring = `the connection closed during ${scenario.name}`;
      } else if (!session.wire.open) {
        closedDuring = `no open connection after ${scenario.name}`;
        session.wire.close();
      }
    }
    const invalid = await session.teardown();
    const last = results.at(-1);
    if (last && invalid.length && last.status === "ok") {
      last.status = "fail";
      last.detail = invalid[0];
    }
    return report({ target: listener.addr, command });
  } finally {
    session.wire?.close();
    session.closeAccepted();
    listener.close();
    await session.spawned?.stop();
    await listener.done;
  }
}
