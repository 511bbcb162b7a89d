/**
 * Compiled `inputSchema`/`outputSchema` validators of skills (ajv), cached
 * per schema object.
 *
 * @module
 */

import { Ajv, type ValidateFunction } from "npm:ajv@^8.20.0";
import { errorText } from "../wire/error_text.ts";

const ajv = new Ajv({ allErrors: false, strict: false });
const compiled = new WeakMap<object, ValidateFunction>();

/**
 * Validates `value` against a JSON Schema; undefined when it conforms,
 * else one line naming the first problem (`what` is its subject).
 *
 * @example
 * ```ts
 * import { schemaProblem } from "./skill_schemas.ts";
 * const schema = { type: "object", required: ["code"] };
 * console.log(schemaProblem(schema, {}, "payload")); // payload must have required property 'code'
 * ```
 */
export function schemaProblem(
  schema: Record<string, unknown>,
  value: unknown,
  what: string,
): string | undefined {
  let validate = compiled.get(schema);
  if (!validate) {
    try {
      validate = ajv.compile(schema);
    } catch (error) {
      return `${what}: the schema does not compile: ${errorText(error)}`;
    }
    compiled.set(schema, validate);
  }
  if (validate(value)) return undefined;
  const e = validate.errors?.[0];
  return `${what}${e?.instancePath ?? ""} ${e?.message ?? "is not valid"}`;
}
