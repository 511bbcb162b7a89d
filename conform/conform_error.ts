/**
 * The one error of a conformance run that could not start or go on.
 *
 * @module
 */

/** A run that could not start or go on (bad address, refused connection, dead command): one line. */
export class ConformError extends Error {
  /**
   * Creates the error with its one-line message.
   *
   * @example
   * ```ts
   * import { ConformError } from "./conform_error.ts";
   * console.log(new ConformError("dial tcp:127.0.0.1:1: connection refused").message);
   * ```
   */
  constructor(message: string) {
    super(message);
    this.name = "ConformError";
  }
}
