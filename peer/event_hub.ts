/**
 * {@link EventHub}: where a Peer's events go out. Every subscriber of
 * `Peer.events` has its queue here; events before the first subscriber are
 * kept (up to a bound) for it, and closing ends every stream.
 *
 * @module
 */

import { EventQueue, type PeerEvent } from "./peer_events.ts";
import { timestamp } from "../wire/time.ts";

/** Events kept for the first subscriber, at most. */
const EARLY_EVENTS = 10_000;

/**
 * The fan-out of a Peer's events to its `events()` streams.
 *
 * @example
 * ```ts
 * import { EventHub } from "./event_hub.ts";
 * const hub = new EventHub();
 * hub.localError("", "dial", "refused"); // kept for the first stream
 * const stream = hub.subscribe(false);
 * console.log((await stream.next()).value?.type); // "error"
 * hub.close();
 * ```
 */
export class EventHub {
  #subs = new Set<EventQueue<PeerEvent>>();
  #early: PeerEvent[] | undefined = [];

  /** Sends `event` to every stream (or keeps it for the first one). */
  emit(event: PeerEvent): void {
    if (this.#early) {
      if (this.#early.length < EARLY_EVENTS) this.#early.push(event);
      return;
    }
    for (const q of this.#subs) q.push(event);
  }

  /** An `error` event of our own (not an `err` line from the remote). */
  localError(peer: string, code: string, detail: string, ref?: string): void {
    this.emit({
      type: "error",
      peer,
      ts: timestamp(),
      code,
      detail,
      remote: false,
      ...(ref !== undefined ? { ref } : {}),
    });
  }

  /**
   * A new stream of the events from now on (the first one also gets those
   * kept since open); already ended when `closed`.
   */
  subscribe(closed: boolean): EventQueue<PeerEvent> {
    const queue: EventQueue<PeerEvent> = new EventQueue(() =>
      this.#subs.delete(queue)
    );
    if (this.#early) {
      for (const e of this.#early) queue.push(e);
      this.#early = undefined;
    }
    if (closed) queue.close();
    else this.#subs.add(queue);
    return queue;
  }

  /** Ends every stream. */
  close(): void {
    for (const q of [...this.#subs]) q.close();
    this.#subs.clear();
  }
}
