/**
 * The mime types of the coding-agent profile (PROFILE.md): the request
 * parts (`exec`, `fs:read`, `fs:write`, `admin`) and their results. Only
 * constants, so what shows a request or a result (the CLI) need not load
 * what serves them.
 *
 * @module
 */

/** A capability the profile defines a request for. */
export type ProfileCap = "exec" | "fs:read" | "fs:write" | "admin";

/**
 * Request mime → capability (PROFILE.md).
 *
 * @example
 * ```ts
 * import { REQUEST_MIMES } from "./mimes.ts";
 * console.log(REQUEST_MIMES["application/vnd.awp.exec+json"]); // "exec"
 * ```
 */
export const REQUEST_MIMES: Readonly<Record<string, ProfileCap>> = Object
  .freeze({
    "application/vnd.awp.exec+json": "exec",
    "application/vnd.awp.fs-read+json": "fs:read",
    "application/vnd.awp.fs-write+json": "fs:write",
    "application/vnd.awp.admin+json": "admin",
  });

/** The result mime of an `exec` request.
 *
 * @example
 * ```ts
 * import { EXEC_RESULT_MIME } from "./mimes.ts";
 * console.log(EXEC_RESULT_MIME);
 * ```
 */
export const EXEC_RESULT_MIME = "application/vnd.awp.exec-result+json";

/** The result mime of an `fs:read` request.
 *
 * @example
 * ```ts
 * import { FS_READ_RESULT_MIME } from "./mimes.ts";
 * console.log(FS_READ_RESULT_MIME);
 * ```
 */
export const FS_READ_RESULT_MIME = "application/vnd.awp.fs-read-result+json";

/** The result mime of an `fs:write` request.
 *
 * @example
 * ```ts
 * import { FS_WRITE_RESULT_MIME } from "./mimes.ts";
 * console.log(FS_WRITE_RESULT_MIME);
 * ```
 */
export const FS_WRITE_RESULT_MIME = "application/vnd.awp.fs-write-result+json";

/**
 * Capability → the mime of its result's data part (`admin` has none).
 *
 * @example
 * ```ts
 * import { RESULT_MIMES } from "./mimes.ts";
 * console.log(RESULT_MIMES["fs:read"]); // "application/vnd.awp.fs-read-result+json"
 * ```
 */
export const RESULT_MIMES: Readonly<Record<string, string>> = Object.freeze({
  exec: EXEC_RESULT_MIME,
  "fs:read": FS_READ_RESULT_MIME,
  "fs:write": FS_WRITE_RESULT_MIME,
});
