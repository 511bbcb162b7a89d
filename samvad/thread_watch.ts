/**
 * One subscription to a Peer's events, routed by thread: the bridge waits
 * on the threads it opened; msgs on other threads go to `other`.
 *
 * @module
 */

import type {
  PeerEvent,
  PeerMessageEvent,
  StateEvent,
} from "../peer/peer_events.ts";

/** A msg or state event of a thread. */
export type ThreadEvent = PeerMessageEvent | StateEvent;

/**
 * Routes message and state events to per-thread listeners.
 *
 * @example
 * ```ts
 * import { ThreadWatch } from "./thread_watch.ts";
 * import { EventQueue, type PeerEvent } from "../peer/peer_events.ts";
 * const q = new EventQueue<PeerEvent>();
 * const watch = new ThreadWatch(q, () => {});
 * const off = watch.on("t1", (e) => console.log(e.type));
 * off();
 * watch.close();
 * ```
 */
export class ThreadWatch {
  readonly #events: AsyncIterableIterator<PeerEvent>;
  #listeners = new Map<string, (e: ThreadEvent) => void>();
  readonly #other: (e: PeerMessageEvent) => void;
  readonly #pumping: Promise<void>;

  constructor(
    events: AsyncIterableIterator<PeerEvent>,
    other: (e: PeerMessageEvent) => void,
  ) {
    this.#events = events;
    this.#other = other;
    this.#pumping = this.#pump();
  }

  /** Listens to thread `th` until the returned function is called. */
  on(th: string, listener: (e: ThreadEvent) => void): () => void {
    this.#listeners.set(th, listener);
    return () => {
      if (this.#listeners.get(th) === listener) this.#listeners.delete(th);
    };
  }

  /** Stops listening. */
  async close(): Promise<void> {
    await this.#events.return?.();
    await this.#pumping;
  }

  async #pump(): Promise<void> {
    for await (const e of this.#events) {
      if (e.type !== "message" && e.type !== "state") continue;
      const listener = this.#listeners.get(e.th);
      try {
        if (listener) listener(e);
        else if (e.type === "message") this.#other(e);
      } catch { /* a listener's failure is its own */ }
    }
  }
}
