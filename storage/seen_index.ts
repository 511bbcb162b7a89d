/**
 * {@link SeenIndex}: the received-side markers (`seen`, in the thread rows
 * `["thr", pk, tk]`) of the peers a store resumed with lately, in memory,
 * so a handshake's `resume` costs no KV list (every handshake sends one; a
 * KV list was the listener's largest storage cost per handshake).
 *
 * It holds only what KV holds: a peer's rows enter from a KV list that no
 * commit of thread rows overlapped, and then follow every commit that
 * resolved (`changed`); a commit that fails drops the peers it wrote (KV
 * may hold either value), so their next read lists KV again. A row is
 * kept as stored (listed bytes, or as a commit wrote it) and decoded only
 * when the peer is read; so a resume can hand a peer's rows to the
 * committer's cache ({@link SeenIndex.rows}, `ReceivedLines.seen`).
 *
 * @module
 */

import type { Mutation } from "./kv/key.ts";
import { RecordText } from "./kv/record_text.ts";

/** Threads kept at most, over all peers (the least recently read peer goes first). */
const MAX_THREADS = 16_384;
/** A peer with more threads than this is listed from KV each time. */
const MAX_PEER_THREADS = 4_096;

const utf8 = new TextDecoder();

/** A thread row's marker, as far as resume needs it. */
interface Marker {
  seen?: { th?: string; id?: string };
}

/**
 * A thread's row as stored (its bytes as listed from KV, or as a commit
 * wrote them), or only its marker (a row listed from parts).
 */
export type StoredRow = Marker | Uint8Array | RecordText;
type Stored = StoredRow;

/**
 * Per peer (its key as stored, `keyText`), per thread key: the thread
 * row's marker. Told about every commit of the store's committer.
 *
 * @example
 * ```ts
 * import { SeenIndex } from "./seen_index.ts";
 * const index = new SeenIndex();
 * const load = () => Promise.resolve(new Map([["t1", { seen: { th: "t1", id: "01" } }]]));
 * console.log(await index.seen("p", load)); // { t1: "01" }
 * index.changed([{ key: ["thr", "p", "t1"], value: new TextEncoder().encode('{"seen":{"th":"t1","id":"02"}}') }], true);
 * console.log(await index.seen("p", load)); // { t1: "02" }
 * ```
 */
export class SeenIndex {
  #peers = new Map<string, Map<string, Stored>>();
  /** Threads kept, over all peers. */
  #threads = 0;
  /** Moves on with every commit that touched thread rows. */
  #generation = 0;

  /**
   * Per thread, the last content id received from peer `pk`: from memory,
   * or from `load` (a KV list of its thread rows' markers, by thread key).
   */
  async seen(
    pk: string,
    load: () => Promise<Map<string, StoredRow>>,
  ): Promise<Record<string, string>> {
    let records = this.#peers.get(pk);
    if (records) {
      // Most recently read last.
      this.#peers.delete(pk);
      this.#peers.set(pk, records);
    } else {
      const generation = this.#generation;
      const listed = await load();
      if (generation === this.#generation && listed.size <= MAX_PEER_THREADS) {
        records = listed;
        this.#drop(pk); // a read that overlapped this one kept it first
        this.#peers.set(pk, records);
        this.#threads += records.size;
        this.#bound();
      } else {
        return seenOf(listed);
      }
    }
    return seenOf(records);
  }

  /**
   * Every thread row of peer `pk` as KV holds it now (head values by
   * thread key), when the peer is kept and each row as stored (none listed
   * from parts); else undefined. Current as of the last commit told to
   * {@link changed}.
   */
  rows(pk: string): ReadonlyMap<string, Uint8Array | RecordText> | undefined {
    const records = this.#peers.get(pk);
    if (!records) return undefined;
    for (const stored of records.values()) {
      if (!(stored instanceof Uint8Array || stored instanceof RecordText)) {
        return undefined;
      }
    }
    return records as ReadonlyMap<string, Uint8Array | RecordText>;
  }

  /**
   * A commit of `mutations` resolved (`ok`) or failed: kept peers take its
   * thread rows, or are dropped when it failed.
   */
  changed(mutations: Iterable<Mutation>, ok: boolean): void {
    let touched = false;
    for (const { key, value } of mutations) {
      if (key[0] !== "thr") continue;
      touched = true;
      const pk = key[1] as string;
      const records = this.#peers.get(pk);
      if (!records) continue;
      const before = records.size;
      if (!ok || key.length !== 3 || typeof value === "number") {
        // Failed, or a record split in parts: read KV next time.
        this.#drop(pk);
        continue;
      } else if (value === undefined) {
        records.delete(key[2] as string);
      } else if (value instanceof Uint8Array || value instanceof RecordText) {
        records.set(key[2] as string, value);
      } else {
        this.#drop(pk); // not a stored record
        continue;
      }
      this.#threads += records.size - before;
      if (records.size > MAX_PEER_THREADS) this.#drop(pk);
    }
    if (touched) {
      this.#generation++;
      this.#bound();
    }
  }

  #drop(pk: string): void {
    this.#threads -= this.#peers.get(pk)?.size ?? 0;
    this.#peers.delete(pk);
  }

  /** Drops the least recently read peers while over {@link MAX_THREADS}. */
  #bound(): void {
    while (this.#threads > MAX_THREADS && this.#peers.size > 0) {
      this.#drop(this.#peers.keys().next().value!);
    }
  }
}

function seenOf(records: Map<string, Stored>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const stored of records.values()) {
    const s = (stored instanceof Uint8Array
      ? JSON.parse(utf8.decode(stored)) as Marker
      : stored instanceof RecordText
      ? stored.decode() as Marker
      : stored).seen;
    if (s?.th !== undefined && s.id !== undefined) {
      out[s.th] = s.id;
    }
  }
  return out;
}
