/**
 * Peers not redialed until something new goes to them: those that said
 * bye, or we said bye to. Held in memory and persisted as store meta
 * `quiet:<key>`, so a restart keeps the hold.
 *
 * @module
 */

import type { Store } from "../storage/store.ts";
import { SerialQueue } from "./serial_queue.ts";

/** The store meta that holds `peer` from redialing. */
function quietMeta(peer: string): string {
  return `quiet:${peer}`;
}

/**
 * What {@link QuietHolds.lift} returns for a peer that was not held: settled
 * already, and shared (a burst of sends makes no promise each for it).
 *
 * @example
 * ```ts
 * import { NOT_HELD, QuietHolds } from "./quiet_holds.ts";
 * import { MemoryStore } from "../storage/memory_store.ts";
 * const holds = new QuietHolds(new MemoryStore());
 * console.log(holds.lift("ed25519:a") === NOT_HELD); // true
 * ```
 */
export const NOT_HELD: Promise<void> = Promise.resolve();

/**
 * The set of held peers, with its writes to the store in call order (each
 * writes the current state, so the last one wins).
 *
 * @example
 * ```ts
 * import { QuietHolds } from "./quiet_holds.ts";
 * import { MemoryStore } from "../storage/memory_store.ts";
 * const holds = new QuietHolds(new MemoryStore());
 * await holds.hold("ed25519:a");
 * console.log(holds.has("ed25519:a")); // true
 * await holds.lift("ed25519:a");
 * ```
 */
export class QuietHolds {
  #store: Store;
  #held = new Set<string>();
  #writes = new SerialQueue();

  /** Holds kept in `store`'s meta. */
  constructor(store: Store) {
    this.#store = store;
  }

  /** True while `peer` is held. */
  has(peer: string): boolean {
    return this.#held.has(peer);
  }

  /** Restores the holds of every known peer from the store. */
  async load(): Promise<void> {
    for (const record of await this.#store.peers()) {
      const held = await this.#store.getMeta<boolean>(quietMeta(record.key));
      if (held) this.#held.add(record.key);
    }
  }

  /** Starts holding `peer`; resolves once persisted. */
  hold(peer: string): Promise<void> {
    if (this.#held.has(peer)) return this.#writes.idle();
    this.#held.add(peer);
    return this.#persist(peer);
  }

  /**
   * Lifts `peer`'s hold, if any; resolves once persisted. A peer not held
   * gets {@link NOT_HELD}, so a caller can skip waiting on it.
   */
  lift(peer: string): Promise<void> {
    if (!this.#held.delete(peer)) return NOT_HELD;
    return this.#persist(peer);
  }

  /** Resolves once every write asked for so far is done. */
  settled(): Promise<void> {
    return this.#writes.idle();
  }

  #persist(peer: string): Promise<void> {
    const write = () =>
      this.#store.setMeta(
        quietMeta(peer),
        this.#held.has(peer) ? true : undefined,
      );
    // Bookkeeping only: a failed write (store closing) keeps the memory hold.
    return this.#writes.push(write).catch(() => {});
  }
}
