/**
 * Variations of one object for differential tests of a hand-written check
 * against the generated validator: the object itself, every one-field change
 * and every two-field change, taken from the given fields and values.
 *
 * @example
 * ```ts
 * import { fieldChanges } from "./field_changes.ts";
 * const cases = fieldChanges({ t: "ping" }, ["t", "id"], [undefined, "x"]);
 * console.log(cases.length); // 1 + 4 + 4 = 9
 * ```
 */
export function fieldChanges(
  base: Record<string, unknown>,
  fields: readonly string[],
  values: readonly unknown[],
): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [base];
  for (const f of fields) {
    for (const v of values) {
      const one = withField(base, f, v);
      out.push(one);
      for (const g of fields) {
        if (g <= f) continue;
        for (const w of values) out.push(withField(one, g, w));
      }
    }
  }
  return out;
}

/** A copy of `base` with `field` set to `value` (`undefined`: left out). */
function withField(
  base: Record<string, unknown>,
  field: string,
  value: unknown,
): Record<string, unknown> {
  const out = { ...base };
  if (value === undefined) delete out[field];
  else out[field] = value;
  return out;
}
