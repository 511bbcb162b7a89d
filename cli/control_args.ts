/**
 * Reading a control request's arguments: they come as JSON from the CLI,
 * so each is checked for its type where it is used; a bad one is a usage
 * error (exit 2).
 *
 * @module
 */

import { ControlError } from "./control.ts";

/**
 * A usage error (exit code 2) with `message`.
 *
 * @example
 * ```ts
 * import { usage } from "./control_args.ts";
 * console.log(usage("missing peer").code); // 2
 * ```
 */
export function usage(message: string): ControlError {
  return new ControlError(message, 2);
}

/**
 * `v` when it is a non-empty string, else undefined.
 *
 * @example
 * ```ts
 * import { str } from "./control_args.ts";
 * console.log(str(""), str("a")); // undefined a
 * ```
 */
export function str(v: unknown): string | undefined {
  return typeof v === "string" && v !== "" ? v : undefined;
}

/**
 * `v` as a list of strings (empty when it is not an array).
 *
 * @example
 * ```ts
 * import { strings } from "./control_args.ts";
 * console.log(strings(["a", 1]), strings(undefined)); // [ "a", "1" ] []
 * ```
 */
export function strings(v: unknown): string[] {
  return Array.isArray(v) ? v.map(String) : [];
}
