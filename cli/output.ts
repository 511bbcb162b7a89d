/**
 * What a person sees: plain lines by default, JSON under `--json`, colour
 * only on a terminal without `NO_COLOR`, and a progress bar on stderr for
 * blob transfers.
 *
 * @module
 */

const encoder = new TextEncoder();

/** True when `stream` is a terminal and `NO_COLOR` is not set. */
function colorFor(stream: { isTerminal(): boolean }): boolean {
  const noColor = Deno.env.get("NO_COLOR");
  return (noColor === undefined || noColor === "") && stream.isTerminal();
}

/** Writes command output to stdout and one-line errors to stderr. */
export class Output {
  readonly json: boolean;
  readonly #color: boolean;
  readonly #errColor: boolean;

  /**
   * @example
   * ```ts
   * import { Output } from "./output.ts";
   * const out = new Output({ json: false });
   * out.line("hello");
   * ```
   */
  constructor(options: { json: boolean; color?: boolean }) {
    this.json = options.json;
    this.#color = options.color ?? colorFor(Deno.stdout);
    this.#errColor = options.color ?? colorFor(Deno.stderr);
  }

  /** Prints one line to stdout. */
  line(text = ""): void {
    Deno.stdout.writeSync(encoder.encode(text + "\n"));
  }

  /** Prints a value as one JSON line to stdout. */
  value(value: unknown): void {
    this.line(JSON.stringify(value));
  }

  /** Prints a one-line error to stderr, prefixed `awp: `. */
  error(text: string): void {
    const first = text.split("\n")[0];
    const prefix = this.#errColor ? "\x1b[31mawp:\x1b[0m " : "awp: ";
    Deno.stderr.writeSync(encoder.encode(prefix + first + "\n"));
  }

  /** Prints a note to stderr (not an error). */
  note(text: string): void {
    Deno.stderr.writeSync(encoder.encode(text + "\n"));
  }

  /** Dims text when colour is on. */
  dim(text: string): string {
    return this.#color ? `\x1b[2m${text}\x1b[0m` : text;
  }

  /** Bolds text when colour is on. */
  bold(text: string): string {
    return this.#color ? `\x1b[1m${text}\x1b[0m` : text;
  }

  /** Greens text when colour is on. */
  green(text: string): string {
    return this.#color ? `\x1b[32m${text}\x1b[0m` : text;
  }
}

/**
 * Formats a byte count: `512 B`, `1.5 KiB`, `3.2 MiB`.
 *
 * @example
 * ```ts
 * import { formatBytes } from "./output.ts";
 * console.log(formatBytes(1536)); // "1.5 KiB"
 * ```
 */
export function formatBytes(bytes: number): string {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let v = bytes;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return i === 0 ? `${v} B` : `${v.toFixed(1)} ${units[i]}`;
}

/**
 * Formats a span of time coarsely: `12s`, `5m`, `3h`, `2d`.
 *
 * @example
 * ```ts
 * import { formatAge } from "./output.ts";
 * console.log(formatAge(90_000)); // "1m"
 * ```
 */
export function formatAge(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m`;
  if (s < 86400) return `${Math.floor(s / 3600)}h`;
  return `${Math.floor(s / 86400)}d`;
}

/**
 * A one-line progress bar on stderr (bytes, rate, ETA), drawn only when
 * stderr is a terminal; otherwise every call does nothing.
 *
 * @example
 * ```ts
 * import { ProgressBar } from "./output.ts";
 * const bar = new ProgressBar("report.log", 1000);
 * bar.update(500);
 * bar.done();
 * ```
 */
export class ProgressBar {
  readonly #label: string;
  #total: number;
  readonly #start = Date.now();
  readonly #enabled: boolean;
  #lastDraw = 0;
  #finished = false;

  constructor(
    label: string,
    total: number,
    options: { enabled?: boolean } = {},
  ) {
    this.#label = label;
    this.#total = total;
    this.#enabled = options.enabled ?? Deno.stderr.isTerminal();
  }

  /**
   * Redraws with `bytes` done (at most ten times a second). `info.total`
   * updates a size that was unknown (-1); `info.rate` (bytes/s, from the
   * transfer itself) replaces the average since the bar was made.
   */
  update(bytes: number, info: { total?: number; rate?: number } = {}): void {
    if (!this.#enabled || this.#finished) return;
    if (info.total !== undefined && info.total >= 0) this.#total = info.total;
    const now = Date.now();
    const total = this.#total;
    if (now - this.#lastDraw < 100 && (total < 0 || bytes < total)) return;
    this.#lastDraw = now;
    const known = total >= 0;
    const frac = known ? (total > 0 ? Math.min(1, bytes / total) : 1) : 0;
    const width = 24;
    const filled = Math.round(frac * width);
    const secs = Math.max(0.001, (now - this.#start) / 1000);
    const rate = info.rate && info.rate > 0 ? info.rate : bytes / secs;
    const eta = known && rate > 0 ? Math.max(0, total - bytes) / rate : 0;
    const text =
      `\r${this.#label} [${"#".repeat(filled)}${"-".repeat(width - filled)}] ` +
      `${formatBytes(bytes)}/${known ? formatBytes(total) : "?"} ${
        formatBytes(Math.round(rate))
      }/s ETA ${known ? formatAge(eta * 1000) : "?"}   `;
    Deno.stderr.writeSync(encoder.encode(text));
  }

  /** Finishes the line (full when `complete`, as it stands otherwise). */
  done(complete = true): void {
    if (!this.#enabled || this.#finished) return;
    if (complete && this.#total >= 0) {
      this.#lastDraw = 0;
      this.update(this.#total);
    }
    this.#finished = true;
    Deno.stderr.writeSync(encoder.encode("\n"));
  }
}
