/**
 * Sockets in words, for every transport: a socket address as an AWP
 * address, and a socket error as one short line.
 *
 * @module
 */

import { formatAddress } from "../wire/address.ts";
import { errorText } from "../wire/error_text.ts";

/**
 * A socket address as an AWP address: `tcp:HOST:PORT` or `unix:/path`.
 *
 * @example
 * ```ts
 * import { socketAddressText } from "./socket_text.ts";
 * const a: Deno.NetAddr = { transport: "tcp", hostname: "127.0.0.1", port: 5 };
 * console.assert(socketAddressText(a) === "tcp:127.0.0.1:5");
 * ```
 */
export function socketAddressText(a: Deno.Addr): string {
  if (a.transport === "tcp" || a.transport === "udp") {
    return formatAddress({ kind: "tcp", host: a.hostname, port: a.port });
  }
  return `unix:${(a as Deno.UnixAddr).path ?? ""}`;
}

/**
 * Why a socket operation failed, in one line ("connection refused",
 * "timed out", or the first line of the error's message).
 *
 * @example
 * ```ts
 * import { socketErrorReason } from "./socket_text.ts";
 * console.assert(
 *   socketErrorReason(new Deno.errors.ConnectionRefused("x")) === "connection refused",
 * );
 * ```
 */
export function socketErrorReason(error: unknown): string {
  if (error instanceof Deno.errors.ConnectionRefused) {
    return "connection refused";
  }
  if (error instanceof Deno.errors.NotFound) return "no such socket";
  if (error instanceof Deno.errors.PermissionDenied) {
    return "permission denied";
  }
  if (error instanceof Deno.errors.AddrInUse) return "address already in use";
  if (error instanceof Deno.errors.AddrNotAvailable) {
    return "address not available";
  }
  if (error instanceof Deno.errors.TimedOut) return "timed out";
  return errorText(error).trim() || "failed";
}

/**
 * True for an IP literal (checked against the private ranges before a
 * dial); false for a host name (checked once it resolved).
 *
 * @example
 * ```ts
 * import { isIpLiteral } from "./socket_text.ts";
 * console.assert(isIpLiteral("10.0.0.1") && isIpLiteral("::1"));
 * console.assert(!isIpLiteral("example.com"));
 * ```
 */
export function isIpLiteral(host: string): boolean {
  return host.includes(":") || /^[0-9.]+$/.test(host);
}
