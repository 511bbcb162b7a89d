/**
 * Progress bars for the blob transfers a command waits on: the daemon
 * streams progress items, one bar is drawn per transfer (on a terminal).
 *
 * @module
 */

import { ProgressBar } from "./output.ts";
import type { ProgressItem } from "./protocol.ts";

/** Transfers that have ended, one way or another. */
const ENDED = new Set(["done", "complete", "refused", "failed"]);

/**
 * One progress bar per blob transfer, fed by streamed progress items
 * (TTY only).
 *
 * @example
 * ```ts
 * import { ProgressBars } from "./progress_bars.ts";
 * const bars = new ProgressBars();
 * console.log(bars.take({ event: "message" })); // false
 * bars.finish();
 * ```
 */
export class ProgressBars {
  readonly #bars = new Map<string, ProgressBar>();

  /** Takes an item; true when it was a progress item. */
  take(item: unknown): boolean {
    const p = item as ProgressItem;
    if (p?.event !== "progress") return false;
    const id = `${p.dir} ${p.ref}`;
    let bar = this.#bars.get(id);
    if (!bar) {
      if (ENDED.has(p.status)) return true; // nothing left to draw
      const label = `${p.dir === "out" ? "send" : "recv"} ${p.name ?? p.ref}`;
      this.#bars.set(id, bar = new ProgressBar(label, p.total));
    }
    bar.update(p.bytes, { total: p.total, rate: p.rate });
    if (ENDED.has(p.status)) {
      bar.done(p.status === "done" || p.status === "complete");
      this.#bars.delete(id);
    }
    return true;
  }

  /** Ends every bar still drawn. */
  finish(): void {
    for (const bar of this.#bars.values()) bar.done(false);
    this.#bars.clear();
  }
}
