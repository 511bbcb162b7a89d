/**
 * What a remote said about itself in its hello (and presented in its auth),
 * as a connection keeps it once the hello passed the chart's checks.
 *
 * @module
 */

import type { Grant, Hello } from "../wire/types.ts";

/** What the peer said about itself in hello (and presented in auth). */
export interface RemoteHello {
  /** The peer's key (`ed25519:...`), verified by its auth. */
  key: string;
  /** The name the peer gave in hello. */
  name?: string;
  /** Capabilities the peer announced in hello. */
  caps: string[];
  /** The peer's self-description from hello. */
  about?: string;
  /** The address the peer says it can be reached at (NOTES item 6). */
  addr?: string;
  /** The nonce from the peer's hello. */
  nonce: string;
  /** Grants presented in auth (unverified: the caller decides). */
  grants: Grant[];
}

/**
 * The {@link RemoteHello} of a checked hello line (grants come with auth).
 *
 * @example
 * ```ts
 * import { remoteHelloOf } from "./remote_hello.ts";
 * const remote = remoteHelloOf({
 *   t: "hello", id: "01", ts: "2026-01-01T00:00:00.000Z", v: 0,
 *   key: "ed25519:AAAA", nonce: "n", caps: ["chat"], name: "bob",
 * });
 * console.log(remote.name, remote.grants.length); // "bob" 0
 * ```
 */
export function remoteHelloOf(m: Hello): RemoteHello {
  return {
    key: m.key,
    caps: Array.isArray(m.caps)
      ? m.caps.filter((c): c is string => typeof c === "string")
      : [],
    nonce: m.nonce,
    grants: [],
    ...(typeof m.name === "string" ? { name: m.name } : {}),
    ...(typeof m.about === "string" ? { about: m.about } : {}),
    ...(typeof m.addr === "string" ? { addr: m.addr } : {}),
  };
}
