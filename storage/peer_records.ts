/**
 * {@link PeerRecords}: one {@link PeerRecord} per known peer at
 * `["peer", pk]`, served from memory after the first read (every handshake
 * reads its peer's record) and kept in step by this store's writes.
 *
 * @module
 */

import type { GroupCommitter } from "./kv/group_committer.ts";
import { type Key, keyText } from "./kv/key.ts";
import { ReadCache } from "./read_cache.ts";
import { requireText } from "./require_text.ts";
import type { PeerRecord } from "./store.ts";

/**
 * The peer records of a store.
 *
 * @example
 * ```ts ignore
 * const peers = new PeerRecords(committer);
 * await peers.put({ key, addresses: [], firstSeen: 0, lastSeen: 0 });
 * console.log((await peers.get(key))?.key === key); // true
 * ```
 */
export class PeerRecords {
  #c: GroupCommitter;
  #cache = new ReadCache<string, PeerRecord | undefined>();

  /** The records written through `committer`. */
  constructor(committer: GroupCommitter) {
    this.#c = committer;
  }

  /** Every known peer. */
  list(): Promise<PeerRecord[]> {
    return this.#c.collect<PeerRecord>(["peer"], 2);
  }

  /** The record of the peer with this key, or undefined. */
  get(key: string): Promise<PeerRecord | undefined> {
    const k = keyText(key);
    return this.#cache.read(k, () => this.#c.read<PeerRecord>(["peer", k]));
  }

  /** Stores a peer record, replacing the previous one. */
  put(record: PeerRecord): Promise<void> {
    try {
      requireText(record?.key, "putPeer: key");
    } catch (error) {
      return Promise.reject(error);
    }
    const k = keyText(record.key);
    return this.#cache.write(k, () => this.#c.put(["peer", k], record));
  }

  /** Reads and replaces a peer record in one step of the committer. */
  update(
    key: string,
    update: (known: PeerRecord | undefined) => PeerRecord,
  ): Promise<PeerRecord> {
    const k: Key = ["peer", keyText(key)];
    return this.#cache.write(
      k[1] as string,
      () =>
        this.#c.submit(false, async (tx) => {
          const record = update(await tx.getRecord<PeerRecord>(k));
          requireText(record?.key, "updatePeer: key");
          await tx.putRecord(k, record);
          return record;
        }, [k]),
    );
  }
}
