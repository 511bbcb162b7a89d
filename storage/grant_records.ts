/**
 * {@link GrantRecords}: the grants we issued, hold or were shown, at
 * `["grant", kind, hash]`, and revocations at `["revoked", hash]`. Every
 * handshake checks them, so both are served from memory after the first
 * read and kept in step by this store's writes.
 *
 * @module
 */

import type { GroupCommitter } from "./kv/group_committer.ts";
import { type Key, keyText } from "./kv/key.ts";
import { ReadCache } from "./read_cache.ts";
import { requireText } from "./require_text.ts";
import type { GrantKind, GrantRecord } from "./store.ts";

/**
 * The grant records and revocations of a store.
 *
 * @example
 * ```ts ignore
 * const grants = new GrantRecords(committer);
 * await grants.revoke(hash);
 * console.log(await grants.isRevoked(hash)); // true
 * ```
 */
export class GrantRecords {
  #c: GroupCommitter;
  #grantCache = new ReadCache<"all", GrantRecord[]>();
  #revokedCache = new ReadCache<string, boolean>();

  /** The records written through `committer`. */
  constructor(committer: GroupCommitter) {
    this.#c = committer;
  }

  /** Stores a grant under its hash. */
  put(record: GrantRecord): Promise<void> {
    try {
      if (!["issued", "held", "presented"].includes(record?.kind)) {
        throw new TypeError(`putGrant: kind must be issued, held or presented`);
      }
      requireText(record.hash, "putGrant: hash");
    } catch (error) {
      return Promise.reject(error);
    }
    return this.#grantCache.write(
      "all",
      () => this.#c.put(["grant", record.kind, keyText(record.hash)], record),
    );
  }

  /** Stored grants, optionally of one kind. */
  async list(kind?: GrantKind): Promise<GrantRecord[]> {
    const all = await this.#grantCache.read(
      "all",
      () => this.#c.collect<GrantRecord>(["grant"], 3),
    );
    // Listed by key, so one kind's records keep their order.
    return kind === undefined ? all : all.filter((r) => r.kind === kind);
  }

  /** Marks the grant with this hash as revoked. */
  revoke(hash: string): Promise<void> {
    const key: Key = ["revoked", keyText(requireText(hash, "revoke: hash"))];
    return this.#revokedCache.write(
      key[1] as string,
      () => this.#c.submit(false, (tx) => tx.set(key, Date.now())),
    );
  }

  /** Whether the grant with this hash was revoked. */
  async isRevoked(hash: string): Promise<boolean> {
    const k = keyText(hash);
    return await this.#revokedCache.read(
      k,
      async () => (await this.#c.backend.get(["revoked", k])) !== undefined,
    );
  }
}
