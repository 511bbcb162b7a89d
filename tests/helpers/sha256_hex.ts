/**
 * Synchronous SHA-256 for comparing payloads in tests.
 *
 * @module
 */

import { createHash } from "node:crypto";

/**
 * The lowercase hex SHA-256 of `bytes`.
 *
 * @example
 * ```ts
 * import { sha256Hex } from "./sha256_hex.ts";
 * const empty = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
 * if (sha256Hex(new Uint8Array()) !== empty) throw new Error("hash");
 * ```
 */
export function sha256Hex(bytes: Uint8Array): string {
  return createHash("sha256").update(bytes).digest("hex");
}
