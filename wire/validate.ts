/**
 * Schema validation of received lines against `schema/awp.schema.json`.
 *
 * @module
 */

import { Ajv2020 } from "npm:ajv@^8.20.0/dist/2020.js";
import addFormats from "npm:ajv-formats@^3.0.1";
import type { ErrorObject, ValidateFunction } from "npm:ajv@^8.20.0";
import schema from "../schema/awp.schema.json" with { type: "json" };
import { MESSAGE_TYPES } from "./types.ts";

/** The outcome of validating one value: ok, or one-line error strings. */
export type ValidationResult = { ok: true } | { ok: false; errors: string[] };

/** A compiled validator, as returned by {@linkcode createValidator}. */
export type Validator = (value: unknown) => ValidationResult;

const OK: ValidationResult = Object.freeze({ ok: true });

// ajv-formats is published as CommonJS; under Deno's npm interop the default
// import may be the module object rather than the plugin function.
type FormatsPlugin = (ajv: Ajv2020) => Ajv2020;
const formatsPlugin: FormatsPlugin = ((addFormats as unknown as {
  default?: FormatsPlugin;
}).default ?? addFormats) as unknown as FormatsPlugin;

function newAjv(strict: boolean): Ajv2020 {
  const ajv = new Ajv2020({ strict, allErrors: false, validateFormats: true });
  formatsPlugin(ajv);
  return ajv;
}

/** Renders ajv errors as short one-line strings, skipping if/then noise. */
function describe(errors: ErrorObject[] | null | undefined): string[] {
  const out: string[] = [];
  for (const e of errors ?? []) {
    if (e.keyword === "if") continue;
    const where = e.instancePath === "" ? "line" : e.instancePath;
    let text = `${where} ${e.message ?? "is invalid"}`;
    if (e.keyword === "enum") {
      const allowed = (e.params as { allowedValues?: unknown[] }).allowedValues;
      if (allowed) text += `: ${allowed.join(", ")}`;
    } else if (e.keyword === "additionalProperties") {
      text += `: ${
        (e.params as { additionalProperty?: string }).additionalProperty
      }`;
    }
    out.push(text.replace(/[\r\n]+/g, " "));
  }
  return out.length > 0 ? out : ["line is invalid"];
}

function wrap(fn: ValidateFunction): Validator {
  return (value: unknown): ValidationResult =>
    fn(value) ? OK : { ok: false, errors: describe(fn.errors) };
}

/**
 * Compiles any JSON Schema (draft 2020-12, with ajv-formats) into a
 * validator. Unknown keywords are tolerated, so that schemas written by
 * others (such as the published AWP schema) compile too.
 *
 * @example
 * ```ts
 * import { createValidator } from "./validate.ts";
 * const check = createValidator({ type: "object", required: ["t"] });
 * console.log(check({ t: "ping" }).ok, check([]).ok); // true false
 * ```
 */
export function createValidator(schema: object): Validator {
  return wrap(newAjv(false).compile(schema));
}

interface Compiled {
  /** The whole schema: the root `$ref` to `Message`. */
  whole: Validator;
  /** Envelope only, for lines of a type this schema does not know. */
  envelope: Validator;
  /** One validator per known type, so dispatch costs one Map lookup. */
  byType: Map<string, Validator>;
}

let compiled: Compiled | undefined;

/** Compiles our schema once, on first use, in ajv's strict mode. */
function compile(): Compiled {
  if (compiled) return compiled;
  const ajv = newAjv(true);
  ajv.addSchema(schema);
  const id = schema.$id;
  const get = (ref: string): Validator => {
    const fn = ajv.getSchema(`${id}${ref}`);
    if (!fn) throw new Error(`validate: schema has no ${ref}`);
    return wrap(fn);
  };
  const byType = new Map<string, Validator>();
  const defs = schema.$defs as Record<
    string,
    { properties?: { t?: { const?: string } } }
  >;
  for (const [name, def] of Object.entries(defs)) {
    const t = def.properties?.t?.const;
    if (typeof t === "string") byType.set(t, get(`#/$defs/${name}`));
  }
  for (const t of MESSAGE_TYPES) {
    if (!byType.has(t)) throw new Error(`validate: schema lacks type ${t}`);
  }
  compiled = { whole: get(""), envelope: get("#/$defs/Envelope"), byType };
  return compiled;
}

/**
 * Validates one parsed line against our AWP schema.
 *
 * Known types are checked against their definition. A line whose `t` this
 * peer does not know is valid when its envelope is (t, id, ts), because
 * SPEC section 5 says such lines are ignored after reading the envelope;
 * the schema file itself, like the published one, admits only known types.
 *
 * @example
 * ```ts
 * import { validateMessage } from "./validate.ts";
 * const ts = "2026-01-01T00:00:00.000Z";
 * console.log(validateMessage({ t: "ping", id: "1", ts }).ok); // true
 * console.log(validateMessage({ t: "later", id: "2", ts }).ok); // true
 * console.log(validateMessage({ t: "ack", id: "3", ts })); // { ok: false, errors: [...] }
 * ```
 */
export function validateMessage(value: unknown): ValidationResult {
  const c = compile();
  if (value !== null && typeof value === "object" && !Array.isArray(value)) {
    const t = (value as { t?: unknown }).t;
    if (typeof t === "string") {
      return (c.byType.get(t) ?? c.envelope)(value);
    }
  }
  return c.whole(value);
}
