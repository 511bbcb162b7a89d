/**
 * A child process that speaks one JSON object per line: commands on stdin,
 * events on stdout (the driver contract, and our own bench children). Keeps
 * every event with its arrival time and lets a workload wait for events,
 * always with a timeout; {@linkcode JsonProcess.stop} ends the process for
 * sure (SIGKILL after a grace period).
 *
 * @example
 * ```ts ignore
 * import { JsonProcess } from "./json_process.ts";
 * const p = JsonProcess.spawn("peer", Deno.execPath(), ["run", "-A", "mod.ts", "driver", "--state", "/tmp/a", "listen", "tcp:127.0.0.1:0"]);
 * const ev = await p.waitFor((e) => e.event === "listening", { timeoutMs: 10_000 });
 * console.log(ev.addr);
 * await p.stop();
 * ```
 *
 * @module
 */

import { LineReader } from "../wire/line_reader.ts";
import { type ProcMemory, readMemory } from "./proc_memory.ts";

/** One event line from the child, with `at` = performance.now() on arrival. */
export type ProcEvent = Record<string, unknown> & {
  event?: string;
  at: number;
};

/** Options of a wait. */
export interface WaitOptions {
  /** Only events at or after this index (see {@link JsonProcess.mark}). */
  from?: number;
  timeoutMs: number;
}

interface Waiter {
  pred: (e: ProcEvent) => boolean;
  need: number;
  got: ProcEvent[];
  resolve(events: ProcEvent[]): void;
  reject(error: Error): void;
  timer: ReturnType<typeof setTimeout>;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();
const STDERR_TAIL = 2048;

/** A JSON-lines child process; see the module doc. */
export class JsonProcess {
  /** A short name for error messages. */
  readonly label: string;
  /** Every event received so far, in order. */
  readonly events: ProcEvent[] = [];
  #child: Deno.ChildProcess;
  #writer: WritableStreamDefaultWriter<Uint8Array>;
  #waiters = new Set<Waiter>();
  #stderr = "";
  #exited = false;
  // stdout has ended: no more events will come.
  #ended = false;
  #status: Promise<Deno.CommandStatus>;
  #done: Promise<void>;

  private constructor(label: string, child: Deno.ChildProcess) {
    this.label = label;
    this.#child = child;
    this.#writer = child.stdin.getWriter();
    this.#status = child.status.then((s) => {
      this.#exited = true;
      return s;
    });
    this.#done = Promise.all([this.#readOut(), this.#readErr()]).then(() => {
      const error = new Error(
        `${label} exited before the awaited event${this.#tail()}`,
      );
      for (const w of this.#waiters) this.#settle(w, error);
    });
  }

  /** Starts `cmd args` with piped stdio. */
  static spawn(
    label: string,
    cmd: string,
    args: string[],
    options: { cwd?: string; env?: Record<string, string> } = {},
  ): JsonProcess {
    const child = new Deno.Command(cmd, {
      args,
      cwd: options.cwd,
      env: options.env,
      stdin: "piped",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    return new JsonProcess(label, child);
  }

  /** The child's process id. */
  get pid(): number {
    return this.#child.pid;
  }

  /** Whether the child has exited. */
  get exited(): boolean {
    return this.#exited;
  }

  /** The index the next event will get, to wait only for later events. */
  mark(): number {
    return this.events.length;
  }

  /** The last bytes the child wrote on stderr. */
  get stderrTail(): string {
    return this.#stderr;
  }

  /** Writes commands, one JSON line each, in one write. */
  async send(...commands: Record<string, unknown>[]): Promise<void> {
    const text = commands.map((c) => JSON.stringify(c) + "\n").join("");
    await this.#writer.write(encoder.encode(text));
  }

  /** Resolves with the first event matching `pred` (from `options.from`). */
  async waitFor(
    pred: (e: ProcEvent) => boolean,
    options: WaitOptions,
  ): Promise<ProcEvent> {
    return (await this.waitCount(pred, 1, options))[0];
  }

  /** Resolves with the first `n` events matching `pred`. */
  waitCount(
    pred: (e: ProcEvent) => boolean,
    n: number,
    options: WaitOptions,
  ): Promise<ProcEvent[]> {
    return new Promise((resolve, reject) => {
      const got = this.events.slice(options.from ?? 0).filter(pred).slice(
        0,
        n,
      );
      if (got.length >= n) return resolve(got);
      if (this.#ended) {
        return reject(new Error(`${this.label} has exited${this.#tail()}`));
      }
      const waiter: Waiter = {
        pred,
        need: n,
        got,
        resolve,
        reject,
        timer: setTimeout(() => {
          this.#settle(
            waiter,
            new Error(
              `${this.label}: timed out after ${options.timeoutMs} ms with ${waiter.got.length}/${n} events${this.#tail()}`,
            ),
          );
        }, options.timeoutMs),
      };
      this.#waiters.add(waiter);
    });
  }

  /** Current and peak RSS of the child. */
  memory(): Promise<ProcMemory | undefined> {
    return readMemory(this.pid);
  }

  /** Sends a signal (ignored when already gone). */
  kill(signal: Deno.Signal = "SIGKILL"): void {
    if (this.#exited) return;
    try {
      this.#child.kill(signal);
    } catch {
      // Already gone.
    }
  }

  /**
   * Ends the child: optional `quit` command, then SIGTERM and SIGKILL after
   * `graceMs` each. Resolves once it has exited and its pipes are drained.
   */
  async stop(
    options: { quit?: Record<string, unknown>; graceMs?: number } = {},
  ): Promise<Deno.CommandStatus> {
    const grace = options.graceMs ?? 2_000;
    if (!this.#exited && options.quit) {
      await this.send(options.quit).catch(() => {});
    }
    await this.#writer.close().catch(() => {});
    for (const signal of ["SIGTERM", "SIGKILL"] as const) {
      if (await this.#exitWithin(grace)) break;
      this.kill(signal);
    }
    const status = await this.#status;
    await this.#done;
    for (const w of this.#waiters) {
      this.#settle(w, new Error(`${this.label} was stopped`));
    }
    return status;
  }

  async #exitWithin(ms: number): Promise<boolean> {
    if (this.#exited) return true;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<false>((r) =>
      timer = setTimeout(() => r(false), ms)
    );
    const ok = await Promise.race([this.#status.then(() => true), timeout]);
    clearTimeout(timer);
    return ok;
  }

  #tail(): string {
    const text = this.#stderr.trim().split("\n").slice(-3).join(" | ");
    return text ? ` (stderr: ${text})` : "";
  }

  #settle(w: Waiter, error?: Error): void {
    if (!this.#waiters.delete(w)) return;
    clearTimeout(w.timer);
    if (error) w.reject(error);
    else w.resolve(w.got);
  }

  #dispatch(event: ProcEvent): void {
    this.events.push(event);
    for (const w of this.#waiters) {
      if (w.pred(event)) {
        w.got.push(event);
        if (w.got.length >= w.need) this.#settle(w);
      }
    }
  }

  async #readOut(): Promise<void> {
    const reader = new LineReader({ maxLineBytes: 16 * 1024 * 1024 });
    try {
      for await (const chunk of this.#child.stdout) {
        const at = performance.now();
        for (const ev of reader.push(chunk)) {
          if (ev.kind !== "line") continue;
          const text = decoder.decode(ev.bytes).trim();
          if (!text.startsWith("{")) continue;
          try {
            this.#dispatch({ ...JSON.parse(text), at });
          } catch {
            // Not JSON: a stray log line; ignore.
          }
        }
      }
    } finally {
      this.#ended = true;
    }
  }

  async #readErr(): Promise<void> {
    for await (const chunk of this.#child.stderr) {
      this.#stderr = (this.#stderr + decoder.decode(chunk)).slice(-STDERR_TAIL);
    }
  }
}
