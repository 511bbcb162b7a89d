/**
 * One clock for the deadlines of every connection (ping, idle, handshake,
 * resume, bye): an xstate `clock` whose long timers sit in buckets of
 * {@link TICK_MS} behind a single real timer, instead of one Node-compat
 * timer each. With 10,000 idle connections the listener re-arms a 30 s idle
 * deadline on every line received; here that costs a set insert and
 * delete, not a timer object and a runtime op.
 *
 * A timer fires at most one tick late and never early. Delays under
 * {@link WHEEL_MIN_MS} (tests' short timeouts) use a real timer, exact as
 * before.
 *
 * While the wheel holds timers its real timer sleeps at most
 * {@link MAX_SLEEP_MS}, so a new deadline (never nearer than that) never
 * re-arms it: each handshake sets and clears three or four deadlines
 * (handshake, resume, ping, the close's drain), and re-arming a real timer
 * for each earlier one cost a runtime timer per deadline. An idle wheel
 * wakes at most once a second. An emptied wheel keeps its real timer until
 * it fires (at most once more, within {@link MAX_SLEEP_MS}), unref'd: it no
 * longer keeps the process alive, and the next deadline (sequential
 * handshakes: the next connection's) takes it back instead of arming a new
 * one; a runtime timer set and cleared per connection was ~1 % of a
 * handshake's CPU on each side.
 *
 * @module
 */

/** The clock interface of xstate's `createActor(logic, { clock })`. */
export interface Clock {
  /** Calls `fn` once after `ms`; returns a handle for `clearTimeout`. */
  setTimeout(fn: () => void, ms: number): unknown;
  /** Cancels a timer (a spent or unknown handle is ignored). */
  clearTimeout(handle: unknown): void;
}

/** Bucket width: how late a wheel timer may fire. */
export const TICK_MS = 100;
/** Shorter delays get a real timer of their own. */
export const WHEEL_MIN_MS = 1_000;
/** The longest the real timer sleeps while the wheel holds timers. */
export const MAX_SLEEP_MS = WHEEL_MIN_MS;

class WheelTimer {
  constructor(readonly fn: () => void, readonly tick: number) {}
}

/**
 * Timers in buckets of {@link TICK_MS}, one real timer armed for the
 * earliest bucket (an emptied wheel's lingers once, unref'd).
 *
 * @example
 * ```ts
 * import { TimerWheel } from "./timer_wheel.ts";
 * const wheel = new TimerWheel();
 * const fired: string[] = [];
 * const late = wheel.setTimeout(() => fired.push("late"), 60_000);
 * wheel.clearTimeout(late); // empty again: its timer no longer holds the process
 * await new Promise<void>((done) => wheel.setTimeout(done, 10));
 * console.assert(fired.length === 0 && wheel.size === 0);
 * ```
 */
export class TimerWheel implements Clock {
  #buckets = new Map<number, Set<WheelTimer>>();
  /** Ticks of buckets, a binary min-heap (stale ticks are skipped). */
  #ticks: number[] = [];
  #size = 0;
  /**
   * The real timer: when it fires (ms, `performance.now()`), and whether it
   * keeps the process alive (not while the wheel is empty).
   */
  #armed:
    | { at: number; id: ReturnType<typeof setTimeout>; held: boolean }
    | undefined;

  /** Wheel timers pending (real ones for short delays not counted). */
  get size(): number {
    return this.#size;
  }

  /** The real timer is armed and keeps the process alive (timers pending). */
  get holding(): boolean {
    return this.#armed?.held === true;
  }

  setTimeout(fn: () => void, ms: number): unknown {
    if (!(ms >= WHEEL_MIN_MS)) return setTimeout(fn, ms);
    const tick = Math.ceil((performance.now() + ms) / TICK_MS);
    const timer = new WheelTimer(fn, tick);
    let bucket = this.#buckets.get(tick);
    if (bucket === undefined) {
      bucket = new Set();
      this.#buckets.set(tick, bucket);
      this.#push(tick);
    }
    bucket.add(timer);
    this.#size++;
    // Armed at most MAX_SLEEP_MS ahead: a new deadline is rarely sooner.
    if (this.#armed === undefined || tick * TICK_MS < this.#armed.at) {
      this.#arm();
    } else if (!this.#armed.held) {
      // The emptied wheel's timer, still armed: it holds the process again.
      this.#armed.held = true;
      Deno.refTimer(this.#armed.id);
    }
    return timer;
  }

  clearTimeout(handle: unknown): void {
    if (!(handle instanceof WheelTimer)) {
      clearTimeout(handle as ReturnType<typeof setTimeout> | undefined);
      return;
    }
    const bucket = this.#buckets.get(handle.tick);
    if (!bucket?.delete(handle)) return; // fired or cleared already
    this.#size--;
    // An empty bucket stays until its tick passes: re-armed deadlines in the
    // same tick reuse it instead of pushing its tick on the heap again.
    // Nothing left to wait for: the real timer stays for the next deadline
    // but no longer keeps the process alive (nor fails a test's sanitizer).
    if (this.#size === 0 && this.#armed?.held) {
      this.#armed.held = false;
      Deno.unrefTimer(this.#armed.id);
    }
  }

  /** Arms the real timer for the earliest bucket, or MAX_SLEEP_MS. */
  #arm(): void {
    this.#disarm();
    while (this.#ticks.length > 0) {
      const bucket = this.#buckets.get(this.#ticks[0]);
      if (bucket !== undefined && bucket.size > 0) break;
      this.#buckets.delete(this.#pop()); // emptied by clears
    }
    if (this.#ticks.length === 0) return;
    const now = performance.now();
    const wait = Math.min(
      MAX_SLEEP_MS,
      Math.max(0, this.#ticks[0] * TICK_MS - now),
    );
    this.#armed = {
      at: now + wait,
      id: setTimeout(() => this.#fire(), wait),
      held: true,
    };
  }

  #disarm(): void {
    if (this.#armed === undefined) return;
    clearTimeout(this.#armed.id);
    this.#armed = undefined;
  }

  #fire(): void {
    this.#armed = undefined;
    const now = performance.now() / TICK_MS;
    while (this.#ticks.length > 0 && this.#ticks[0] <= now) {
      const tick = this.#pop();
      const bucket = this.#buckets.get(tick);
      if (bucket === undefined) continue;
      this.#buckets.delete(tick);
      this.#size -= bucket.size;
      for (const timer of bucket) {
        try {
          timer.fn();
        } catch (error) {
          reportError(error); // as an uncaught error in a timer would be
        }
      }
    }
    if (this.#armed === undefined) this.#arm();
  }

  #push(tick: number): void {
    const heap = this.#ticks;
    let i = heap.push(tick) - 1;
    while (i > 0) {
      const up = (i - 1) >> 1;
      if (heap[up] <= tick) break;
      heap[i] = heap[up];
      i = up;
    }
    heap[i] = tick;
  }

  #pop(): number {
    const heap = this.#ticks;
    const top = heap[0];
    const last = heap.pop()!;
    if (heap.length > 0) {
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        if (l >= heap.length) break;
        const r = l + 1;
        const c = r < heap.length && heap[r] < heap[l] ? r : l;
        if (heap[c] >= last) break;
        heap[i] = heap[c];
        i = c;
      }
      heap[i] = last;
    }
    return top;
  }
}

/** The wheel every connection actor uses. */
export const connectionClock: TimerWheel = new TimerWheel();
