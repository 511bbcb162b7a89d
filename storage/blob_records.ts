/**
 * {@link BlobRecords}: one {@link BlobRecord} per blob transfer, in either
 * direction, at `["blob", pk, dir, ref]` (a received blob's record also
 * commits with its chunks' seen markers, see `ReceivedLines`).
 *
 * @module
 */

import type { GroupCommitter } from "./kv/group_committer.ts";
import { type Key, keyText } from "./kv/key.ts";
import { requireText } from "./require_text.ts";
import type { BlobRecord, Direction } from "./store.ts";

/**
 * Where a blob transfer record is stored.
 *
 * @example
 * ```ts
 * import { blobKey } from "./blob_records.ts";
 * console.log(blobKey({ peer: "p", dir: "in", ref: "r" })); // ["blob", "p", "in", "r"]
 * ```
 */
export function blobKey(
  record: Pick<BlobRecord, "peer" | "dir" | "ref">,
): Key {
  return ["blob", keyText(record.peer), record.dir, keyText(record.ref)];
}

/**
 * The blob transfer records of a store.
 *
 * @example
 * ```ts ignore
 * const blobs = new BlobRecords(committer);
 * await blobs.put(record);
 * console.log((await blobs.get(record.peer, record.ref, record.dir))?.size);
 * ```
 */
export class BlobRecords {
  #c: GroupCommitter;

  /** The records written through `committer`. */
  constructor(committer: GroupCommitter) {
    this.#c = committer;
  }

  /** Stores a blob transfer record, replacing the previous one. */
  put(record: BlobRecord): Promise<void> {
    try {
      requireText(record?.peer, "putBlob: peer");
      requireText(record.ref, "putBlob: ref");
      if (record.dir !== "in" && record.dir !== "out") {
        throw new TypeError(`putBlob: dir must be "in" or "out"`);
      }
    } catch (error) {
      return Promise.reject(error);
    }
    return this.#c.put(blobKey(record), record);
  }

  /** The transfer record of `ref` with `peer` in direction `dir`. */
  get(
    peer: string,
    ref: string,
    dir: Direction,
  ): Promise<BlobRecord | undefined> {
    return this.#c.read<BlobRecord>(blobKey({ peer, dir, ref }));
  }

  /** Blob transfer records, optionally for one peer. */
  list(peer?: string): Promise<BlobRecord[]> {
    return this.#c.collect<BlobRecord>(
      peer === undefined ? ["blob"] : ["blob", keyText(peer)],
      4,
    );
  }
}
