/**
 * Transport addresses as text: `tcp:HOST:PORT`, `tcp:[IPv6]:PORT`,
 * `unix:/path`, and the WebSocket binding's `ws://HOST:PORT/path` and
 * `wss://HOST:PORT/path`. Pure: parsing and classification only, no I/O.
 *
 * SPEC 3 calls an address opaque to the protocol; these are the plain
 * bindings of SPEC 4.2, which the reference only allows on private networks
 * unless opted in (NOTES item 13), hence {@link isPrivateHost}.
 *
 * @module
 */

/** A parsed transport address. */
export type Address =
  | { kind: "tcp"; host: string; port: number }
  | { kind: "unix"; path: string }
  | WebSocketAddress;

/**
 * A `ws://` or `wss://` address: `secure` for wss (TLS). `port` is the
 * URL's port or the scheme's default (80, 443); `path` keeps the query.
 */
export interface WebSocketAddress {
  /** Always `ws`. */
  kind: "ws";
  /** True for wss (TLS). */
  secure: boolean;
  /** The host name or address. */
  host: string;
  /** The port (80 or 443 when the URL names none). */
  port: number;
  /** The path, with the query. */
  path: string;
}

/** A malformed address; the message is one line naming the problem. */
export class AddressError extends Error {
  /** The text that failed to parse. */
  readonly input: string;
  /**
   * The error for `input`, saying why it is not an address.
   *
   * @example
   * ```ts
   * import { AddressError } from "./address.ts";
   * const error = new AddressError("x", "unknown scheme");
   * console.assert(error.message.includes("unknown scheme"));
   * ```
   */
  constructor(input: string, reason: string) {
    super(`invalid address ${JSON.stringify(input)}: ${reason}`);
    this.name = "AddressError";
    this.input = input;
  }
}

const FORMS =
  "expected tcp:HOST:PORT, tcp:[IPv6]:PORT, unix:/path, ws://HOST:PORT/path or wss://HOST:PORT/path";

const HOST_NAME =
  /^(?=.{1,253}$)[A-Za-z0-9_]([A-Za-z0-9_-]*[A-Za-z0-9_])?(\.[A-Za-z0-9_]([A-Za-z0-9_-]*[A-Za-z0-9_])?)*\.?$/;

/**
 * Parses `tcp:HOST:PORT`, `tcp:[::1]:PORT` or `unix:/absolute/or/relative`.
 * Throws {@link AddressError} with one clear line otherwise. Port 0 is
 * accepted (listen on any free port).
 *
 * @example
 * ```ts
 * import { parseAddress } from "./address.ts";
 * const a = parseAddress("tcp:[::1]:7000");
 * console.assert(a.kind === "tcp" && a.host === "::1" && a.port === 7000);
 * ```
 */
export function parseAddress(text: string): Address {
  if (typeof text !== "string") {
    throw new AddressError(String(text), "not a string");
  }
  const colon = text.indexOf(":");
  if (colon < 0) {
    throw new AddressError(
      text,
      FORMS,
    );
  }
  const scheme = text.slice(0, colon);
  const rest = text.slice(colon + 1);
  if (scheme === "ws" || scheme === "wss") return parseWebSocketAddress(text);
  if (scheme === "unix") {
    if (rest === "") throw new AddressError(text, "empty unix socket path");
    if (rest.includes("\0")) {
      throw new AddressError(text, "unix socket path contains NUL");
    }
    return { kind: "unix", path: rest };
  }
  if (scheme === "tcp" && rest.startsWith("//")) {
    throw new AddressError(text, `did you mean tcp:${rest.slice(2)}?`);
  }
  if (scheme !== "tcp") {
    throw new AddressError(
      text,
      `unknown scheme ${JSON.stringify(scheme)}: ${FORMS}`,
    );
  }
  let host: string;
  let portText: string;
  if (rest.startsWith("[")) {
    const close = rest.indexOf("]");
    if (close < 0) throw new AddressError(text, "missing ] after IPv6 host");
    host = rest.slice(1, close);
    if (rest[close + 1] !== ":") {
      throw new AddressError(text, "expected :PORT after ]");
    }
    portText = rest.slice(close + 2);
    if (parseIpv6(host) === undefined) {
      throw new AddressError(text, `invalid IPv6 address ${host}`);
    }
  } else {
    const last = rest.lastIndexOf(":");
    if (last < 0) throw new AddressError(text, "missing :PORT");
    host = rest.slice(0, last);
    portText = rest.slice(last + 1);
    if (host.includes(":")) {
      throw new AddressError(text, "IPv6 hosts need brackets: tcp:[::1]:PORT");
    }
    if (host === "") throw new AddressError(text, "empty host");
    if (!HOST_NAME.test(host)) {
      throw new AddressError(text, `invalid host ${JSON.stringify(host)}`);
    }
    if (/^[0-9.]+$/.test(host) && parseIpv4(host) === undefined) {
      throw new AddressError(text, `invalid IPv4 address ${host}`);
    }
  }
  if (!/^[0-9]{1,5}$/.test(portText)) {
    throw new AddressError(
      text,
      `invalid port ${JSON.stringify(portText)}`,
    );
  }
  const port = Number(portText);
  if (port > 65535) throw new AddressError(text, `port ${port} out of range`);
  return { kind: "tcp", host, port };
}

/**
 * Formats an address back to text; the inverse of {@link parseAddress}.
 *
 * @example
 * ```ts
 * import { formatAddress } from "./address.ts";
 * console.assert(
 *   formatAddress({ kind: "tcp", host: "::1", port: 7 }) === "tcp:[::1]:7",
 * );
 * ```
 */
export function formatAddress(a: Address): string {
  if (a.kind === "unix") return `unix:${a.path}`;
  if (a.kind === "ws") return formatWebSocketAddress(a);
  const host = a.host.includes(":") ? `[${a.host}]` : a.host;
  return `tcp:${host}:${a.port}`;
}

/**
 * True when `host` is an IP literal on a private network or "localhost":
 * loopback (127/8, ::1), RFC 1918, IPv6 ULA fc00::/7, link-local
 * (169.254/16, fe80::/10), CGNAT 100.64/10, and IPv4-mapped forms of these.
 * Other host names are not private: their resolved address decides.
 *
 * @example
 * ```ts
 * import { isPrivateHost } from "./address.ts";
 * console.assert(isPrivateHost("10.1.2.3") && !isPrivateHost("8.8.8.8"));
 * ```
 */
export function isPrivateHost(host: string): boolean {
  let h = host.trim().toLowerCase();
  if (h.startsWith("[") && h.endsWith("]")) h = h.slice(1, -1);
  if (h.endsWith(".")) h = h.slice(0, -1);
  if (h === "localhost" || h.endsWith(".localhost")) return true;
  const v4 = parseIpv4(h);
  if (v4) return isPrivateIpv4(v4);
  const zone = h.indexOf("%"); // fe80::1%eth0
  const v6 = parseIpv6(zone >= 0 ? h.slice(0, zone) : h);
  if (!v6) return false;
  if (v6.slice(0, 7).every((x) => x === 0) && v6[7] === 1) return true; // ::1
  if ((v6[0] & 0xfe00) === 0xfc00) return true; // fc00::/7
  if ((v6[0] & 0xffc0) === 0xfe80) return true; // fe80::/10
  if (v6.slice(0, 5).every((x) => x === 0) && v6[5] === 0xffff) {
    // ::ffff:a.b.c.d carries an IPv4 address
    return isPrivateIpv4([v6[6] >> 8, v6[6] & 255, v6[7] >> 8, v6[7] & 255]);
  }
  return false;
}

function isPrivateIpv4([a, b]: number[]): boolean {
  return a === 127 || a === 10 ||
    (a === 172 && b >= 16 && b <= 31) ||
    (a === 192 && b === 168) ||
    (a === 169 && b === 254) ||
    (a === 100 && b >= 64 && b <= 127);
}

function parseIpv4(text: string): number[] | undefined {
  const parts = text.split(".");
  if (parts.length !== 4) return undefined;
  const out: number[] = [];
  for (const p of parts) {
    if (!/^[0-9]{1,3}$/.test(p)) return undefined;
    const n = Number(p);
    if (n > 255) return undefined;
    out.push(n);
  }
  return out;
}

/** Eight 16-bit groups, or undefined when not an IPv6 literal. */
function parseIpv6(text: string): number[] | undefined {
  if (!/^[0-9a-fA-F:.]+$/.test(text) || !text.includes(":")) return undefined;
  const halves = text.split("::");
  if (halves.length > 2) return undefined;
  const groups = (s: string): number[] | undefined => {
    if (s === "") return [];
    const out: number[] = [];
    const parts = s.split(":");
    for (let i = 0; i < parts.length; i++) {
      const p = parts[i];
      if (i === parts.length - 1 && p.includes(".")) {
        const v4 = parseIpv4(p);
        if (!v4) return undefined;
        out.push((v4[0] << 8) | v4[1], (v4[2] << 8) | v4[3]);
      } else if (/^[0-9a-fA-F]{1,4}$/.test(p)) {
        out.push(parseInt(p, 16));
      } else return undefined;
    }
    return out;
  };
  const head = groups(halves[0]);
  if (!head) return undefined;
  if (halves.length === 1) return head.length === 8 ? head : undefined;
  const tail = groups(halves[1]);
  if (!tail || head.length + tail.length > 7) return undefined;
  return [
    ...head,
    ...new Array(8 - head.length - tail.length).fill(0),
    ...tail,
  ];
}

/**
 * Parses `ws://HOST[:PORT][/path]` or `wss://...` with the WHATWG URL
 * parser; user info and fragments are refused (a token belongs in the
 * query or in hello, not in an address that is gossiped in hello.addr).
 */
function parseWebSocketAddress(text: string): WebSocketAddress {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new AddressError(text, "invalid WebSocket URL");
  }
  const secure = url.protocol === "wss:";
  if (!text.startsWith(secure ? "wss://" : "ws://")) {
    throw new AddressError(text, "expected ws://HOST:PORT/path");
  }
  if (url.username || url.password) {
    throw new AddressError(text, "user info is not allowed in an address");
  }
  if (url.hash) throw new AddressError(text, "fragments are not allowed");
  let host = url.hostname;
  if (host.startsWith("[")) host = host.slice(1, -1);
  if (host === "") throw new AddressError(text, "empty host");
  const port = url.port === "" ? (secure ? 443 : 80) : Number(url.port);
  return {
    kind: "ws",
    secure,
    host,
    port,
    path: url.pathname + url.search,
  };
}

function formatWebSocketAddress(a: WebSocketAddress): string {
  const host = a.host.includes(":") ? `[${a.host}]` : a.host;
  const fallback = a.secure ? 443 : 80;
  const port = a.port === fallback ? "" : `:${a.port}`;
  return `${a.secure ? "wss" : "ws"}://${host}${port}${a.path}`;
}

/**
 * The TCP port a short address without one means (what `awp` listens on
 * first).
 *
 * @example
 * ```ts
 * import { DEFAULT_PORT } from "./address.ts";
 * console.assert(DEFAULT_PORT === 7000);
 * ```
 */
export const DEFAULT_PORT = 7000;

/**
 * Reads the short forms people type for a TCP address and returns the full
 * `tcp:` text: `HOST:PORT`, `[IPv6]:PORT`, and without a port (meaning
 * {@link DEFAULT_PORT}) an IP literal, `[IPv6]`, `localhost` or a dotted
 * host name. Anything else (a peer's name, a key prefix, a `tcp:`/`unix:`
 * address) gives `undefined`. The result still goes through
 * {@link parseAddress}, which says what is wrong with, say, `10.0.0.300`.
 *
 * @example
 * ```ts
 * import { expandShortAddress } from "./address.ts";
 * console.assert(expandShortAddress("10.0.0.7") === "tcp:10.0.0.7:7000");
 * console.assert(expandShortAddress("build1.lan:7001") === "tcp:build1.lan:7001");
 * console.assert(expandShortAddress("[::1]") === "tcp:[::1]:7000");
 * console.assert(expandShortAddress("alice") === undefined);
 * ```
 */
export function expandShortAddress(text: string): string | undefined {
  const t = text.trim();
  if (/^[a-z]+:(?!\d+$)/i.test(t)) return undefined; // has a scheme
  const bracketed = t.match(/^\[([^\]]+)\](?::(\d+))?$/);
  if (bracketed) {
    return `tcp:[${bracketed[1]}]:${bracketed[2] ?? DEFAULT_PORT}`;
  }
  if (parseIpv6(t) !== undefined) return `tcp:[${t}]:${DEFAULT_PORT}`;
  if (/^[0-9.]+$/.test(t) && parseIpv4(t) === undefined) return undefined; // "3.14"
  const withPort = t.match(/^([^:\s/]+):(\d+)$/);
  if (withPort && HOST_NAME.test(withPort[1])) return `tcp:${t}`;
  if (
    HOST_NAME.test(t) &&
    (t.includes(".") || t.toLowerCase() === "localhost")
  ) return `tcp:${t}:${DEFAULT_PORT}`;
  return undefined;
}
