/**
 * One line of text for anything thrown: the first line of an `Error`'s
 * message, or the value as a string. Every layer reports failures as a
 * single line (a log line, an `err` frame's `msg`, a CLI error), so this is
 * the one place that turns a thrown value into one.
 *
 * @module
 */

/**
 * The first line of `error`'s message (or of `String(error)`).
 *
 * @example
 * ```ts
 * import { errorText } from "./error_text.ts";
 * console.log(errorText(new Error("refused\nstack…"))); // "refused"
 * console.log(errorText("plain")); // "plain"
 * ```
 */
export function errorText(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  const end = text.indexOf("\n");
  return end === -1 ? text : text.slice(0, end);
}
