/**
 * A `deno` child process that prints one JSON object per line on stdout
 * and takes commands, one JSON object per line, on stdin.
 *
 * @module
 */

/** One JSON line printed by a child; non-JSON text becomes `stdout`. */
export type JsonLine = Record<string, unknown> & { event: string };

/** Options of {@link JsonLineChild}. */
export interface JsonLineChildOptions {
  /** A line that means the child gave up: `waitFor` stops at it. */
  fatal?: (line: JsonLine) => boolean;
}

/**
 * Runs `Deno.execPath()` with `args`, collects its JSON lines, and can
 * command, kill and reap it. Lines written before a kill are still read:
 * they are in the pipe.
 *
 * @example
 * ```ts
 * import { JsonLineChild } from "./json_line_child.ts";
 * const p = new JsonLineChild([
 *   "eval",
 *   "console.log(JSON.stringify({ event: 'ready' }))",
 * ]);
 * await p.waitFor((l) => l.event === "ready", "ready");
 * await p.reap();
 * ```
 */
export class JsonLineChild {
  /** The child process. */
  readonly child: Deno.ChildProcess;
  /** Every line read so far, in order. */
  readonly lines: JsonLine[] = [];
  #writer: WritableStreamDefaultWriter<Uint8Array>;
  #stdinOpen = true;
  #pump: Promise<void>;
  #waiters: Array<() => void> = [];
  #exited = false;
  #fatal: (line: JsonLine) => boolean;

  /** Spawns `deno <args>`: stdin and stdout piped, stderr inherited. */
  constructor(args: string[], options: JsonLineChildOptions = {}) {
    this.#fatal = options.fatal ?? (() => false);
    this.child = new Deno.Command(Deno.execPath(), {
      args,
      stdin: "piped",
      stdout: "piped",
      stderr: "inherit",
    }).spawn();
    this.#writer = this.child.stdin.getWriter();
    this.#pump = this.#read();
    void this.child.status.then(() => this.#exited = true);
  }

  /** False once {@link closeStdin} (or {@link reap}) closed its stdin. */
  get stdinOpen(): boolean {
    return this.#stdinOpen;
  }

  /** True once the process has exited. */
  get exited(): boolean {
    return this.#exited;
  }

  async #read(): Promise<void> {
    const decoder = new TextDecoder();
    let buffered = "";
    for await (const chunk of this.child.stdout) {
      buffered += decoder.decode(chunk, { stream: true });
      let nl: number;
      while ((nl = buffered.indexOf("\n")) >= 0) {
        const text = buffered.slice(0, nl);
        buffered = buffered.slice(nl + 1);
        try {
          this.lines.push(JSON.parse(text));
        } catch {
          this.lines.push({ event: "stdout", text });
        }
      }
      for (const wake of this.#waiters.splice(0)) wake();
    }
    for (const wake of this.#waiters.splice(0)) wake();
  }

  /** Lines of one event type. */
  of(event: string): JsonLine[] {
    return this.lines.filter((l) => l.event === event);
  }

  /**
   * Waits for a line matching `match` at or after index `from`; fails after
   * `ms`, at a fatal line, or once the child exited without printing it.
   */
  async waitFor(
    match: (l: JsonLine) => boolean,
    what: string,
    ms = 20_000,
    from = 0,
  ): Promise<JsonLine> {
    const deadline = Date.now() + ms;
    for (;;) {
      // Once exited, lines may still sit in the pipe: read them all first.
      const exited = this.#exited;
      if (exited) await this.#pump;
      const found = this.lines.slice(from).find(match);
      if (found) return found;
      const fatal = this.lines.find(this.#fatal);
      const left = deadline - Date.now();
      if (left <= 0 || fatal || exited) {
        throw new Error(
          `${
            fatal ? "fatal" : exited ? "exited" : "timed out"
          } waiting for ${what}; last lines: ${
            JSON.stringify(this.lines.slice(-6))
          }`,
        );
      }
      let timer: ReturnType<typeof setTimeout> | undefined;
      await new Promise<void>((resolve) => {
        this.#waiters.push(resolve);
        timer = setTimeout(resolve, Math.min(left, 100));
      });
      clearTimeout(timer);
    }
  }

  /** Writes `value` as one JSON line to the child's stdin. */
  async command(value: Record<string, unknown>): Promise<void> {
    await this.#writer.write(
      new TextEncoder().encode(JSON.stringify(value) + "\n"),
    );
  }

  /** Closes the child's stdin: it reads end of input. */
  async closeStdin(): Promise<void> {
    if (!this.#stdinOpen) return;
    this.#stdinOpen = false;
    try {
      await this.#writer.close();
    } catch { /* broken pipe */ }
  }

  /** SIGKILL (no-op once exited). */
  kill9(): void {
    try {
      this.child.kill("SIGKILL");
    } catch { /* already exited */ }
  }

  /**
   * After a kill or a quit: closes stdin, waits for the exit (SIGKILL after
   * `killAfterMs`, when given) and drains the output.
   */
  async reap(killAfterMs?: number): Promise<void> {
    const timer = killAfterMs === undefined
      ? undefined
      : setTimeout(() => this.kill9(), killAfterMs);
    try {
      await this.closeStdin();
      await this.child.status;
      await this.#pump;
    } finally {
      clearTimeout(timer);
    }
  }

  /** Asks it to quit (`{"quit":true}`), waits (SIGKILL after `ms`), reaps. */
  async finish(ms = 10_000): Promise<void> {
    if (!this.#exited) {
      try {
        await this.command({ quit: true });
      } catch { /* gone */ }
    }
    await this.reap(ms);
  }
}
