/**
 * {@link PeerDirectory}: the peers we know and how we keep reaching them:
 * remembered on connect (by the supervisor), listed with their connection state, dialed again
 * on open while wanted, and given a dialer when we queue lines for them.
 *
 * @module
 */

import type { Supervisor } from "../actors/supervisor.ts";
import type { OutboxEntry, PeerRecord, Store } from "../storage/store.ts";

/** A known peer and whether it is connected now. */
export interface PeerInfo extends PeerRecord {
  /** True while a connection to it is open. */
  connected: boolean;
  /**
   * Not connected, and the last dial reached an HTTP front that refused the
   * WebSocket upgrade (a sleeping host): still retried with backoff.
   * Always set by `Peer.peers`.
   */
  waking?: boolean;
  /** While we keep failing to dial it: since when (ISO time), and why. */
  unreachable?: { since: string; error?: string };
}

/**
 * The known peers (from the store) and their reachability (from the
 * supervisor).
 *
 * @example
 * ```ts ignore
 * const directory = new PeerDirectory(store, supervisor, () => closing);
 * await directory.redialKnown(); // on open
 * await directory.ensureReach(key); // after queueing lines for key
 * ```
 */
export class PeerDirectory {
  #store: Store;
  #sup: Supervisor;
  #closing: () => boolean;

  /** Peers from `store`, reached through `sup`, until `closing()`. */
  constructor(store: Store, sup: Supervisor, closing: () => boolean) {
    this.#store = store;
    this.#sup = sup;
    this.#closing = closing;
  }

  /** Known peers (from the store), each with whether it is connected now. */
  async peers(): Promise<PeerInfo[]> {
    const up = new Set(this.#sup.peers);
    return (await this.#store.peers()).map((p) => {
      const down = this.#sup.unreachable(p.key);
      return {
        ...p,
        connected: up.has(p.key),
        waking: !up.has(p.key) && this.#sup.isWaking(p.key),
        ...(down
          ? {
            unreachable: {
              since: new Date(down.since).toISOString(),
              ...(down.error ? { error: down.error } : {}),
            },
          }
          : {}),
      };
    });
  }

  /**
   * On open: dial the peers that are still wanted and have an address: those
   * we dialed, and those that gave theirs (hello.addr, NOTES item 6), so a
   * listener that restarts with lines for a peer dials it back at once.
   */
  async redialKnown(): Promise<void> {
    for (const record of await this.#store.peers()) {
      if (record.addresses.length === 0) continue;
      // Held by a bye (ours or theirs) until something new goes to it.
      if (this.#sup.quiet(record.key)) continue;
      if (await this.#sup.refreshWanted(record.key)) {
        this.#sup.reach(record.key, record.addresses);
      }
    }
  }

  /** A known-but-away peer with an address gets a dialer when we queue for it. */
  async ensureReach(key: string): Promise<void> {
    if (this.#sup.connection(key) || this.#sup.dialer(key)) return;
    const record = await this.#store.peer(key);
    if (record && record.addresses.length > 0) {
      this.#sup.reach(key, record.addresses);
    }
  }

  /** Lines the sharer queued itself: out now, or the host gets reached. */
  async deliverQueued(peer: string, entries: OutboxEntry[]): Promise<void> {
    const conn = this.#sup.connection(peer);
    if (conn) {
      conn.sendEntries(entries);
      return;
    }
    if (this.#closing()) return;
    await this.#sup.refreshWanted(peer);
    await this.ensureReach(peer);
    // New lines for it: a peer we said bye to is dialed again.
    await this.#sup.resumeDialing(peer);
  }
}
