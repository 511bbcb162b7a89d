/**
 * Timers for the processes awp starts, on Deno's own timer queue.
 *
 * Why: in Deno 2.9 the globals `setTimeout`, `setInterval`, `clearTimeout`,
 * `clearInterval` and `setImmediate` are lazy getters that load `node:timers`
 * on first use, and with it ~20 modules of Deno's Node layer (its errors,
 * `util.inspect`, async hooks, libuv error tables). Any program that sets
 * one timer pays for them: ~3 MiB of RSS in a bare process, 2.2–2.5 MiB in
 * the idle driver (`bench/README.md`, section "idle2"). Deno's web timers
 * (`ext:deno_web/02_timers.js`) are no longer reachable, but the queue
 * beneath both (`Deno.core`'s `createTimer`, `cancelTimer`,
 * `queueImmediate`) is.
 *
 * {@linkcode installCoreTimers} replaces those globals with thin ones on
 * that queue: numeric ids as the web's timers (and Deno's types) have them,
 * the same clamping (a delay under 1 ms is 1 ms, as `node:timers` does), the
 * same event-loop phases (an immediate runs in the loop's check phase, after
 * I/O), and `Deno.refTimer` / `Deno.unrefTimer` that know their ids. Not
 * kept: Node's `Timeout` objects (`.unref()`, `.refresh()`), string
 * callbacks, and async-context propagation into callbacks (nothing here
 * uses `AsyncLocalStorage`). When Deno does not have that queue (another
 * version), nothing is replaced.
 *
 * Only the CLI entry (`cli.ts`, so the daemon, the driver and `awp` itself)
 * installs them, through `cli/use_core_timers.ts`; importing `mod.ts` as a
 * library changes no globals.
 *
 * @example
 * ```ts ignore
 * import { installCoreTimers } from "./core_timers.ts";
 * installCoreTimers(); // true on Deno 2.9
 * setTimeout(() => console.log("later"), 10);
 * ```
 *
 * @module
 */

/** A timer of Deno's queue (`ext:core/02_timers.js`). */
interface CoreTimer {
  readonly _timerId: number;
}

/** An immediate as `Deno.core`'s immediate queue runs it. */
interface CoreImmediate {
  _idleNext: CoreImmediate | null;
  _idlePrev: CoreImmediate | null;
  _onImmediate: ((...args: unknown[]) => void) | null;
  _argv: unknown[] | undefined;
  _destroyed: boolean;
  asyncId: undefined;
  triggerAsyncId: undefined;
}

/** The part of `Deno.core` these timers use. */
interface CoreTimerApi {
  createTimer(
    callback: () => void,
    after: number,
    args: undefined,
    repeat: boolean,
    refed: boolean,
  ): CoreTimer;
  cancelTimer(timer: CoreTimer): void;
  refTimer(timer: CoreTimer): void;
  unrefTimer(timer: CoreTimer): void;
  queueImmediate(immediate: CoreImmediate): void;
  clearImmediate(immediate: CoreImmediate): void;
  immediateRefCount(increase: boolean): void;
  kRefed: symbol;
}

type TimerCallback = (...args: unknown[]) => void;

/** `Deno.core`, when this Deno has it with every function used here. */
function coreTimerApi(): CoreTimerApi | undefined {
  const internal = Object.getOwnPropertySymbols(Deno).find((s) =>
    s.description === "Deno.internal"
  );
  if (internal === undefined) return undefined;
  const holder = (Deno as unknown as Record<symbol, unknown>)[internal];
  const core = (holder as { core?: Record<string, unknown> } | undefined)
    ?.core;
  if (core === undefined) return undefined;
  const functions = [
    "createTimer",
    "cancelTimer",
    "refTimer",
    "unrefTimer",
    "queueImmediate",
    "clearImmediate",
    "immediateRefCount",
  ];
  if (functions.some((f) => typeof core[f] !== "function")) return undefined;
  if (typeof core.kRefed !== "symbol") return undefined;
  return core as unknown as CoreTimerApi;
}

let installed = false;

/**
 * Replaces the global timer functions with ones on Deno's timer queue
 * (see the module doc); true when they are in place (also when already
 * installed), false when this Deno lacks the queue and the globals were
 * left as they are.
 *
 * @example
 * ```ts ignore
 * import { installCoreTimers } from "./core_timers.ts";
 * if (installCoreTimers()) {
 *   const id = setInterval(() => {}, 1_000);
 *   console.log(typeof id); // "number"
 *   clearInterval(id);
 * }
 * ```
 */
export function installCoreTimers(): boolean {
  if (installed) return true;
  const core = coreTimerApi();
  if (core === undefined) return false;
  /** Pending timers by id, for `clearTimeout` and `Deno.unrefTimer`. */
  const live = new Map<number, CoreTimer>();

  const schedule = (
    repeat: boolean,
    callback: TimerCallback,
    delay: unknown,
    args: unknown[],
  ): number => {
    if (typeof callback !== "function") {
      throw new TypeError(
        `timer callback must be a function, not ${typeof callback}`,
      );
    }
    let id = 0;
    const timer = core.createTimer(
      repeat ? () => callback(...args) : () => {
        live.delete(id);
        callback(...args);
      },
      Number(delay),
      undefined,
      repeat,
      true,
    );
    id = timer._timerId;
    live.set(id, timer);
    return id;
  };
  const clear = (id: unknown): void => {
    if (id === undefined || id === null) return;
    const key = Number(id);
    const timer = live.get(key);
    if (timer === undefined) return;
    live.delete(key);
    core.cancelTimer(timer);
  };

  const globals: Record<string, unknown> = {
    setTimeout: (callback: TimerCallback, delay = 0, ...args: unknown[]) =>
      schedule(false, callback, delay, args),
    setInterval: (callback: TimerCallback, delay = 0, ...args: unknown[]) =>
      schedule(true, callback, delay, args),
    clearTimeout: clear,
    clearInterval: clear,
    setImmediate: (callback: TimerCallback, ...args: unknown[]) => {
      if (typeof callback !== "function") {
        throw new TypeError(
          `immediate callback must be a function, not ${typeof callback}`,
        );
      }
      const immediate: CoreImmediate = {
        _idleNext: null,
        _idlePrev: null,
        _onImmediate: callback,
        _argv: args.length > 0 ? args : undefined,
        _destroyed: false,
        asyncId: undefined,
        triggerAsyncId: undefined,
      };
      // Refed, as Node's `Immediate` is: it keeps the loop alive.
      (immediate as unknown as Record<symbol, boolean>)[core.kRefed] = true;
      core.immediateRefCount(true);
      core.queueImmediate(immediate);
      return immediate;
    },
    clearImmediate: (immediate: CoreImmediate | undefined) =>
      core.clearImmediate(immediate as CoreImmediate),
  };
  for (const [name, value] of Object.entries(globals)) {
    Object.defineProperty(globalThis, name, {
      value,
      writable: true,
      enumerable: true,
      configurable: true,
    });
  }

  // Deno's own look up its web timers' ids only: ours first.
  const unref = Deno.unrefTimer;
  const ref = Deno.refTimer;
  type TimerId = Parameters<typeof Deno.unrefTimer>[0];
  Deno.unrefTimer = (id: TimerId): void => {
    const timer = live.get(Number(id));
    if (timer) core.unrefTimer(timer);
    else unref(id);
  };
  Deno.refTimer = (id: TimerId): void => {
    const timer = live.get(Number(id));
    if (timer) core.refTimer(timer);
    else ref(id);
  };
  installed = true;
  return true;
}
