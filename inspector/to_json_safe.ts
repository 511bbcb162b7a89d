/**
 * Turns arbitrary actor data (contexts, events, snapshots) into plain JSON
 * that is safe to send to a browser: bounded in size, no cycles, no
 * functions, bytes summarised instead of copied.
 *
 * @module
 */

import type { JsonValue } from "../wire/canonical_json.ts";
export type { JsonValue };

/** Limits applied by {@link toJsonSafe}. */
export interface JsonSafeLimits {
  /** Deepest nesting kept; deeper values become `"…"`. Default 8. */
  maxDepth?: number;
  /** Longest string kept before truncation. Default 400. */
  maxString?: number;
  /** Most array items / object keys kept. Default 100. */
  maxItems?: number;
}

/**
 * Converts `value` to JSON-safe data without throwing.
 *
 * Objects with `toJSON` (xstate snapshots, actor refs, dates) are asked
 * first; byte arrays become `{ bytes: n }` because chunk payloads would
 * swamp the inspector; cycles become `"[cycle]"`.
 *
 * @example
 * ```ts
 * import { toJsonSafe } from "./to_json_safe.ts";
 * const a: Record<string, unknown> = { data: new Uint8Array(3), f() {} };
 * a.self = a;
 * console.log(toJsonSafe(a)); // { data: { bytes: 3 }, self: "[cycle]" }
 * ```
 */
export function toJsonSafe(
  value: unknown,
  limits: JsonSafeLimits = {},
): JsonValue {
  const maxDepth = limits.maxDepth ?? 8;
  const maxString = limits.maxString ?? 400;
  const maxItems = limits.maxItems ?? 100;
  const seen = new WeakSet<object>();

  const walk = (
    v: unknown,
    depth: number,
    useToJSON = true,
  ): JsonValue | undefined => {
    switch (typeof v) {
      case "string":
        return v.length > maxString
          ? `${v.slice(0, maxString)}…(${v.length})`
          : v;
      case "number":
        return Number.isFinite(v) ? v : String(v);
      case "boolean":
        return v;
      case "bigint":
        return v.toString();
      case "undefined":
      case "function":
      case "symbol":
        return undefined;
    }
    if (v === null) return null;
    const obj = v as object;
    if (ArrayBuffer.isView(obj)) return { bytes: obj.byteLength };
    if (obj instanceof ArrayBuffer) return { bytes: obj.byteLength };
    if (obj instanceof Error) return { error: obj.message };
    if (seen.has(obj)) return "[cycle]";
    if (depth >= maxDepth) return "…";
    const toJSON = (obj as { toJSON?: unknown }).toJSON;
    // Followed once: some toJSON results have a toJSON of their own.
    if (useToJSON && typeof toJSON === "function") {
      let converted: unknown;
      try {
        converted = toJSON.call(obj);
      } catch {
        return "[unserializable]";
      }
      if (converted !== obj) {
        seen.add(obj);
        const out = walk(converted, depth + 1, false);
        seen.delete(obj);
        return out;
      }
    }
    seen.add(obj);
    try {
      if (Array.isArray(obj)) {
        const out: JsonValue[] = [];
        for (const item of obj.slice(0, maxItems)) {
          out.push(walk(item, depth + 1) ?? null);
        }
        if (obj.length > maxItems) out.push(`…(${obj.length})`);
        return out;
      }
      if (obj instanceof Map) {
        return walk(Object.fromEntries(obj), depth);
      }
      if (obj instanceof Set) return walk([...obj], depth);
      const out: { [key: string]: JsonValue } = {};
      let n = 0;
      for (const key of Object.keys(obj)) {
        if (n++ >= maxItems) {
          out["…"] = `${Object.keys(obj).length} keys`;
          break;
        }
        const item = walk((obj as Record<string, unknown>)[key], depth + 1);
        if (item !== undefined) out[key] = item;
      }
      return out;
    } finally {
      seen.delete(obj);
    }
  };
  return walk(value, 0) ?? null;
}
