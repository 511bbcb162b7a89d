/**
 * The `exec` request of the coding-agent profile (PROFILE.md): runs a
 * command under the served root and reports its exit, output and duration.
 *
 * The command runs in its own session and process group (`detached`, which
 * is setsid on Unix), so the whole tree can be killed at once with a
 * negative pid: on timeout, and also when the command itself exits, so
 * background processes it started never outlive the request. Output over
 * the inline limit is truncated in the result and kept in full in a file to
 * attach as a blob.
 *
 * @module
 */

import { type Attachment, FsAccessError, resolveInRoot } from "./fs_access.ts";
import { errorText } from "../wire/error_text.ts";

export { EXEC_RESULT_MIME } from "./mimes.ts";

/** Default timeout, seconds (PROFILE.md).
 *
 * @example
 * ```ts
 * import { DEFAULT_EXEC_TIMEOUT_S } from "./exec_runner.ts";
 * console.log(DEFAULT_EXEC_TIMEOUT_S); // 600
 * ```
 */
export const DEFAULT_EXEC_TIMEOUT_S = 600;

const INLINE_LIMIT = 64 * 1024;
const DEFAULT_MAX_OUTPUT = 50 * 1024 * 1024;
/** How long output may keep flowing after the command's group is gone. */
const DRAIN_GRACE_MS = 1_000;

/** An `exec` request's data, as validated. */
export interface ExecRequest {
  /** argv, or a string for `/bin/sh -c`. */
  cmd: string[] | string;
  /** Working directory relative to the root (default: the root). */
  cwd?: string;
  /** Extra environment variables. */
  env?: Record<string, string>;
  /** Seconds (default 600). */
  timeout?: number;
  /** Text fed to standard input. */
  stdin?: string;
}

/** The data of the `application/vnd.awp.exec-result+json` part. */
export interface ExecResult {
  /** Exit code; -1 when the command could not start (128+n when killed by signal n). */
  exit: number;
  duration_ms: number;
  stdout: string;
  stderr: string;
  stdout_truncated: boolean;
  stderr_truncated: boolean;
  /** Present and true when the timeout killed the command. */
  timed_out?: boolean;
  /** Why it failed to start, or that it timed out. */
  error?: string;
}

/** What running a request produced. */
export interface ExecOutcome {
  result: ExecResult;
  /** One line for the result msg's text part. */
  summary: string;
  /** Full stdout.txt / stderr.txt when truncated (temporary files). */
  attachments: Attachment[];
}

/** What exec passes on from the daemon's environment by default; the
 * request's `env` comes on top. Nothing else (keys, tokens) leaks.
 *
 * @example
 * ```ts
 * import { EXEC_BASE_ENV } from "./exec_runner.ts";
 * console.log(EXEC_BASE_ENV); // ["PATH", "HOME", "LANG", "TERM"]
 * ```
 */
export const EXEC_BASE_ENV: readonly string[] = [
  "PATH",
  "HOME",
  "LANG",
  "TERM",
];

/**
 * The environment an exec child gets: {@linkcode EXEC_BASE_ENV} and the
 * `pass` names taken from ours when set, then the request's own `env`.
 *
 * @example
 * ```ts
 * import { execEnvironment } from "./exec_runner.ts";
 * console.log(Object.keys(execEnvironment({ X: "1" }, [])).includes("X")); // true
 * ```
 */
export function execEnvironment(
  requested: Record<string, string> | undefined,
  pass: readonly string[] = [],
): Record<string, string> {
  const env: Record<string, string> = {};
  for (const name of [...EXEC_BASE_ENV, ...pass]) {
    let value: string | undefined;
    try {
      value = Deno.env.get(name);
    } catch { /* no --allow-env for it */ }
    if (value !== undefined) env[name] = value;
  }
  return { ...env, ...requested };
}

/** Options of {@linkcode runExec}. */
export interface ExecOptions {
  /** The served root: default cwd, and `cwd` is confined to it. */
  root: string;
  /** Where full-output files go (a new temp dir if unset). */
  spoolDir?: string;
  /** Inline output limit per stream, bytes (64 KiB). */
  inlineLimit?: number;
  /** Most output kept per stream, bytes (50 MiB); the rest is drained and dropped. */
  maxOutputBytes?: number;
  /** Overrides the request's timeout, ms (tests). */
  timeoutMs?: number;
  /**
   * Names of the daemon's environment variables passed on beyond
   * {@linkcode EXEC_BASE_ENV} (`--exec-env-pass`).
   */
  envPass?: readonly string[];
  /** Aborting kills the process group like a timeout. */
  signal?: AbortSignal;
}

/** A malformed exec request; one line.
 *
 * @example
 * ```ts
 * import { ExecRequestError, parseExecRequest } from "./exec_runner.ts";
 * try { parseExecRequest({}); } catch (e) { console.log(e instanceof ExecRequestError); }
 * ```
 */
export class ExecRequestError extends Error {
  /** @param message one line */
  constructor(message: string) {
    super(message);
    this.name = "ExecRequestError";
  }
}

/**
 * Checks the shape of an exec request's data. Throws
 * {@linkcode ExecRequestError} with one line on bad input.
 *
 * @example
 * ```ts
 * import { parseExecRequest } from "./exec_runner.ts";
 * console.log(parseExecRequest({ cmd: ["echo", "hi"] }).cmd); // ["echo", "hi"]
 * ```
 */
export function parseExecRequest(data: unknown): ExecRequest {
  if (data === null || typeof data !== "object" || Array.isArray(data)) {
    throw new ExecRequestError("request data must be an object");
  }
  const d = data as Record<string, unknown>;
  const { cmd, cwd, env, timeout, stdin } = d;
  const isArgv = Array.isArray(cmd) && cmd.length > 0 &&
    cmd.every((a) => typeof a === "string") && cmd[0] !== "";
  if (!isArgv && !(typeof cmd === "string" && cmd.trim() !== "")) {
    throw new ExecRequestError(
      'cmd must be ["argv", ...] or a non-empty shell string',
    );
  }
  if (cwd !== undefined && cwd !== null && typeof cwd !== "string") {
    throw new ExecRequestError("cwd must be a string");
  }
  if (env !== undefined && env !== null) {
    if (
      typeof env !== "object" || Array.isArray(env) ||
      !Object.values(env).every((v) => typeof v === "string")
    ) {
      throw new ExecRequestError("env must be an object of strings");
    }
    if (
      Object.keys(env).some((k) =>
        k === "" || k.includes("=") || k.includes("\0")
      )
    ) {
      throw new ExecRequestError(
        "env names must be non-empty, without = or NUL",
      );
    }
  }
  if (
    timeout !== undefined && timeout !== null &&
    (typeof timeout !== "number" || !Number.isFinite(timeout) || timeout < 0)
  ) {
    throw new ExecRequestError(
      "timeout must be a non-negative number of seconds",
    );
  }
  if (stdin !== undefined && stdin !== null && typeof stdin !== "string") {
    throw new ExecRequestError("stdin must be a string");
  }
  return {
    cmd: cmd as string[] | string,
    ...(typeof cwd === "string" && cwd !== "" ? { cwd } : {}),
    ...(env ? { env: env as Record<string, string> } : {}),
    ...(typeof timeout === "number" && timeout > 0 ? { timeout } : {}),
    ...(typeof stdin === "string" ? { stdin } : {}),
  };
}

/** Collects one output stream: the inline head, and a file once it overflows. */
class OutputSink {
  #name: string;
  #inline: number;
  #max: number;
  #dir: () => Promise<string>;
  #head: Uint8Array[] = [];
  #headBytes = 0;
  #total = 0;
  #file: Deno.FsFile | undefined;
  #path: string | undefined;
  #kept = 0;
  #reader: ReadableStreamDefaultReader<Uint8Array> | undefined;

  constructor(
    name: string,
    inline: number,
    max: number,
    dir: () => Promise<string>,
  ) {
    this.#name = name;
    this.#inline = inline;
    this.#max = max;
    this.#dir = dir;
  }

  async drain(stream: ReadableStream<Uint8Array>): Promise<void> {
    this.#reader = stream.getReader();
    try {
      for (;;) {
        const { done, value } = await this.#reader.read();
        if (done) break;
        await this.#push(value);
      }
    } finally {
      this.#reader.releaseLock();
    }
  }

  /** Stops reading: a process outside the group may hold the pipe open. */
  stop(): void {
    this.#reader?.cancel().catch(() => {});
  }

  async #push(chunk: Uint8Array): Promise<void> {
    this.#total += chunk.length;
    if (
      this.#file === undefined && this.#headBytes + chunk.length <= this.#inline
    ) {
      this.#head.push(chunk);
      this.#headBytes += chunk.length;
      return;
    }
    if (this.#file === undefined) {
      // Fill the inline head to exactly the limit before spilling.
      const rest = this.#inline - this.#headBytes;
      const pending = [...this.#head];
      this.#head.push(chunk.subarray(0, rest));
      this.#headBytes += rest;
      const dir = await this.#dir();
      this.#path = `${dir}/${this.#name}.txt`;
      this.#file = await Deno.open(this.#path, {
        write: true,
        createNew: true,
        mode: 0o600,
      });
      for (const c of pending) await this.#write(c);
    }
    await this.#write(chunk);
  }

  async #write(chunk: Uint8Array): Promise<void> {
    const room = this.#max - this.#kept;
    if (room <= 0) return;
    const part = chunk.length > room ? chunk.subarray(0, room) : chunk;
    let off = 0;
    while (off < part.length) {
      off += await this.#file!.write(part.subarray(off));
    }
    this.#kept += part.length;
  }

  /** The inline text, whether it was truncated, and the full file if any. */
  finish(): { text: string; truncated: boolean; attachment?: Attachment } {
    this.#file?.close();
    const head = concat(this.#head, this.#headBytes);
    const inline = head.subarray(0, this.#inline);
    let text: string | undefined;
    if (this.#path === undefined) {
      try {
        text = new TextDecoder("utf-8", { fatal: true }).decode(inline);
      } catch {
        /* not UTF-8: inline is lossy, so the full bytes go as a file */
      }
    }
    if (text !== undefined) return { text, truncated: false };
    return {
      text: new TextDecoder().decode(inline.subarray(0, utf8Boundary(inline))),
      truncated: true,
      attachment: this.#path === undefined ? undefined : {
        path: this.#path,
        name: `${this.#name}.txt`,
        mime: "text/plain",
        size: this.#kept,
        temporary: true,
      },
    };
  }

  /** Writes the head to a file (invalid UTF-8 that fit inline). */
  async spillIfNeeded(): Promise<void> {
    if (this.#path !== undefined || this.#headBytes === 0) return;
    const head = concat(this.#head, this.#headBytes);
    try {
      new TextDecoder("utf-8", { fatal: true }).decode(head);
      return;
    } catch { /* spill below */ }
    const dir = await this.#dir();
    this.#path = `${dir}/${this.#name}.txt`;
    await Deno.writeFile(this.#path, head, { mode: 0o600 });
    this.#kept = head.length;
  }

  get total(): number {
    return this.#total;
  }
}

function concat(chunks: Uint8Array[], size: number): Uint8Array {
  const out = new Uint8Array(size);
  let off = 0;
  for (const c of chunks) {
    out.set(c, off);
    off += c.length;
  }
  return out;
}

/** Length of the longest prefix that does not end inside a UTF-8 sequence. */
function utf8Boundary(bytes: Uint8Array): number {
  let i = bytes.length - 1;
  let cont = 0;
  while (i >= 0 && cont < 3 && (bytes[i] & 0xc0) === 0x80) {
    i--;
    cont++;
  }
  if (i < 0) return bytes.length;
  const lead = bytes[i];
  const need = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 1;
  return need > cont + 1 ? i : bytes.length;
}

function killGroup(pid: number): void {
  try {
    Deno.kill(-pid, "SIGKILL");
  } catch { /* already gone */ }
}

function describe(cmd: string[] | string): string {
  const text = Array.isArray(cmd) ? cmd.join(" ") : cmd;
  const line = text.replace(/\s+/g, " ").trim();
  return line.length > 120 ? `${line.slice(0, 119)}…` : line;
}

function failed(cmd: unknown, message: string, started: number): ExecOutcome {
  const result: ExecResult = {
    exit: -1,
    duration_ms: Math.round(performance.now() - started),
    stdout: "",
    stderr: "",
    stdout_truncated: false,
    stderr_truncated: false,
    error: message,
  };
  const what = typeof cmd === "string" || Array.isArray(cmd)
    ? describe(cmd as string[] | string)
    : "exec";
  return {
    result,
    summary: `exec failed: ${what}: ${message}`,
    attachments: [],
  };
}

/**
 * Runs an exec request. Never throws: a bad request or a command that cannot
 * start is a result with `exit: -1` and `error`. On timeout (or abort) the
 * whole process group is killed, the result has `timed_out: true` and
 * `error`, and `exit` is what the killed process reported (137).
 *
 * @example
 * ```ts
 * import { runExec } from "./exec_runner.ts";
 * const root = await Deno.makeTempDir();
 * const { result } = await runExec({ cmd: "echo hi" }, { root });
 * console.log(result.exit, result.stdout); // 0 "hi\n"
 * ```
 */
export async function runExec(
  data: unknown,
  options: ExecOptions,
): Promise<ExecOutcome> {
  const started = performance.now();
  let req: ExecRequest;
  let cwd: string;
  try {
    req = parseExecRequest(data);
    cwd = await resolveInRoot(options.root, req.cwd ?? ".");
    const info = await Deno.stat(cwd).catch(() => undefined);
    if (!info?.isDirectory) {
      throw new ExecRequestError(`cwd ${req.cwd ?? "."} is not a directory`);
    }
  } catch (e) {
    const message = e instanceof ExecRequestError || e instanceof FsAccessError
      ? e.message
      : String(e);
    const cmd = data && typeof data === "object"
      ? (data as { cmd?: unknown }).cmd
      : undefined;
    return failed(cmd, message, started);
  }
  const argv = Array.isArray(req.cmd) ? req.cmd : ["/bin/sh", "-c", req.cmd];
  const timeoutMs = options.timeoutMs ??
    (req.timeout ?? DEFAULT_EXEC_TIMEOUT_S) * 1000;
  let dir: Promise<string> | undefined;
  const spool = () =>
    dir ??= options.spoolDir !== undefined
      ? Deno.mkdir(options.spoolDir, { recursive: true }).then(() =>
        Deno.makeTempDir({ dir: options.spoolDir, prefix: "exec-" })
      )
      : Deno.makeTempDir({ prefix: "awp-exec-" });
  const inline = options.inlineLimit ?? INLINE_LIMIT;
  const max = Math.max(options.maxOutputBytes ?? DEFAULT_MAX_OUTPUT, inline);
  const out = new OutputSink("stdout", inline, max, spool);
  const err = new OutputSink("stderr", inline, max, spool);

  let child: Deno.ChildProcess;
  try {
    child = new Deno.Command(argv[0], {
      args: argv.slice(1),
      cwd,
      env: execEnvironment(req.env, options.envPass),
      clearEnv: true, // a minimal environment, never the daemon's own
      stdin: "piped",
      stdout: "piped",
      stderr: "piped",
      detached: true, // setsid: its own process group, killable as a whole
    }).spawn();
  } catch (e) {
    const message = e instanceof Deno.errors.NotFound
      ? `${argv[0]}: command not found`
      : errorText(e);
    return failed(req.cmd, message, started);
  }
  const pid = child.pid;
  let timedOut = false;
  let aborted = false;
  const timer = setTimeout(() => {
    timedOut = true;
    killGroup(pid);
  }, timeoutMs);
  const onAbort = () => {
    aborted = true;
    killGroup(pid);
  };
  options.signal?.addEventListener("abort", onAbort, { once: true });
  if (options.signal?.aborted) onAbort();

  const feed = (async () => {
    const writer = child.stdin.getWriter();
    try {
      if (req.stdin) await writer.write(new TextEncoder().encode(req.stdin));
      await writer.close();
    } catch { /* the command exited without reading: fine */ }
  })();
  const drained = Promise.all([
    out.drain(child.stdout),
    err.drain(child.stderr),
  ]);
  const status = await child.status;
  // Background children would hold the pipes open: the tree goes with its root.
  killGroup(pid);
  // A process that left the group (its own setsid) may keep the pipes open:
  // give the output a moment to end, then stop reading.
  let grace: ReturnType<typeof setTimeout> | undefined;
  const ended = await Promise.race([
    drained.then(() => true, () => true),
    new Promise<false>((r) =>
      grace = setTimeout(() => r(false), DRAIN_GRACE_MS)
    ),
  ]);
  clearTimeout(grace);
  if (!ended) {
    out.stop();
    err.stop();
  }
  await drained.catch(() => {});
  await feed;
  clearTimeout(timer);
  options.signal?.removeEventListener("abort", onAbort);
  await out.spillIfNeeded();
  await err.spillIfNeeded();

  const o = out.finish();
  const e = err.finish();
  const duration = Math.round(performance.now() - started);
  const result: ExecResult = {
    exit: status.code,
    duration_ms: duration,
    stdout: o.text,
    stderr: e.text,
    stdout_truncated: o.truncated,
    stderr_truncated: e.truncated,
  };
  if (timedOut) {
    result.timed_out = true;
    result.error = `timed out after ${timeoutMs / 1000} s`;
  } else if (aborted) {
    result.error = "cancelled";
  }
  const attachments = [o.attachment, e.attachment].filter(
    (a): a is Attachment => a !== undefined,
  );
  let summary = `exit ${status.code} in ${(duration / 1000).toFixed(1)}s: ${
    describe(req.cmd)
  }`;
  if (result.error) summary += ` (${result.error})`;
  return { result, summary, attachments };
}
