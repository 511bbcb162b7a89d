/**
 * {@link RequestJournal}: the profile requests this peer answers, one
 * {@link RequestRecord} per request part at `["req", pk, re, part]`, from
 * receipt to answer, so an acked request is answered exactly once across
 * crashes.
 *
 * @module
 */

import type { GroupCommitter } from "./kv/group_committer.ts";
import { type Key, keyText } from "./kv/key.ts";
import { requireText } from "./require_text.ts";
import type { RequestRecord } from "./store.ts";

/** The key of a request journal record. */
function requestKey(peer: string, re: string, part: number): Key {
  return ["req", keyText(peer), keyText(re), part];
}

/**
 * The request journal of a store.
 *
 * @example
 * ```ts ignore
 * const journal = new RequestJournal(committer);
 * await journal.put(record);
 * console.log((await journal.list()).length); // 1
 * ```
 */
export class RequestJournal {
  #c: GroupCommitter;

  /** The journal written through `committer`. */
  constructor(committer: GroupCommitter) {
    this.#c = committer;
  }

  /** Stores a request journal record, replacing the previous one. */
  put(record: RequestRecord): Promise<void> {
    try {
      requireText(record?.peer, "putRequest: peer");
      requireText(record.re, "putRequest: re");
    } catch (error) {
      return Promise.reject(error);
    }
    return this.#c.put(requestKey(record.peer, record.re, record.part), record);
  }

  /** The journal record of part `part` of msg `re` from `peer`. */
  get(
    peer: string,
    re: string,
    part: number,
  ): Promise<RequestRecord | undefined> {
    return this.#c.read<RequestRecord>(requestKey(peer, re, part));
  }

  /** Every request journal record. */
  list(): Promise<RequestRecord[]> {
    return this.#c.collect<RequestRecord>(["req"], 4);
  }

  /** Removes a request journal record. */
  drop(peer: string, re: string, part: number): Promise<void> {
    const key = requestKey(peer, re, part);
    return this.#c.submit(false, (tx) => tx.deleteRecord(key));
  }
}
