/**
 * What our precompiled schema validator needs at run time besides its own
 * code. The JSON Schema `date-time` format (RFC 3339 section 5.6), as our
 * precompiled validator checks it: the same lines pass as with ajv-formats
 * (`T`, `t` or a space between date and time; the time zone required, as
 * `Z`, `±hh`, `±hhmm` or `±hh:mm`; a leap second only at 23:59 UTC), and
 * string length in code points. Ours, so that validating loads no CommonJS
 * module (whose loader alone costs a process ~10 MiB).
 *
 * @module
 */

const DATE = /^(\d{4})-(\d\d)-(\d\d)$/;
const TIME =
  /^(\d\d):(\d\d):(\d\d)(?:\.\d+)?(?:([zZ])|([+-])(\d\d)(?::?(\d\d))?)$/;
const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

function validDate(text: string): boolean {
  const m = DATE.exec(text);
  if (!m) return false;
  const [year, month, day] = [Number(m[1]), Number(m[2]), Number(m[3])];
  if (month < 1 || month > 12 || day < 1) return false;
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  return day <= (month === 2 && leap ? 29 : DAYS_IN_MONTH[month - 1]);
}

function validTime(text: string): boolean {
  const m = TIME.exec(text);
  if (!m) return false;
  const [hour, minute, second] = [Number(m[1]), Number(m[2]), Number(m[3])];
  const sign = m[5] === "-" ? -1 : 1;
  const zoneHours = Number(m[6] ?? 0);
  const zoneMinutes = Number(m[7] ?? 0);
  if (zoneHours > 23 || zoneMinutes > 59) return false;
  if (hour <= 23 && minute <= 59 && second <= 59) return true;
  // A leap second (:60) is valid only where it is 23:59 in UTC.
  if (second !== 60) return false;
  const utcMinute = minute - sign * zoneMinutes;
  const utcHour = hour - sign * zoneHours - (utcMinute < 0 ? 1 : 0);
  return (utcHour === 23 || utcHour === -1) &&
    (utcMinute === 59 || utcMinute === -1);
}

/**
 * True when `text` is an RFC 3339 date-time with a time zone.
 *
 * @example
 * ```ts
 * import { isDateTime } from "./schema_formats.ts";
 * console.log(isDateTime("2026-01-01T00:00:00.000Z")); // true
 * console.log(isDateTime("2026-02-30T00:00:00Z")); // false
 * console.log(isDateTime("2026-01-01T00:00:00")); // false: no time zone
 * ```
 */
export function isDateTime(text: string): boolean {
  // The lines of a burst (and a batch's acks) share one timestamp.
  if (text === lastValid) return true;
  const parts = text.split(/[tT\s]/);
  const valid = parts.length === 2 && validDate(parts[0]) &&
    validTime(parts[1]);
  if (valid) lastValid = text;
  return valid;
}

/** The last text {@link isDateTime} found valid. */
let lastValid = "";

/**
 * The length of `text` in code points (a surrogate pair counts once), as
 * JSON Schema's `minLength`/`maxLength` count.
 *
 * @example
 * ```ts
 * import { codePointLength } from "./schema_formats.ts";
 * console.log(codePointLength("a😀")); // 2
 * ```
 */
export function codePointLength(text: string): number {
  // Code units, less one per surrogate pair: no string per code point.
  const units = text.length;
  let n = units;
  for (let i = 0; i < units - 1; i++) {
    const unit = text.charCodeAt(i);
    if (unit >= 0xd800 && unit <= 0xdbff) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        n--;
        i++;
      }
    }
  }
  return n;
}
