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
  #held: string[] = [];

  /** Writes `acked` events through `emitAcked`. */
  constructor(emitAcked: (id: string) => void) {
    this.#emit = emitAcked;
  }

  /**
   * A send begins; call what is returned once its `sent` is written, with
   * its id (or without, when it failed).
   */
  sending(): (id?: string) => void {
    this.#sending++;
    let done = false;
    return (id) => {
      if (done) return;
      done = true;
      this.#sending--;
      if (id !== undefined) this.#note(id);
      this.#release();
    };
  }

  /** The ack of `id` was taken: `acked` now, or once its `sent` is out. */
  acked(id: string): void {
    if (this.#sent.delete(id) || this.#sending === 0) this.#emit(id);
    else this.#held.push(id);
  }

  #note(id: string): void {
    this.#sent.add(id);
    if (this.#sent.size > SENT_KEPT) {
      this.#sent.delete(this.#sent.values().next().value!);
    }
  }

  #release(): void {
    if (this.#held.length === 0) return;
    const held = this.#held;
    this.#held = [];
    for (const id of held) {
      if (this.#sent.delete(id) || this.#sending === 0) this.#emit(id);
      else this.#held.push(id);
    }
  }
}
