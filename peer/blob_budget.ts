/**
 * The bounds on unfinished blobs of a {@link PeerBlobs}: bytes of incoming
 * blobs received and not complete, per peer and in total (a chunk that would
 * pass one is refused), and the same bounds on our own unacked outgoing
 * blobs to a peer (served results).
 *
 * @module
 */

import type { Store } from "../storage/store.ts";

/**
 * Bounds on unfinished incoming blobs (chunks received, blob not complete):
 * a chunk that would pass one is refused (err blob_refused) and its blob's
 * temp file removed; one untouched for `ttlMs` is dropped by
 * `PeerBlobs.expireUnfinished`.
 */
export interface UnfinishedBlobLimits {
  /** Per peer, bytes (default 512 MiB, at least the blob limit). */
  perPeer?: number;
  /** All peers together, bytes (default 2 GiB, at least the per-peer bound). */
  total?: number;
  /** Dropped after this long without a chunk, ms (default 1 h). */
  ttlMs?: number;
}

/** Defaults of {@link UnfinishedBlobLimits}. */
export const DEFAULT_UNFINISHED: Readonly<Required<UnfinishedBlobLimits>> =
  Object.freeze({
    perPeer: 512 * 1024 * 1024,
    total: 2 * 1024 * 1024 * 1024,
    ttlMs: 3_600_000,
  });

/** Bytes held by one unfinished incoming blob. */
interface Held {
  peer: string;
  bytes: number;
}

/**
 * The unfinished incoming blobs' bytes by `${peer} ${ref}` (loaded from the
 * store once, then kept as chunks are taken), and the checks against the
 * bounds.
 *
 * @example
 * ```ts ignore
 * const budget = new BlobBudget(store, 50 * 1024 * 1024);
 * const refused = await budget.take("ed25519:p", "blob_1", 0, 262144, true);
 * ```
 */
export class BlobBudget {
  #store: Store;
  #perPeer: number;
  #total: number;
  /** How long an unfinished blob may go without a chunk, ms. */
  readonly ttlMs: number;
  #loading: Promise<Map<string, Held>> | undefined;
  /** `#loading`, once loaded: checks are synchronous from then on. */
  #held: Map<string, Held> | undefined;

  /** Starts loading the held bytes, so the first chunk does not wait. */
  constructor(
    store: Store,
    maxBlobBytes: number,
    limits: UnfinishedBlobLimits = {},
  ) {
    this.#store = store;
    this.#perPeer = Math.max(
      limits.perPeer ?? DEFAULT_UNFINISHED.perPeer,
      maxBlobBytes,
    );
    this.#total = Math.max(
      limits.total ?? DEFAULT_UNFINISHED.total,
      this.#perPeer,
    );
    this.ttlMs = limits.ttlMs ?? DEFAULT_UNFINISHED.ttlMs;
    this.#load().catch(() => this.#loading = undefined);
  }

  /** The held bytes, loaded from the store once. */
  #load(): Promise<Map<string, Held>> {
    this.#loading ??= this.#store.blobs().then((records) => {
      if (this.#held) return this.#held;
      const held = new Map<string, Held>();
      for (const r of records) {
        if (r.dir === "in" && r.status === "active") {
          held.set(`${r.peer} ${r.ref}`, { peer: r.peer, bytes: r.bytes });
        }
      }
      return this.#held = held;
    });
    return this.#loading;
  }

  async #map(): Promise<Map<string, Held>> {
    return this.#held ?? await this.#load();
  }

  /**
   * Takes `adding` more bytes of blob `ref` from `peer` (whose sink has
   * `sinkBytes`; a chunk taken on arrival) into the count, unless `check`
   * and they would pass a bound: then nothing is counted and the reason is
   * returned.
   */
  async take(
    peer: string,
    ref: string,
    sinkBytes: number,
    adding: number,
    check: boolean,
  ): Promise<string | undefined> {
    const held = await this.#map();
    const id = `${peer} ${ref}`;
    // Taken on arrival, maybe not written yet: the held count runs ahead.
    const after = Math.max(sinkBytes, held.get(id)?.bytes ?? 0) + adding;
    if (check) {
      let mine = after;
      let all = after;
      for (const [other, h] of held) {
        if (other === id) continue; // counted above
        all += h.bytes;
        if (h.peer === peer) mine += h.bytes;
      }
      if (mine > this.#perPeer) {
        return `blob ${ref} refused: unfinished blobs from this peer would pass ${this.#perPeer} bytes`;
      }
      if (all > this.#total) {
        return `blob ${ref} refused: unfinished blobs would pass ${this.#total} bytes in total`;
      }
    }
    held.set(id, { peer, bytes: after });
    return undefined;
  }

  /** Uncounts `bytes` of blob `ref` (a chunk that wrote nothing). */
  uncount(peer: string, ref: string, sinkBytes: number, bytes: number): void {
    const id = `${peer} ${ref}`;
    const h = this.#held?.get(id);
    if (h) {
      this.#held!.set(id, {
        peer,
        bytes: Math.max(sinkBytes, h.bytes - bytes),
      });
    }
  }

  /** Blob `ref` of `peer` is finished (complete, refused, failed, expired). */
  async drop(peer: string, ref: string): Promise<void> {
    (await this.#map()).delete(`${peer} ${ref}`);
  }

  /**
   * Why `adding` more bytes of outgoing blobs to `peer` (a served result)
   * may not be spooled: its unacked outgoing blobs would pass the per-peer
   * or the total bound (the same as for unfinished incoming ones). Else
   * undefined.
   */
  async outgoingOver(
    peer: string,
    adding: number,
  ): Promise<string | undefined> {
    let mine = adding;
    let all = adding;
    for (const b of await this.#store.blobs()) {
      if (b.dir !== "out" || b.status !== "active") continue;
      all += b.size;
      if (b.peer === peer) mine += b.size;
    }
    if (mine > this.#perPeer) {
      return `unacked blobs to this peer would pass ${this.#perPeer} bytes`;
    }
    if (all > this.#total) {
      return `unacked blobs would pass ${this.#total} bytes in total`;
    }
    return undefined;
  }
}
