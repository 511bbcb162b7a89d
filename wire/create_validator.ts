/**
 * Compiles any JSON Schema at run time with ajv (tests and tools; the
 * peer's own schema is precompiled, see wire/validate.ts).
 *
 * @module
 */

import { Ajv2020 } from "npm:ajv@^8.20.0/dist/2020.js";
import addFormats from "npm:ajv-formats@^3.0.1";
import { type Validator, wrapValidateFunction } from "./validate.ts";

// ajv-formats is published as CommonJS; under Deno's npm interop the default
// import may be the module object rather than the plugin function.
type FormatsPlugin = (ajv: Ajv2020) => Ajv2020;
const formatsPlugin: FormatsPlugin = ((addFormats as unknown as {
  default?: FormatsPlugin;
}).default ?? addFormats) as unknown as FormatsPlugin;

/**
 * Compiles any JSON Schema (draft 2020-12, with ajv-formats) into a
 * validator. Unknown keywords are tolerated, so that schemas written by
 * others (such as the published AWP schema) compile too.
 *
 * @example
 * ```ts
 * import { createValidator } from "./create_validator.ts";
 * const check = createValidator({ type: "object", required: ["t"] });
 * console.log(check({ t: "ping" }).ok, check([]).ok); // true false
 * ```
 */
export function createValidator(schema: object): Validator {
  const ajv = new Ajv2020({
    strict: false,
    allErrors: false,
    validateFormats: true,
  });
  formatsPlugin(ajv);
  return wrapValidateFunction(ajv.compile(schema));
}
