/**
 * A bound on the commands a driver has taken in and not yet finished: the
 * reader of stdin waits for room before it parses the next line, so a burst
 * of thousands of commands written at once is taken in as fast as they
 * finish, not all together (each queued send holds its promises, entries
 * and lines until its commit; thousands at once made the heap grow by
 * 100+ MiB). The pipe's buffer holds the rest meanwhile.
 *
 * @example
 * ```ts
 * import { IntakeGate } from "./intake_gate.ts";
 * const gate = new IntakeGate(1);
 * const done = gate.take();
 * const waited = gate.room(); // resolves once done() is called
 * done();
 * await waited;
 * ```
 *
 * @module
 */

/** Counts commands in flight; {@link IntakeGate.room} waits below the bound. */
export class IntakeGate {
  #limit: number;
  #inFlight = 0;
  #wake: (() => void) | undefined;

  /** At most `limit` commands in flight before {@link room} waits. */
  constructor(limit: number) {
    this.#limit = limit;
  }

  /** Commands taken and not yet finished. */
  get inFlight(): number {
    return this.#inFlight;
  }

  /** Counts one command in; call the returned function (once) when it is done. */
  take(): () => void {
    this.#inFlight++;
    let done = false;
    return () => {
      if (done) return;
      done = true;
      this.#inFlight--;
      if (this.#wake && this.#inFlight < this.#limit) {
        const wake = this.#wake;
        this.#wake = undefined;
        wake();
      }
    };
  }

  /** Resolves at once below the bound, else once a command finishes. */
  room(): Promise<void> | undefined {
    if (this.#inFlight < this.#limit) return undefined;
    return new Promise<void>((resolve) => this.#wake = resolve);
  }
}
