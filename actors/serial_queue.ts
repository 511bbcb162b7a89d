/**
 * Work run one task at a time, in the order it was queued: the one queue
 * behind a connection's ordered output (auth, resume, replay, entries), its
 * delivery to handlers, and store writes that must not overtake each other.
 *
 * @module
 */

/**
 * A FIFO of asynchronous tasks: each starts once the one before settled; a
 * failing task rejects its own promise and does not stop the queue.
 *
 * @example
 * ```ts
 * import { SerialQueue } from "./serial_queue.ts";
 * const queue = new SerialQueue();
 * const order: number[] = [];
 * queue.push(async () => {
 *   await new Promise((r) => setTimeout(r, 5));
 *   order.push(1);
 * });
 * queue.push(() => void order.push(2));
 * await queue.idle();
 * console.log(order); // [1, 2]
 * ```
 */
export class SerialQueue {
  #tail: Promise<void> = Promise.resolve();

  /** Queues `task`; resolves (or rejects) with it once it ran. */
  push<T>(task: () => T | Promise<T>): Promise<T> {
    const run = this.#tail.then(task);
    this.#tail = run.then(() => {}, () => {});
    return run;
  }

  /** Resolves once every task queued so far has settled. */
  idle(): Promise<void> {
    return this.#tail;
  }
}
