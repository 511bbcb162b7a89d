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
  // Within the same minute only the seconds and milliseconds change: a
  // string join, not a Date and its formatting (~10 µs each in a busy
  // process; a handshake formats three).
  const minute = Math.floor(ms / 60_000);
  if (minute !== lastMinute || !Number.isInteger(ms)) {
    lastText = new Date(ms).toISOString();
    lastMinute = Number.isInteger(ms) ? minute : NaN;
    minutePrefix = lastText.slice(0, -7); // "YYYY-MM-DDTHH:MM:"
  } else {
    const inMinute = ms - minute * 60_000;
    const s = Math.floor(inMinute / 1000);
    const milli = inMinute - s * 1000;
    lastText = minutePrefix + (s < 10 ? "0" : "") + s + "." +
      (milli < 10 ? "00" : milli < 100 ? "0" : "") + milli + "Z";
  }
  lastMs = ms;
  return lastText;
}

let lastMs = NaN;
let lastText = "";
let lastMinute = NaN;
let minutePrefix = "";
