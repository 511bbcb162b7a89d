/**
 * Timestamps as AWP sends them.
 *
 * @module
 */

/**
 * Formats a time as RFC 3339 UTC with milliseconds, the precision AWP
 * sends (NOTES.md item 10). Defaults to now.
 *
 * @example
 * ```ts
 * import { timestamp } from "./time.ts";
 * console.log(timestamp(0)); // "1970-01-01T00:00:00.000Z"
 * ```
 */
export function timestamp(ms: number = Date.now()): string {
  // Every line carries one; a burst formats the same millisecond often.
  if (ms === lastMs) return lastText;
  if (!Number.isFinite(ms)) {
    throw new RangeError(`timestamp: not a finite time: ${ms}`);
  }
  lastText = new Date(ms).toISOString();
  lastMs = ms;
  return lastText;
}

let lastMs = NaN;
let lastText = "";
