/**
 * Schema validation of received lines against `schema/awp.schema.json`.
 *
 * @module
 */

import type { ErrorObject, ValidateFunction } from "npm:ajv@^8.20.0";
// Our schema, compiled by ajv at build time (wire/validator_source.ts):
// validating never loads ajv nor compiles a schema at run time.
import * as compiledSchema from "./validate_compiled.js";
import { isDateTime } from "./schema_formats.ts";
import { MESSAGE_TYPES } from "./types.ts";

/** The outcome of validating one value: ok, or one-line error strings. */
export type ValidationResult = { ok: true } | { ok: false; errors: string[] };

/** A compiled validator, as returned by `createValidator`. */
export type Validator = (value: unknown) => ValidationResult;

const OK: ValidationResult = Object.freeze({ ok: true });

/**
 * Renders ajv errors as short one-line strings, skipping if/then noise.
 *
 * @example
 * ```ts
 * import { describeErrors } from "./validate.ts";
 * console.log(describeErrors([])); // ["line is invalid"]
 * ```
 */
export function describeErrors(
  errors: ErrorObject[] | null | undefined,
): string[] {
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

/**
 * Wraps an ajv validate function as a {@linkcode Validator}.
 *
 * @example
 * ```ts
 * import { wrapValidateFunction } from "./validate.ts";
 * import { envelope } from "./validate_compiled.js";
 * console.log(wrapValidateFunction(envelope)({}).ok); // false
 * ```
 */
export function wrapValidateFunction(fn: ValidateFunction): Validator {
  return (value: unknown): ValidationResult =>
    fn(value) ? OK : { ok: false, errors: describeErrors(fn.errors) };
}

interface Compiled {
  /** Envelope only, for lines of a type this schema does not know. */
  envelope: Validator;
  /** One validator per known type, so dispatch costs one Map lookup. */
  byType: Map<string, Validator>;
}

let compiled: Compiled | undefined;

/** Wraps the generated validators once, on first use. */
function compile(): Compiled {
  if (compiled) return compiled;
  const byType = new Map<string, Validator>();
  const table = compiledSchema as unknown as Record<string, ValidateFunction>;
  for (const t of compiledSchema.TYPES) {
    byType.set(t, wrapValidateFunction(table[`type_${t}`]));
  }
  for (const t of MESSAGE_TYPES) {
    if (!byType.has(t)) throw new Error(`validate: schema lacks type ${t}`);
  }
  compiled = {
    envelope: wrapValidateFunction(compiledSchema.envelope),
    byType,
  };
  return compiled;
}

/** A value JSON could give as an object: not null, not an array. */
function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

/**
 * True when `value` is a msg whose parts are all text parts and which the
 * schema accepts: checked here in a few lines, without the generated
 * validator (a msg's is the largest, as its Part validator takes every part
 * kind; a restarted peer's first few hundred msgs ran it cold and it was
 * among V8's largest optimizing compiles, bench/README "resume3"). False
 * says nothing: the generated validator decides (and words the error).
 *
 * @example
 * ```ts
 * import { isPlainTextMsg } from "./validate.ts";
 * const ts = "2026-01-01T00:00:00.000Z";
 * const parts = [{ k: "text", text: "hi" }];
 * console.log(isPlainTextMsg({ t: "msg", id: "1", ts, th: "t1", parts })); // true
 * console.log(isPlainTextMsg({ t: "msg", id: "1", ts, parts })); // false (no th)
 * ```
 */
export function isPlainTextMsg(value: unknown): boolean {
  if (!isObject(value) || value.t !== "msg") return false;
  // The envelope (SPEC 6): id non-empty, ts an RFC 3339 date-time; th
  // required for a msg; re and subject strings when present.
  const { id, ts, th, re, subject, parts } = value;
  if (typeof id !== "string" || id.length === 0) return false;
  if (typeof ts !== "string" || typeof th !== "string") return false;
  if (re !== undefined && typeof re !== "string") return false;
  if (subject !== undefined && typeof subject !== "string") return false;
  if (!Array.isArray(parts)) return false;
  for (let i = 0; i < parts.length; i++) {
    const part: unknown = parts[i];
    if (!isObject(part) || part.k !== "text") return false;
    if (typeof part.text !== "string") return false;
  }
  return isDateTime(ts);
}

/**
 * Validates one parsed line against our AWP schema.
 *
 * Known types are checked against their definition. A line whose `t` this
 * peer does not know is valid when its envelope is (t, id, ts), because
 * SPEC section 5 says such lines are ignored after reading the envelope;
 * the schema file itself, like the published one, admits only known types.
 * A line that is no object, or has no string `t`, gets the error the whole
 * schema's validator would give (its code is not compiled in: see
 * `wire/validator_source.ts`).
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
      // The common msg (text parts only) without the generated validator.
      if (t === "msg" && isPlainTextMsg(value)) return OK;
      return (c.byType.get(t) ?? c.envelope)(value);
    }
    return {
      ok: false,
      errors: [
        t === undefined
          ? "line must have required property 't'"
          : "/t must be string",
      ],
    };
  }
  return { ok: false, errors: ["line must be object"] };
}
