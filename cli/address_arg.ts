/**
 * An address typed on the command line: `tcp:`/`unix:` forms are checked,
 * and the short forms people type (`10.0.0.7`, `host:7001`, `[::1]`) are
 * read as `tcp:` (port 7000 by default). Anything else is a peer's name.
 *
 * @module
 */

import { UsageError } from "./args.ts";
import { expandShortAddress, parseAddress } from "../wire/address.ts";
import { errorText } from "../wire/error_text.ts";

/** Text that claims to be an address by its scheme. */
const SCHEME = /^(tcp|unix|wss?):/i;

/**
 * The full address `text` stands for, checked (a bad one is a
 * {@link UsageError}); a peer's name comes back unchanged, unless
 * `addressOnly`, when it is an error too.
 *
 * @example
 * ```ts
 * import { addressArg } from "./address_arg.ts";
 * console.log(addressArg("127.0.0.1:7001")); // "tcp:127.0.0.1:7001"
 * console.log(addressArg("10.0.0.7")); // "tcp:10.0.0.7:7000"
 * console.log(addressArg("alice")); // "alice"
 * ```
 */
export function addressArg(text: string, addressOnly = false): string {
  const address = expandShortAddress(text) ??
    (SCHEME.test(text) || addressOnly ? text : undefined);
  if (address === undefined) return text;
  try {
    parseAddress(address);
  } catch (error) {
    throw new UsageError(
      errorText(error),
    );
  }
  return address;
}
