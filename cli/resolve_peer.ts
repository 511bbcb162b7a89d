/**
 * Names a peer: its announced name, an alias, a unique key prefix of at
 * least four characters, or an address.
 *
 * @module
 */

/** What {@link resolvePeer} needs to know of a peer. */
export interface NamedPeer {
  key: string;
  name?: string;
  alias?: string;
  addresses?: string[];
}

/** The peer could not be named: unknown or ambiguous. One line. */
export class PeerNameError extends Error {
  /**
   * @example
   * ```ts
   * import { PeerNameError } from "./resolve_peer.ts";
   * console.log(new PeerNameError('unknown peer "x"').name); // "PeerNameError"
   * ```
   */
  constructor(message: string) {
    super(message);
    this.name = "PeerNameError";
  }
}

/** The result: a known peer, or an address not yet met. */
export type ResolvedPeer =
  | { kind: "peer"; peer: NamedPeer }
  | { kind: "address"; address: string };

import { expandShortAddress } from "../wire/address.ts";
import { KEY_PREFIX } from "../wire/key_text.ts";
import { shortKey } from "./person_text.ts";

function isAddress(text: string): boolean {
  return /^(tcp|unix|wss?):/.test(text);
}

function one(
  query: string,
  matches: NamedPeer[],
  what: string,
): NamedPeer | undefined {
  if (matches.length === 1) return matches[0];
  if (matches.length > 1) {
    const prefix = (p: NamedPeer) => shortKey(p.key);
    const list = matches.map((p) =>
      p.name ? `${p.name} (${prefix(p)})` : prefix(p)
    ).join(", ");
    throw new PeerNameError(
      `ambiguous peer "${query}": ${what} matches ${list}; name one by its key prefix, ` +
        `or give it an alias (awp alias ${prefix(matches[0])} NAME)`,
    );
  }
  return undefined;
}

/**
 * Finds the one peer `query` names among `peers`, in order: full key,
 * alias, announced name, address (`HOST:PORT` or a bare host are read as
 * `tcp:`, port 7000 by default), key prefix (with or without `ed25519:`,
 * at least 4 characters). An address that no known peer has is returned as
 * an address. Throws {@link PeerNameError} when unknown or ambiguous.
 *
 * @example
 * ```ts
 * import { resolvePeer } from "./resolve_peer.ts";
 * const peers = [{ key: "ed25519:AbCdEf", name: "builder" }];
 * console.log(resolvePeer("AbCd", peers)); // { kind: "peer", peer: { key: "ed25519:AbCdEf", name: "builder" } }
 * console.log(resolvePeer("tcp:127.0.0.1:7000", peers)); // { kind: "address", address: "tcp:127.0.0.1:7000" }
 * ```
 */
export function resolvePeer(
  query: string,
  peers: readonly NamedPeer[],
): ResolvedPeer {
  const q = query.trim();
  if (q === "") throw new PeerNameError("empty peer name");
  const exact = peers.find((p) => p.key === q);
  if (exact) return { kind: "peer", peer: exact };
  const byAlias = one(q, peers.filter((p) => p.alias === q), "alias");
  if (byAlias) return { kind: "peer", peer: byAlias };
  const byName = one(q, peers.filter((p) => p.name === q), "name");
  if (byName) return { kind: "peer", peer: byName };
  // `10.0.0.7` and `host:7001` are read as tcp: addresses (port 7000 by default).
  const address = isAddress(q) ? q : expandShortAddress(q);
  if (address !== undefined) {
    const byAddr = one(
      q,
      peers.filter((p) => p.addresses?.includes(address)),
      "address",
    );
    return byAddr
      ? { kind: "peer", peer: byAddr }
      : { kind: "address", address };
  }
  const bare = q.startsWith(KEY_PREFIX) ? q.slice(KEY_PREFIX.length) : q;
  if (bare.length < 4) {
    throw new PeerNameError(
      `unknown peer "${query}" (a key prefix needs at least 4 characters)`,
    );
  }
  const byPrefix = one(
    q,
    peers.filter((p) => p.key.slice(KEY_PREFIX.length).startsWith(bare)),
    "key prefix",
  );
  if (byPrefix) return { kind: "peer", peer: byPrefix };
  throw new PeerNameError(
    `unknown peer "${query}": not a known name, alias, key prefix or address`,
  );
}
