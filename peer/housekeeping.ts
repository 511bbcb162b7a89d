/**
 * {@link Housekeeping}: a Peer's timers that keep its store bounded: outbox
 * retention (soon after open, then hourly) and the expiry of unfinished
 * incoming blobs.
 *
 * @module
 */

import type { Store } from "../storage/store.ts";
import type { PeerBlobs } from "./peer_blobs.ts";
import { DEFAULT_RETENTION_MS } from "../actors/wanted_in_store.ts";

/**
 * The periodic clean-ups of one Peer; the timers never keep the process up.
 *
 * @example
 * ```ts ignore
 * const housekeeping = new Housekeeping(store, blobs);
 * housekeeping.start({ retentionMs: 86_400_000 });
 * housekeeping.stop(); // at close
 * ```
 */
export class Housekeeping {
  #store: Store;
  #blobs: PeerBlobs;
  /** The retention timer (expireOutbox soon after open, then hourly). */
  #retention: ReturnType<typeof setTimeout> | undefined;
  /** The timer of the unfinished-blob expiry. */
  #blobExpiry: ReturnType<typeof setTimeout> | undefined;

  /** Clean-ups of `store`'s outbox and `blobs`' unfinished transfers. */
  constructor(store: Store, blobs: PeerBlobs) {
    this.#store = store;
    this.#blobs = blobs;
  }

  /** Starts both timers. */
  start(options: { retentionMs?: number }): void {
    this.#retain(5_000, options.retentionMs ?? DEFAULT_RETENTION_MS);
    this.#expireBlobs(this.#blobs.unfinishedTtlMs);
  }

  /** Stops both timers. */
  stop(): void {
    clearTimeout(this.#retention);
    clearTimeout(this.#blobExpiry);
  }

  /** Drops unfinished incoming blobs past their TTL, now and then. */
  #expireBlobs(ttl: number): void {
    const every = Math.max(1_000, Math.min(ttl / 2, 600_000));
    const timer = setTimeout(() => {
      this.#expireBlobs(ttl);
      this.#blobs.expireUnfinished().catch(() => {});
    }, every);
    Deno.unrefTimer(timer);
    this.#blobExpiry = timer;
  }

  /** Runs store retention after `delayMs`, then hourly, until close. */
  #retain(delayMs: number, retentionMs: number): void {
    const timer = setTimeout(() => {
      this.#retain(3_600_000, retentionMs);
      this.#store.expireOutbox(Date.now() - retentionMs).catch(() => {});
    }, delayMs);
    Deno.unrefTimer(timer);
    this.#retention = timer;
  }
}
