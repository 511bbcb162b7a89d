/**
 * A JSON Schema's validation keywords alone: its `description` annotations
 * removed (and `title`, `$comment`), everything that decides validity kept.
 * How `tests/fixtures/published_schema.json` was made from the published
 * schema, and how the tests check it still matches.
 *
 * @module
 */

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

/** Annotations that never change what validates. */
const ANNOTATIONS = new Set(["description", "title", "$comment"]);

/** Maps of names to schemas: their keys are names, never keywords. */
const NAME_MAPS = new Set(["properties", "$defs", "patternProperties"]);

/**
 * `schema` without its annotations, recursively; property names such as a
 * field called `description` are kept.
 *
 * @example
 * ```ts
 * import { schemaKeywords } from "./schema_keywords.ts";
 * const s = { description: "x", properties: { description: { type: "string", description: "y" } } };
 * console.log(JSON.stringify(schemaKeywords(s))); // {"properties":{"description":{"type":"string"}}}
 * ```
 */
export function schemaKeywords(schema: Json): Json {
  if (Array.isArray(schema)) return schema.map(schemaKeywords);
  if (schema === null || typeof schema !== "object") return schema;
  const out: { [k: string]: Json } = {};
  for (const [key, value] of Object.entries(schema)) {
    if (ANNOTATIONS.has(key) && typeof value === "string") continue;
    if (NAME_MAPS.has(key) && value !== null && typeof value === "object") {
      out[key] = Object.fromEntries(
        Object.entries(value).map(([name, sub]) => [name, schemaKeywords(sub)]),
      );
    } else out[key] = schemaKeywords(value);
  }
  return out;
}
