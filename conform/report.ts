/**
 * The conformance report: its shape, and its text and JSON renderings.
 *
 * @module
 */

/** How one scenario ended. */
export type ScenarioStatus = "ok" | "fail" | "skip";

/** The outcome of one scenario. */
export interface ScenarioResult {
  /** The scenario's name. */
  name: string;
  /** The SPEC section it checks. */
  section: string;
  /** What the scenario checks, in one line. */
  doc: string;
  /** Whether it passed, failed or was skipped. */
  status: ScenarioStatus;
  /** For a failure, what the peer did instead; for a skip, why. */
  detail?: string;
  /** Wall time the scenario took, in seconds. */
  seconds: number;
}

/** What the peer under test said about itself in its first hello. */
export interface PeerInfo {
  /** The peer's key. */
  key: string;
  /** The protocol version from its hello. */
  v: number;
  /** The name from its hello. */
  name?: string;
  /** The capabilities from its hello. */
  caps: string[];
  /** The self-description from its hello. */
  about?: string;
}

/** A whole run. */
export interface ConformReport {
  /** "dial": the runner connected to the peer; "listen": the peer connected to the runner. */
  mode: "dial" | "listen";
  /** The address dialed, or the address the runner listened on. */
  target: string;
  /** The command started with `--run`, after `{addr}` substitution. */
  command?: string;
  /** The peer's first hello, if one arrived. */
  peer?: PeerInfo;
  /** One result per scenario, in run order. */
  results: ScenarioResult[];
  /** How many scenarios passed. */
  passed: number;
  /** How many scenarios failed. */
  failed: number;
  /** How many scenarios were skipped. */
  skipped: number;
  /** Wall time of the whole run, in seconds. */
  seconds: number;
}

const NAME_WIDTH = 15;
const SECTION_WIDTH = 9;

function pad(text: string, width: number): string {
  return text.length >= width ? text + " " : text.padEnd(width + 1);
}

/** Keeps failure details on one line. */
function oneLine(text: string): string {
  // deno-lint-ignore no-control-regex
  return text.replace(/[\u0000-\u001f]+/g, " ").trim();
}

/**
 * The line naming what the run talks to, e.g. `awp conform: connect tcp:…`.
 *
 * @example
 * ```ts
 * import { formatTarget } from "./report.ts";
 * console.log(formatTarget("dial", "tcp:127.0.0.1:7000")); // awp conform: connect tcp:127.0.0.1:7000
 * ```
 */
export function formatTarget(
  mode: "dial" | "listen",
  target: string,
  command?: string,
): string {
  return mode === "dial"
    ? `awp conform: connect ${target}`
    : `awp conform: listen ${target}${command ? `, run ${command}` : ""}`;
}

/**
 * The line describing the peer, from its hello.
 *
 * @example
 * ```ts
 * import { formatPeer } from "./report.ts";
 * console.log(formatPeer({ key: "ed25519:k", v: 0, name: "py", caps: ["blob"] }));
 * // peer py ed25519:k (v0; caps blob)
 * ```
 */
export function formatPeer(peer: PeerInfo): string {
  const caps = peer.caps.length ? `; caps ${peer.caps.join(" ")}` : "";
  return `peer ${
    peer.name ? peer.name + " " : ""
  }${peer.key} (v${peer.v}${caps})`;
}

/**
 * One scenario's line: status, name, section, description, and for a
 * failure or skip what happened.
 *
 * @example
 * ```ts
 * import { formatResult } from "./report.ts";
 * console.log(formatResult({ name: "ping", section: "§9.4", doc: "a ping is answered", status: "ok", seconds: 0.01 }));
 * ```
 */
export function formatResult(result: ScenarioResult): string {
  const status = result.status === "fail" ? "FAIL" : result.status;
  let line = `  ${pad(status, 5)}${pad(result.name, NAME_WIDTH)}${
    pad(result.section, SECTION_WIDTH)
  }${result.doc}`;
  if (result.detail) line += ` -- ${oneLine(result.detail)}`;
  return line;
}

/**
 * The closing summary line.
 *
 * @example
 * ```ts
 * import { formatSummary } from "./report.ts";
 * console.log(formatSummary({ passed: 3, failed: 0, skipped: 1, seconds: 1.25 })); // 3 passed, 0 failed, 1 skipped in 1.3s
 * ```
 */
export function formatSummary(
  totals: Pick<ConformReport, "passed" | "failed" | "skipped" | "seconds">,
): string {
  return `${totals.passed} passed, ${totals.failed} failed, ${totals.skipped} skipped in ${
    totals.seconds.toFixed(1)
  }s`;
}

/**
 * The whole report as text, as `awp conform` prints it.
 *
 * @example
 * ```ts
 * import { formatReport } from "./report.ts";
 * console.log(formatReport({ mode: "dial", target: "tcp:127.0.0.1:7000", results: [], passed: 0, failed: 0, skipped: 0, seconds: 0 }));
 * ```
 */
export function formatReport(report: ConformReport): string {
  const lines = [formatTarget(report.mode, report.target, report.command)];
  if (report.peer) lines.push(formatPeer(report.peer));
  lines.push("");
  for (const result of report.results) lines.push(formatResult(result));
  lines.push("", formatSummary(report));
  return lines.join("\n") + "\n";
}

/**
 * The whole report as JSON text (`--json`).
 *
 * @example
 * ```ts
 * import { reportJson } from "./report.ts";
 * const text = reportJson({ mode: "dial", target: "unix:/tmp/p.sock", results: [], passed: 0, failed: 0, skipped: 0, seconds: 0 });
 * console.log(JSON.parse(text).mode); // dial
 * ```
 */
export function reportJson(report: ConformReport): string {
  return JSON.stringify(report, null, 2) + "\n";
}

/**
 * Builds a report from results, counting them.
 *
 * @example
 * ```ts
 * import { summarize } from "./report.ts";
 * const r = summarize({ mode: "dial", target: "tcp:127.0.0.1:1" }, [], 0.5);
 * console.log(r.passed, r.failed, r.skipped); // 0 0 0
 * ```
 */
export function summarize(
  head: Pick<ConformReport, "mode" | "target" | "command" | "peer">,
  results: ScenarioResult[],
  seconds: number,
): ConformReport {
  const count = (s: ScenarioStatus) =>
    results.filter((r) => r.status === s).length;
  const report: ConformReport = {
    mode: head.mode,
    target: head.target,
    results: [],
    passed: 0,
    failed: 0,
    skipped: 0,
    seconds: 0,
  };
  // Assigned in reading order, for the JSON output.
  delete (report as Partial<ConformReport>).results;
  if (head.command !== undefined) report.command = head.command;
  if (head.peer !== undefined) report.peer = head.peer;
  Object.assign(report, {
    results,
    passed: count("ok"),
    failed: count("fail"),
    skipped: count("skip"),
    seconds,
  });
  return report;
}
