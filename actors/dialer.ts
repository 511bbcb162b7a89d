/**
 * A running dialer for one remote peer: {@link dialerMachine} with the
 * owner's dial function and "still wanted?" check plugged in.
 *
 * @module
 */

import {
  type Actor,
  type ActorOptions,
  type AnyActorLogic,
  createActor,
} from "npm:xstate@^5.33.3";
import { dialerMachine, type DialerTiming } from "./dialer_machine.ts";

/** xstate's clock interface (setTimeout/clearTimeout), e.g. SimulatedClock. */
export type DialerClock = NonNullable<ActorOptions<AnyActorLogic>["clock"]>;

/** The clock's `now()` (xstate's SimulatedClock has one), else Date.now. */
function clockNow(clock: DialerClock | undefined): () => number {
  const timed = clock as { now?: () => number } | undefined;
  return timed?.now ? () => timed.now!() : Date.now;
}

/** Options of {@link Dialer}. */
export interface DialerOptions {
  /** The remote peer's key. */
  peer: string;
  /** Addresses to try, preferred first. */
  addresses: string[];
  /** We are the listener dialing back an address from hello.addr. */
  dialBack?: boolean;
  /**
   * Dials `address` and resolves once the connection is established (the
   * peer's resume arrived); rejects with a one-line error otherwise. The
   * signal aborts when the attempt is no longer needed.
   */
  connect(address: string, signal: AbortSignal, attempt: number): Promise<void>;
  /** True while we have unacked messages or open threads for the peer. */
  shouldConnect(): boolean;
  timing?: Partial<DialerTiming>;
  /** Jitter source in [0, 1) (tests pass a fixed one). */
  random?: () => number;
  /** A clock for the delays (xstate's SimulatedClock in tests). */
  clock?: DialerClock;
  /** The current time in ms; default: the clock's `now()`, else Date.now. */
  now?: () => number;
  /** Called on every state change with the state and failed attempts. */
  onChange?(state: string, attempt: number, lastError?: string): void;
}

/**
 * Keeps one peer reachable: dials with backoff while the owner has
 * something for the peer, stands by while any connection to it is open.
 *
 * @example
 * ```ts
 * import { Dialer } from "./dialer.ts";
 * const dialer = new Dialer({
 *   peer: "ed25519:x",
 *   addresses: ["tcp:127.0.0.1:1"],
 *   connect: () => Promise.reject(new Error("refused")),
 *   shouldConnect: () => false,
 * });
 * dialer.start();
 * console.assert(dialer.state === "idle");
 * dialer.stop();
 * ```
 */
export class Dialer {
  readonly peer: string;
  readonly actor: Actor<typeof dialerMachine>;
  #started = false;

  constructor(options: DialerOptions) {
    this.peer = options.peer;
    // The one shared chart; this dialer's owner comes in as its host.
    this.actor = createActor(dialerMachine, {
      input: {
        host: {
          connect: options.connect,
          wanted: () => options.shouldConnect(),
        },
        peer: options.peer,
        addresses: options.addresses,
        dialBack: options.dialBack,
        timing: options.timing,
        random: options.random,
        now: options.now ?? clockNow(options.clock),
      },
      // An explicit `clock: undefined` would replace xstate's default clock.
      ...(options.clock ? { clock: options.clock } : {}),
    });
    if (options.onChange) {
      const onChange = options.onChange;
      let last = "";
      this.actor.subscribe({
        next: (snapshot) => {
          const state = String(snapshot.value);
          if (state === last) return;
          last = state;
          onChange(state, snapshot.context.attempt, snapshot.context.lastError);
        },
        error: () => {},
      });
    }
  }

  /** Starts the actor (idle until {@link Dialer.wake}). */
  start(): void {
    if (this.#started) return;
    this.#started = true;
    this.actor.start();
  }

  /** The owner has something to deliver: dial now if idle. */
  wake(): void {
    this.actor.send({ type: "WAKE" });
  }

  /** A connection to the peer is open (dialed by us or inbound). */
  connected(): void {
    this.actor.send({ type: "CONNECTED" });
  }

  /** The open connection to the peer closed. */
  disconnected(): void {
    this.actor.send({ type: "DISCONNECTED" });
  }

  /** A newly learned address, tried first from the next attempt on. */
  learn(address: string): void {
    this.actor.send({ type: "ADDRESS", address });
  }

  /** Stops for good; an attempt in flight is aborted. */
  stop(): void {
    this.actor.send({ type: "STOP" });
    this.actor.stop();
  }

  /** Current state: idle, connecting, backoff, grace, connected, stopped. */
  get state(): string {
    return String(this.actor.getSnapshot().value);
  }

  /** Failed attempts since the last established connection. */
  get attempt(): number {
    return this.actor.getSnapshot().context.attempt;
  }

  /** When the current outage began (first failure since connected), in ms. */
  get downSince(): number | undefined {
    return this.actor.getSnapshot().context.downSince;
  }

  /** The last dial error, one line, while failing. */
  get lastError(): string | undefined {
    return this.actor.getSnapshot().context.lastError;
  }

  /** Known addresses, preferred first. */
  get addresses(): readonly string[] {
    return this.actor.getSnapshot().context.addresses;
  }
}
