/**
 * {@link requireText}: the check of a store call's required text argument
 * (a peer key, a thread id, a hash...), with a one-line TypeError.
 *
 * @module
 */

/**
 * `value` when it is a non-empty string; else throws a one-line TypeError
 * naming `what`.
 *
 * @example
 * ```ts
 * import { requireText } from "./require_text.ts";
 * console.log(requireText("ed25519:abc", "peer")); // "ed25519:abc"
 * try { requireText("", "enqueue: peer"); } catch (e) { console.log((e as Error).message); }
 * ```
 */
export function requireText(value: unknown, what: string): string {
  if (typeof value !== "string" || value === "") {
    throw new TypeError(
      `${what} must be a non-empty string, got ${JSON.stringify(value)}`,
    );
  }
  return value;
}
