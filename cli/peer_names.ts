/**
 * Peers by the names people use: a name, alias, key prefix or address
 * resolved to a known key (`PEER` in every command), a thread to the one
 * peer it is with, and a key to the name shown beside it (cached until
 * the peer reconnects or is renamed).
 *
 * @module
 */

import type { Peer } from "../peer/peer.ts";
import { AddressError, parseAddress } from "../wire/address.ts";
import { ControlError } from "./control.ts";
import { usage } from "./control_args.ts";
import { PeerNameError, resolvePeer } from "./resolve_peer.ts";

/**
 * Names and keys of the peers one {@link Peer} knows.
 *
 * @example
 * ```ts ignore
 * import { PeerNames } from "./peer_names.ts";
 * const names = new PeerNames(peer);
 * console.log(await names.nameOf(await names.key("ana")));
 * ```
 */
export class PeerNames {
  readonly #peer: Peer;
  readonly #byKey = new Map<string, string | undefined>();

  constructor(peer: Peer) {
    this.#peer = peer;
  }

  /** The alias or announced name of `key`, remembered. */
  async nameOf(key: string): Promise<string | undefined> {
    if (!this.#byKey.has(key)) {
      const rec = await this.#peer.store.peer(key);
      this.#byKey.set(key, rec?.alias ?? rec?.name);
    }
    return this.#byKey.get(key);
  }

  /** Resolves a peer name to a known key (addresses included). */
  async key(query: string): Promise<string> {
    if (query === "") throw usage("missing peer");
    const records = await this.#peer.peers();
    try {
      const r = resolvePeer(query, records);
      if (r.kind === "peer") return r.peer.key;
      parseAddress(r.address);
      throw new ControlError(
        `no known peer at ${r.address}: run awp connect ${r.address} first`,
      );
    } catch (error) {
      if (error instanceof PeerNameError || error instanceof AddressError) {
        throw new ControlError(error.message);
      }
      throw error;
    }
  }

  /** The one peer that has thread `th`. */
  async threadPeer(th: string): Promise<string> {
    const matches = (await this.#peer.threads()).filter((t) => t.th === th);
    if (matches.length === 1) return matches[0].peer;
    if (matches.length === 0) {
      throw new ControlError(`unknown thread "${th}": name the peer too`);
    }
    throw new ControlError(
      `thread "${th}" exists with ${matches.length} peers: name the peer too`,
    );
  }

  /** Forgets the cached name of `key` (it reconnected or was renamed). */
  forget(key: string): void {
    this.#byKey.delete(key);
  }
}
