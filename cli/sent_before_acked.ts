/**
 * {@link SentBeforeAcked}: keeps the driver's `acked` event of a line after
 * its `sent` event. A line goes to the socket while its commit runs, and
 * its ack is taken once that commit is durable: that can come before
 * `Peer.send` has resolved and the driver has written `sent`.
 *
 * @module
 */

/** Ids written as `sent` and remembered until acked, at most. */
const SENT_KEPT = 100_000;

/**
 * Orders `acked` after `sent`: an ack of a line whose `sent` is not written
 * yet waits while sends are in flight; an ack of a line not sent in this run
 * (queued before a restart) goes out at once when none is.
 *
 * @example
 * ```ts
 * import { SentBeforeAcked } from "./sent_before_acked.ts";
 * const out: string[] = [];
 * const order = new SentBeforeAcked((id) => out.push(`acked ${id}`));
 * const done = order.sending();
 * order.acked("01"); // its send has not resolved: held
 * out.push("sent 01");
 * done("01");
 * console.log(out.join(", ")); // sent 01, acked 01
 * ```
 */
export class SentBeforeAcked {
  #emit: (id: string) => void;
  #sending = 0;
  #sent = new Set<string>();
  /** Acks waiting for their `sent`, in arrival order. */
  #held = new Set<string>();

  /** Writes `acked` events through `emitAcked`. */
  constructor(emitAcked: (id: string) => void) {
    this.#emit = emitAcked;
  }

  /**
   * A send begins; call what is returned once its `sent` is written, with
   * its id (or without, when it failed).
   */
  sending(): (id?: string) => void {
    this.begin();
    let done = false;
    return (id) => {
      if (done) return;
      done = true;
      this.end(id);
    };
  }

  /**
   * {@link sending} without a closure: a send starts; call {@link end}
   * exactly once for it.
   */
  begin(): void {
    this.#sending++;
  }

  /** A send begun with {@link begin} is over: written as `id`, or failed. */
  end(id?: string): void {
    this.#sending--;
    if (id !== undefined) {
      // Its own ack, if it came first, goes right after its sent.
      if (this.#held.delete(id)) this.#emit(id);
      else this.#note(id);
    }
    // Acks of lines not sent in this run go once no send is in flight.
    if (this.#sending === 0) this.#release();
  }

  /** The ack of `id` was taken: `acked` now, or once its `sent` is out. */
  acked(id: string): void {
    if (this.#sent.delete(id) || this.#sending === 0) this.#emit(id);
    else this.#held.add(id);
  }

  #note(id: string): void {
    this.#sent.add(id);
    if (this.#sent.size > SENT_KEPT) {
      this.#sent.delete(this.#sent.values().next().value!);
    }
  }

  /** No send in flight: every held ack goes (in arrival order). */
  #release(): void {
    const held = [...this.#held];
    this.#held.clear();
    for (const id of held) this.#emit(id);
  }
}
