/**
 * The in-memory index of a store's outbox: what the outbox's `acked`,
 * `replay`, `dropBlob` and `expireOutbox` need to know about each entry
 * without reading Deno KV. It is rebuilt from the `["ob", pk, id]` records
 * when the store opens, and kept in step with every enqueue and drop, so an
 * entry costs one KV row and an ack one delete.
 *
 * @module
 */

/** What the index keeps of one outbox entry. */
export interface OutboxMeta {
  /** The entry's id. */
  id: string;
  /** The line's type. */
  t: string;
  /** The thread key (see `threadKey` in kv/key.ts), or null when unthreaded. */
  tk: string | null;
  /** Time the entry was queued, ms since the epoch. */
  q: number;
  /** Number of parts its record was split into (0: stored inline). */
  n: number;
  /** For a chunk: the blob's ref. */
  ref?: string;
}

/** Lines acked cumulatively: a later ack in their thread drops them. */
const ACKED_ITSELF: ReadonlySet<string> = new Set(["msg", "state"]);
/** Outboxed lines the remote never acks (err: forbidden answers): a later ack to the peer drops them. */
const NEVER_ACKED: ReadonlySet<string> = new Set([
  "grant",
  "introduce",
  "err",
]);

/** One peer's entries, in id order. */
class PeerOutbox {
  readonly entries: Map<string, OutboxMeta> = new Map();
  /** Per thread key: ids of threaded entries other than msg/state, ascending. */
  readonly cumulative: Map<string, string[]> = new Map();
  /** Ids of grant, introduce and err entries, ascending. */
  readonly neverAcked: string[] = [];
}

/**
 * The outbox index of every peer.
 *
 * @example
 * ```ts
 * import { OutboxIndex } from "./outbox_index.ts";
 * const index = new OutboxIndex();
 * index.add("pk", { id: "01", t: "chunk", tk: "t1", q: 0, n: 0 });
 * index.add("pk", { id: "02", t: "msg", tk: "t1", q: 0, n: 0 });
 * console.log(index.ackDrops("pk", "02").map((m) => m.id)); // ["02", "01"]
 * ```
 */
export class OutboxIndex {
  #peers: Map<string, PeerOutbox> = new Map();

  /** Adds an entry; ids must arrive in increasing order per peer. */
  add(pk: string, meta: OutboxMeta): void {
    let p = this.#peers.get(pk);
    if (!p) this.#peers.set(pk, p = new PeerOutbox());
    p.entries.set(meta.id, meta);
    if (meta.tk !== null && !ACKED_ITSELF.has(meta.t)) {
      let list = p.cumulative.get(meta.tk);
      if (!list) p.cumulative.set(meta.tk, list = []);
      list.push(meta.id);
    }
    if (NEVER_ACKED.has(meta.t)) p.neverAcked.push(meta.id);
  }

  /** The entry `id` of `pk`, if in the outbox. */
  get(pk: string, id: string): OutboxMeta | undefined {
    return this.#peers.get(pk)?.entries.get(id);
  }

  /** Every entry of `pk`, in id order. */
  list(pk: string): OutboxMeta[] {
    return [...this.#peers.get(pk)?.entries.values() ?? []];
  }

  /** How many entries `pk` has. */
  size(pk: string): number {
    return this.#peers.get(pk)?.entries.size ?? 0;
  }

  /** Every peer key with entries. */
  peers(): string[] {
    return [...this.#peers.keys()];
  }

  /** Removes one entry; true when it was there. */
  remove(pk: string, id: string): boolean {
    const p = this.#peers.get(pk);
    const meta = p?.entries.get(id);
    if (!p || !meta) return false;
    p.entries.delete(id);
    if (meta.tk !== null && !ACKED_ITSELF.has(meta.t)) {
      const list = p.cumulative.get(meta.tk);
      if (list) {
        removeSorted(list, id);
        if (list.length === 0) p.cumulative.delete(meta.tk);
      }
    }
    if (NEVER_ACKED.has(meta.t)) removeSorted(p.neverAcked, id);
    if (p.entries.size === 0) this.#peers.delete(pk);
    return true;
  }

  /**
   * Removes and returns what an ack of `id` drops: the entry itself (first,
   * when present), the earlier entries other than msg/state in its thread,
   * and the earlier grant and introduce entries of the peer in any thread.
   * An id not in the outbox (acked before) drops nothing.
   */
  ackDrops(pk: string, id: string): OutboxMeta[] {
    const p = this.#peers.get(pk);
    const self = p?.entries.get(id);
    if (!p || !self) return [];
    const out: OutboxMeta[] = [self];
    const thread = self.tk;
    if (thread !== null) {
      for (const earlier of below(p.cumulative.get(thread), id)) {
        const m = p.entries.get(earlier);
        if (m) out.push(m);
      }
    }
    for (const earlier of below(p.neverAcked, id)) {
      const m = p.entries.get(earlier);
      if (m && !out.includes(m)) out.push(m);
    }
    for (const m of out) this.remove(pk, m.id);
    return out;
  }
}

/** The ids of an ascending list that are below `id` (a copy). */
function below(list: string[] | undefined, id: string): string[] {
  if (!list) return [];
  let end = 0;
  while (end < list.length && list[end] < id) end++;
  return list.slice(0, end);
}

/** Removes `id` from an ascending list (usually at its front). */
function removeSorted(list: string[], id: string): void {
  const i = list[0] === id ? 0 : list.indexOf(id);
  if (i >= 0) list.splice(i, 1);
}
