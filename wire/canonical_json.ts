/**
 * Canonical JSON, the bytes grants and presence documents are signed over
 * (SPEC section 10.2, NOTES.md item 11).
 *
 * @module
 */

/** A JSON value as `JSON.parse` returns it. */
export type JsonValue =
  | null
  | boolean
  | number
  | string
  | JsonValue[]
  | { [key: string]: JsonValue };

/**
 * Thrown by {@linkcode canonicalJson} for values JSON cannot carry.
 *
 * @example
 * ```ts
 * import { CanonicalJsonError, canonicalJson } from "./canonical_json.ts";
 * try { canonicalJson(NaN); } catch (e) { console.log(e instanceof CanonicalJsonError); }
 * ```
 */
export class CanonicalJsonError extends TypeError {
  /** Builds the error; `path` locates the bad value, like `$.caps[2]`. */
  constructor(path: string, what: string) {
    super(`canonical JSON: ${what} at ${path}`);
    this.name = "CanonicalJsonError";
  }
}

const SHORT: Record<number, string> = {
  0x08: "\\b",
  0x09: "\\t",
  0x0a: "\\n",
  0x0c: "\\f",
  0x0d: "\\r",
  0x22: '\\"',
  0x5c: "\\\\",
};
// deno-lint-ignore no-control-regex
const NEEDS_ESCAPE = /["\\\u0000-\u001f]/;

function quote(text: string, path: string): string {
  if (!text.isWellFormed()) {
    // A lone surrogate has no UTF-8 form, so no two implementations would
    // agree on the signed bytes: refuse rather than guess.
    throw new CanonicalJsonError(path, "string with a lone surrogate");
  }
  if (!NEEDS_ESCAPE.test(text)) return `"${text}"`;
  let out = '"';
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c >= 0x20 && c !== 0x22 && c !== 0x5c) continue;
    out += text.slice(start, i) +
      (SHORT[c] ?? `\\u${c.toString(16).padStart(4, "0")}`);
    start = i + 1;
  }
  return out + text.slice(start) + '"';
}

/**
 * Orders keys by Unicode code point, which is UTF-8 byte order: what Go's
 * and Python's sorts give. Plain `<` compares UTF-16 code units, which
 * differs when an astral character meets one in U+E000..U+FFFF.
 */
function compareKeys(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    let x = a.charCodeAt(i);
    let y = b.charCodeAt(i);
    if (x === y) continue;
    // Surrogates move above U+FFFF, U+E000..U+FFFF move down below them.
    if (x >= 0xd800) x += x <= 0xdfff ? 0x2000 : -0x800;
    if (y >= 0xd800) y += y <= 0xdfff ? 0x2000 : -0x800;
    return x - y;
  }
  return a.length - b.length;
}

function write(value: unknown, path: string, ancestors: Set<object>): string {
  switch (typeof value) {
    case "string":
      return quote(value, path);
    case "number":
      if (!Number.isFinite(value)) {
        throw new CanonicalJsonError(path, `non-finite number ${value}`);
      }
      return JSON.stringify(value);
    case "boolean":
      return value ? "true" : "false";
    case "object": {
      if (value === null) return "null";
      if (ancestors.has(value)) throw new CanonicalJsonError(path, "cycle");
      ancestors.add(value);
      try {
        if (Array.isArray(value)) {
          const items: string[] = [];
          for (let i = 0; i < value.length; i++) {
            if (value[i] === undefined) {
              throw new CanonicalJsonError(`${path}[${i}]`, "undefined");
            }
            items.push(write(value[i], `${path}[${i}]`, ancestors));
          }
          return `[${items.join(",")}]`;
        }
        const proto = Object.getPrototypeOf(value);
        if (proto !== Object.prototype && proto !== null) {
          throw new CanonicalJsonError(
            path,
            `non-plain object (${proto?.constructor?.name ?? "?"})`,
          );
        }
        const record = value as Record<string, unknown>;
        const members: string[] = [];
        for (const key of Object.keys(record).sort(compareKeys)) {
          // Absent and undefined are the same for an optional field, as in
          // JSON.stringify.
          if (record[key] === undefined) continue;
          const child = `${path}.${key}`;
          members.push(
            `${quote(key, child)}:${write(record[key], child, ancestors)}`,
          );
        }
        return `{${members.join(",")}}`;
      } finally {
        ancestors.delete(value);
      }
    }
    default:
      throw new CanonicalJsonError(path, `${typeof value} is not JSON`);
  }
}

/**
 * Serializes a JSON value canonically: object keys sorted by code point
 * (like Go and Python `sort_keys`), no whitespace, strings escaping only
 * `"`, `\` and control characters (short forms `\b \f \n \r \t`, else
 * `\u00XX`), everything else (non-ASCII, U+2028, `<>&`) literal; numbers as
 * `JSON.stringify` prints them. The result is meant to be UTF-8 encoded.
 * This equals Python's
 * `json.dumps(v, sort_keys=True, separators=(",", ":"), ensure_ascii=False)`
 * for values without floats.
 *
 * Throws {@linkcode CanonicalJsonError} for NaN, Infinity, bigint,
 * functions, symbols, undefined (except as an object property value, which
 * is skipped), cycles, non-plain objects and strings with lone surrogates.
 *
 * @example
 * ```ts
 * import { canonicalJson } from "./canonical_json.ts";
 * console.log(canonicalJson({ b: [1, "é\n"], a: null })); // {"a":null,"b":[1,"é\n"]}
 * ```
 */
export function canonicalJson(value: unknown): string {
  return write(value, "$", new Set());
}
