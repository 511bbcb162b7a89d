/**
 * How the conformance runner quotes what it saw in its messages and
 * traces: lines shortened, a received line described in a few words, a
 * time in seconds.
 *
 * @module
 */

import type { Received } from "./scenarios.ts";

/** Most characters of a line in a trace. */
export const TRACE_CHARS = 400;

/**
 * `text`, cut to `max` characters with its length said.
 *
 * @example
 * ```ts
 * import { truncate } from "./line_text.ts";
 * console.log(truncate("abcdef", 3)); // "abc… (6 chars)"
 * ```
 */
export function truncate(text: string, max: number): string {
  return text.length > max
    ? `${text.slice(0, max)}… (${text.length} chars)`
    : text;
}

/**
 * A short description of a line, for failure messages.
 *
 * @example
 * ```ts
 * import { describe } from "./line_text.ts";
 * console.log(describe({ raw: "", message: { t: "bye" } } as never)); // "bye"
 * ```
 */
export function describe(line: Received): string {
  const m = line.message;
  switch (m.t) {
    case "err":
      return `err ${m.code}${
        typeof m.detail === "string"
          ? ` (${JSON.stringify(truncate(m.detail, 120))})`
          : ""
      }`;
    case "ack":
    case "pong":
      return `${m.t} re ${m.re}${m.th !== undefined ? ` th ${m.th}` : ""}`;
    case "msg":
    case "state":
      return `${m.t} ${m.id} in thread ${m.th}`;
    case "bye":
      return "bye";
    default:
      return truncate(line.raw, 160);
  }
}

/**
 * A time span in seconds, for messages: `1.5 s`.
 *
 * @example
 * ```ts
 * import { seconds } from "./line_text.ts";
 * console.log(seconds(1500)); // "1.5 s"
 * ```
 */
export function seconds(ms: number): string {
  return `${Number((ms / 1000).toFixed(1))} s`;
}
