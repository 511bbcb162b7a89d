/**
 * {@link SeenIndex}: the `seen` records of the peers a store resumed with
 * lately, in memory, so a handshake's `resume` costs no KV list (every
 * handshake sends one; a KV list was the listener's largest storage cost
 * per handshake).
 *
 * It holds only what KV holds: a peer's records enter from a KV list that
 * no commit of `seen` records overlapped, and then follow every commit that
 * resolved (`changed`); a commit that fails drops the peers it wrote (KV
 * may hold either value), so their next read lists KV again.
 *
 * @module
 */

import type { Mutation } from "./kv/key.ts";

/** Peers kept at most (the least recently read goes first). */
const MAX_PEERS = 1_000;
/** A peer with more threads than this is listed from KV each time. */
const MAX_THREADS = 4_096;

const utf8 = new TextDecoder();

/** A thread's stored `seen` record, or its bytes as a commit wrote them. */
type Stored = { th?: string; id?: string } | Uint8Array;

/**
 * Per peer (its key as stored, `keyText`), per thread key: the `seen`
 * record. Told about every commit of the store's committer.
 *
 * @example
 * ```ts
 * import { SeenIndex } from "./seen_index.ts";
 * const index = new SeenIndex();
 * const load = () => Promise.resolve(new Map([["t1", { th: "t1", id: "01" }]]));
 * console.log(await index.seen("p", load)); // { t1: "01" }
 * index.changed([{ key: ["seen", "p", "t1"], value: new TextEncoder().encode('{"th":"t1","id":"02"}') }], true);
 * console.log(await index.seen("p", load)); // { t1: "02" }
 * ```
 */
export class SeenIndex {
  #peers = new Map<string, Map<string, Stored>>();
  /** Moves on with every commit that touched `seen` records. */
  #generation = 0;

  /**
   * Per thread, the last content id received from peer `pk`: from memory,
   * or from `load` (a KV list of its `seen` records, by thread key).
   */
  async seen(
    pk: string,
    load: () => Promise<Map<string, { th?: string; id?: string }>>,
  ): Promise<Record<string, string>> {
    let records = this.#peers.get(pk);
    if (records) {
      // Most recently read last.
      this.#peers.delete(pk);
      this.#peers.set(pk, records);
    } else {
      const generation = this.#generation;
      const listed = await load();
      if (generation === this.#generation && listed.size <= MAX_THREADS) {
        records = listed;
        if (this.#peers.size >= MAX_PEERS) {
          this.#peers.delete(this.#peers.keys().next().value!);
        }
        this.#peers.set(pk, records);
      } else {
        return seenOf(listed);
      }
    }
    return seenOf(records);
  }

  /**
   * A commit of `mutations` resolved (`ok`) or failed: kept peers take its
   * `seen` values, or are dropped when it failed.
   */
  changed(mutations: Iterable<Mutation>, ok: boolean): void {
    let touched = false;
    for (const { key, value } of mutations) {
      if (key[0] !== "seen") continue;
      touched = true;
      const records = this.#peers.get(key[1] as string);
      if (!records) continue;
      if (!ok || key.length !== 3 || typeof value === "number") {
        // Failed, or a record split in parts: read KV next time.
        this.#peers.delete(key[1] as string);
      } else if (value === undefined) {
        records.delete(key[2] as string);
      } else if (value instanceof Uint8Array) {
        records.set(key[2] as string, value);
        if (records.size > MAX_THREADS) this.#peers.delete(key[1] as string);
      } else {
        this.#peers.delete(key[1] as string); // not a stored record
      }
    }
    if (touched) this.#generation++;
  }
}

function seenOf(records: Map<string, Stored>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const stored of records.values()) {
    const s = stored instanceof Uint8Array
      ? JSON.parse(utf8.decode(stored)) as { th?: string; id?: string }
      : stored;
    if (s.th !== undefined && s.id !== undefined) out[s.th] = s.id;
  }
  return out;
}
