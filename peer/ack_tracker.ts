/**
 * {@link AckTracker}: acks of the lines we sent. `waitAck` waits here, and
 * each ack becomes an `acked` event.
 *
 * @module
 */

import type { PeerEvent } from "./peer_events.ts";
import type { Store } from "../storage/store.ts";
import { timestamp } from "../wire/time.ts";

/** How many acked ids, and sent ids' peers, are kept in memory. */
const ACKED_MEMORY = 10_000;

/**
 * Which of our lines were acked, and who waits for which.
 *
 * @example
 * ```ts
 * import { AckTracker } from "./ack_tracker.ts";
 * import { openStore } from "../storage/open_store.ts";
 * const store = await openStore({ memory: true });
 * const acks = new AckTracker(store, (e) => console.log(e.type));
 * acks.noteAck("ed25519:x", "01", "t1"); // "acked"
 * await acks.waitAck("01"); // at once
 * store.close();
 * ```
 */
export class AckTracker {
  #store: Store;
  #emit: (event: PeerEvent) => void;
  #acked = new Set<string>();
  #ackWaiters = new Map<string, Set<() => void>>();
  #sentTo = new Map<string, string>();

  /** Reads the outbox in `store`; `acked` events go to `emit`. */
  constructor(store: Store, emit: (event: PeerEvent) => void) {
    this.#store = store;
    this.#emit = emit;
  }

  /**
   * Resolves when the line `id` has been acked; rejects after `timeoutMs`
   * (default 30 s) with one line. An id no longer in the outbox (acked
   * before, e.g. in an earlier run) resolves at once.
   */
  async waitAck(
    id: string,
    options: { timeoutMs?: number } = {},
  ): Promise<void> {
    if (this.#acked.has(id)) return;
    const timeoutMs = options.timeoutMs ?? 30_000;
    let resolve!: () => void;
    const done = new Promise<void>((r) => resolve = r);
    let waiters = this.#ackWaiters.get(id);
    if (!waiters) this.#ackWaiters.set(id, waiters = new Set());
    waiters.add(resolve);
    try {
      // Registered first, so an ack arriving meanwhile is not missed.
      if (!(await this.#inOutbox(id))) return;
      let timer: ReturnType<typeof setTimeout> | undefined;
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(
          () =>
            reject(
              new Error(`waitAck: no ack for ${id} within ${timeoutMs} ms`),
            ),
          timeoutMs,
        );
      });
      try {
        await Promise.race([done, timeout]);
      } finally {
        clearTimeout(timer);
      }
    } finally {
      waiters.delete(resolve);
      if (waiters.size === 0) this.#ackWaiters.delete(id);
    }
  }

  /**
   * Remembers whom `id` went to (a cache for waitAck; the outbox is the
   * truth): at most ACKED_MEMORY, so msgs queued to a peer that is down are
   * held in the store only.
   */
  noteSent(id: string, key: string): void {
    this.#sentTo.set(id, key);
    if (this.#sentTo.size > ACKED_MEMORY) {
      this.#sentTo.delete(this.#sentTo.keys().next().value!);
    }
  }

  /** The ack of `id`: its waiters resolve and an `acked` event goes out. */
  noteAck(peer: string, id: string, th: string | undefined): void {
    this.#acked.add(id);
    if (this.#acked.size > ACKED_MEMORY) {
      this.#acked.delete(this.#acked.values().next().value!);
    }
    this.#sentTo.delete(id);
    for (const resolve of this.#ackWaiters.get(id) ?? []) resolve();
    this.#emit({
      type: "acked",
      peer,
      ts: timestamp(),
      id,
      ...(th ? { th } : {}),
    });
  }

  async #inOutbox(id: string): Promise<boolean> {
    const known = this.#sentTo.get(id);
    const peers = known
      ? [known]
      : (await this.#store.peers()).map((p) => p.key);
    for (const peer of peers) {
      if (await this.#store.inOutbox(peer, id)) return true;
    }
    return false;
  }
}
