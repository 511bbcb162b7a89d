/**
 * Copying and comparing plain JSON data (objects, arrays, strings, numbers,
 * booleans, null) in JavaScript: a record a cache hands out, or two records
 * compared field by field. `structuredClone` goes through the serializer
 * (an op each call, ~20 µs even for `[]`), and comparing canonical JSON
 * texts builds two strings; every handshake did both several times.
 *
 * @module
 */

function isPlainObject(value: object): boolean {
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/**
 * A deep copy of `value`. Plain objects, arrays and primitives are copied
 * here; anything else (a `Uint8Array`, a `Date`, a `Map`...) by
 * `structuredClone`, so the copy is always as deep as `structuredClone`'s.
 * `undefined` fields are kept, as `structuredClone` keeps them.
 *
 * @example
 * ```ts
 * import { clonePlain } from "./plain_json.ts";
 * const a = { caps: ["chat"], n: 1 };
 * const b = clonePlain(a);
 * b.caps.push("blob");
 * console.log(a.caps.length, b.caps.length); // 1 2
 * ```
 */
export function clonePlain<T>(value: T): T {
  if (typeof value !== "object" || value === null) return value;
  if (Array.isArray(value)) {
    const out = new Array(value.length);
    for (let i = 0; i < value.length; i++) out[i] = clonePlain(value[i]);
    return out as T;
  }
  if (!isPlainObject(value)) return structuredClone(value);
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(value)) {
    out[key] = clonePlain((value as Record<string, unknown>)[key]);
  }
  return out as T;
}

/**
 * Whether `a` and `b` are the same JSON data: what `canonicalJson` of each
 * would say, without building the texts (key order does not matter; a
 * field set to `undefined` counts as absent, as in JSON). Values that are
 * not plain data (a `Date`, a `Uint8Array`...) are equal only when they
 * are the same object.
 *
 * @example
 * ```ts
 * import { samePlain } from "./plain_json.ts";
 * console.log(samePlain({ a: 1, b: [true] }, { b: [true], a: 1 })); // true
 * console.log(samePlain({ a: 1 }, { a: 1, b: undefined })); // true
 * console.log(samePlain({ a: 1 }, { a: 2 })); // false
 * ```
 */
export function samePlain(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (
    typeof a !== "object" || typeof b !== "object" || a === null ||
    b === null
  ) {
    return false;
  }
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) {
      if (!samePlain(a[i], b[i])) return false;
    }
    return true;
  }
  if (Array.isArray(b) || !isPlainObject(a) || !isPlainObject(b)) return false;
  const x = a as Record<string, unknown>;
  const y = b as Record<string, unknown>;
  let defined = 0;
  for (const key of Object.keys(x)) {
    if (x[key] === undefined) continue;
    defined++;
    if (!samePlain(x[key], y[key])) return false;
  }
  for (const key of Object.keys(y)) {
    if (y[key] !== undefined) defined--;
  }
  return defined === 0;
}
