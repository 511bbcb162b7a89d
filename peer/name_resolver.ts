/**
 * {@link NameResolver}: how a peer named by the user (a key, an alias, a
 * name, or a unique key prefix) becomes its key.
 *
 * @module
 */

import type { Store } from "../storage/store.ts";
import { isKey, KEY_PREFIX } from "../wire/keys.ts";

/**
 * Resolves the `to` of an API call to a key, from the known peers in the
 * store and the keys connected now.
 *
 * @example
 * ```ts
 * import { NameResolver } from "./name_resolver.ts";
 * import { openStore } from "../storage/open_store.ts";
 * const store = await openStore({ memory: true });
 * const key = "ed25519:" + "A".repeat(43);
 * await store.putPeer({ key, name: "bob", addresses: [], firstSeen: 0, lastSeen: 0 });
 * const names = new NameResolver(store, () => []);
 * console.log((await names.resolve("bob")) === key); // true
 * store.close();
 * ```
 */
export class NameResolver {
  #store: Store;
  #connected: () => string[];
  /** The last `to` found to be a well-formed key. */
  #lastKey: string | undefined;

  /** Looks names up in `store`; prefixes also match the `connected` keys. */
  constructor(store: Store, connected: () => string[]) {
    this.#store = store;
    this.#connected = connected;
  }

  /**
   * `to` when it is a well-formed key (no lookup needed), else undefined:
   * the synchronous case of {@link resolve}.
   */
  known(to: string): string | undefined {
    if (to === this.#lastKey) return to;
    if (typeof to !== "string" || !isKey(to)) return undefined;
    this.#lastKey = to;
    return to;
  }

  /** Resolves `to` to a key: key, alias, name, or unique key prefix. */
  async resolve(to: string): Promise<string> {
    if (typeof to !== "string" || to === "") {
      throw new TypeError(
        "peer: give a key, a unique key prefix (4+ chars), a name or an alias",
      );
    }
    // A burst names the same key each time: check its form once.
    if (to === this.#lastKey) return to;
    if (isKey(to)) {
      this.#lastKey = to;
      return to;
    }
    const records = await this.#store.peers();
    const byAlias = records.filter((p) => p.alias === to);
    if (byAlias.length === 1) return byAlias[0].key;
    const byName = records.filter((p) => p.name === to);
    if (byName.length === 1) return byName[0].key;
    if (byName.length > 1) {
      throw new Error(
        `peer "${to}" is ambiguous: ${byName.length} peers have that name; use a key`,
      );
    }
    if (to.length >= 4) {
      const keys = new Set([
        ...records.map((p) => p.key),
        ...this.#connected(),
      ]);
      const hits = [...keys].filter((k) =>
        k.startsWith(to) || k.slice(KEY_PREFIX.length).startsWith(to)
      );
      if (hits.length === 1) return hits[0];
      if (hits.length > 1) {
        throw new Error(
          `peer "${to}" is ambiguous: ${hits.length} keys start with it`,
        );
      }
    }
    throw new Error(
      `unknown peer "${to}": give a key, a unique key prefix (4+ chars), a name or an alias`,
    );
  }
}
