/**
 * The chart of a dialer: one per remote peer we may need to reach.
 *
 * SPEC 4.3: the awake side owns reconnection and retries with exponential
 * backoff capped at 60 s for as long as it has unacked messages or open
 * threads for that peer, with no give-up timeout.
 *
 * How soon we retry depends on what the last attempt told us:
 * - A connection that drops is redialed at once: the other side may only
 *   be restarting.
 * - A refusal (TCP RST, or no Unix socket file) is cheap and means the host
 *   answers but nothing listens yet, as while a peer restarts: we probe
 *   every `probeMs` (250 ms) for `probeWindowMs` (10 s) of outage, then
 *   every `refusedCapMs` (1.5 s) until `fastWindowMs` (10 min) of outage.
 *   A listener that comes back is so found within 1.5 s.
 * - Anything else (timeouts, unreachable hosts, failed handshakes), and any
 *   outage older than `fastWindowMs`, backs off exponentially from
 *   `baseMs` (0.5 s), doubling, capped at `capMs` (60 s).
 * Every delay is jittered down by up to `jitter` (so caps hold) to keep a
 * crowd of dialers from retrying in step. Dial attempts per peer are so
 * bounded: at most 50 in the first 10 s of an outage, 50 a minute until
 * 10 minutes, then 1 or 2 a minute.
 *
 * Any sign of life resets the schedule: an established connection (ours or
 * inbound), or a newly learned address, which is dialed at once.
 *
 * A listener that learned the dialer's `hello.addr` (NOTES item 6) runs a
 * dialer with `dialBack`: after that connection drops it first waits
 * `dialBackGrace` (15 s) so it does not race the original dialer coming
 * back, then dials like any other.
 *
 * The chart is data, built once and shared by every dialer: the `connect`
 * actor and the `wanted` guard (does the owner still have something for
 * this peer?) call the {@link DialerHost} of the input (actors/dialer.ts
 * passes one; a `.provide()`d machine per dialer would cost each its own
 * state-node tree, rebuilt on the dial path), and tests may replace them
 * with `.provide()`.
 *
 * @module
 */

import { assign, fromPromise, not, setup } from "npm:xstate@^5.33.3";
import { errorText } from "../wire/error_text.ts";

/** Backoff and grace settings, in ms. */
export interface DialerTiming {
  /** First retry delay after a failure that is not a refusal (500). */
  baseMs: number;
  /** Longest delay between attempts (60 000). */
  capMs: number;
  /** Retry delay after a refusal early in an outage (250). */
  probeMs: number;
  /** How long into an outage refusals are retried every `probeMs` (10 000). */
  probeWindowMs: number;
  /** Retry delay after a refusal later in an outage (1 500). */
  refusedCapMs: number;
  /** After this much outage, refusals back off like other failures (600 000). */
  fastWindowMs: number;
  /** Fraction by which a delay may be shortened at random (0.2). */
  jitter: number;
  /** How long a listener waits before dialing back (15 000). */
  graceMs: number;
}

/** The defaults of {@link DialerTiming}. */
export const DEFAULT_DIALER_TIMING: Readonly<DialerTiming> = Object.freeze({
  baseMs: 500,
  capMs: 60_000,
  probeMs: 250,
  probeWindowMs: 10_000,
  refusedCapMs: 1_500,
  fastWindowMs: 600_000,
  jitter: 0.2,
  graceMs: 15_000,
});

/** What a dialer's chart asks of its owner (see {@link dialerMachine}). */
export interface DialerHost {
  /**
   * Dials `address` and resolves once the connection is established;
   * rejects with a one-line error otherwise. `signal` aborts when the
   * attempt is no longer needed.
   */
  connect(address: string, signal: AbortSignal, attempt: number): Promise<void>;
  /** True while the owner has something for the peer. */
  wanted(): boolean;
}

/** Input of {@link dialerMachine}. */
export interface DialerInput {
  /** The owner's dial and "still wanted?" (none: never wanted). */
  host?: DialerHost;
  /** The remote peer's key. */
  peer: string;
  /** Addresses to try, preferred first; attempts rotate through them. */
  addresses: string[];
  /** We are the listener side, dialing back an address from hello.addr. */
  dialBack?: boolean;
  timing?: Partial<DialerTiming>;
  /** Source of randomness for jitter, in [0, 1). */
  random?: () => number;
  /** The current time in ms (the clock's, in tests). */
  now?: () => number;
}

/** Context of {@link dialerMachine}. */
export interface DialerContext {
  peer: string;
  host?: DialerHost;
  addresses: string[];
  dialBack: boolean;
  timing: DialerTiming;
  random: () => number;
  now: () => number;
  /** Failed attempts since the last established connection. */
  attempt: number;
  /** The last dial error, one line. */
  lastError?: string;
  /** The last failure was a refusal: the host answers, nothing listens. */
  refused: boolean;
  /** When the first failure of this outage happened. */
  downSince?: number;
}

/** Events a dialer accepts. */
export type DialerEvent =
  /** The owner has something to deliver: start dialing if idle. */
  | { type: "WAKE" }
  /** A connection to this peer is open (ours or inbound). */
  | { type: "CONNECTED" }
  /** The open connection to this peer closed. */
  | { type: "DISCONNECTED" }
  /** A newly learned address (introduce, hello.addr): tried first. */
  | { type: "ADDRESS"; address: string }
  /** Stop for good. */
  | { type: "STOP" };

/** What the `connect` actor is given. */
export interface ConnectInput {
  peer: string;
  /** The owner's dial (the default `connect` actor calls it). */
  host?: DialerHost;
  address: string;
  attempt: number;
}

/**
 * The exponential part of the schedule: the delay before retry number
 * `attempt` (0-based) is `baseMs * 2^attempt` capped at `capMs`, shortened
 * by up to `jitter` of itself.
 *
 * @example
 * ```ts
 * import { backoffDelay, DEFAULT_DIALER_TIMING } from "./dialer_machine.ts";
 * console.assert(backoffDelay(0, DEFAULT_DIALER_TIMING, () => 0) === 500);
 * console.assert(backoffDelay(20, DEFAULT_DIALER_TIMING, () => 0) === 60_000);
 * ```
 */
export function backoffDelay(
  attempt: number,
  timing: DialerTiming,
  random: () => number,
): number {
  const raw = Math.min(
    timing.capMs,
    timing.baseMs * 2 ** Math.min(attempt, 40),
  );
  return Math.round(raw * (1 - timing.jitter * random()));
}

/**
 * True when a dial error says the host answered but nothing listens there
 * (TCP connection refused, no Unix socket file): cheap to retry soon.
 *
 * @example
 * ```ts
 * import { isRefusal } from "./dialer_machine.ts";
 * console.log(isRefusal(new Error("dial tcp:127.0.0.1:9: connection refused"))); // true
 * console.log(isRefusal(new Error("dial tcp:10.0.0.9:9: timed out"))); // false
 * ```
 */
export function isRefusal(error: unknown): boolean {
  return /: (connection refused|no such socket)$/.test(errorText(error));
}

/**
 * The delay before the next attempt after a failure, from the context
 * (see the module notes for the schedule).
 *
 * @example
 * ```ts
 * import { DEFAULT_DIALER_TIMING, retryDelay } from "./dialer_machine.ts";
 * const context = {
 *   timing: DEFAULT_DIALER_TIMING, random: () => 0, now: () => 5_000,
 *   attempt: 3, refused: true, downSince: 0,
 * };
 * console.log(retryDelay(context)); // 250
 * console.log(retryDelay({ ...context, now: () => 60_000 })); // 1500
 * console.log(retryDelay({ ...context, refused: false })); // 2000
 * ```
 */
export function retryDelay(
  context: Pick<
    DialerContext,
    "timing" | "random" | "now" | "attempt" | "refused" | "downSince"
  >,
): number {
  const { timing, random } = context;
  const outage = context.now() - (context.downSince ?? context.now());
  if (context.refused && outage < timing.fastWindowMs) {
    const delay = outage < timing.probeWindowMs
      ? timing.probeMs
      : timing.refusedCapMs;
    return Math.round(delay * (1 - timing.jitter * random()));
  }
  return backoffDelay(Math.max(0, context.attempt - 1), timing, random);
}

/**
 * The dialer chart. States: `idle` (nothing to deliver, or gave up),
 * `connecting` (a dial in flight), `backoff` (waiting to retry), `grace`
 * (listener waiting before dialing back), `connected`, `stopped`.
 *
 * @example
 * ```ts
 * import { createActor, fromPromise } from "npm:xstate@^5.33.3";
 * import { dialerMachine } from "./dialer_machine.ts";
 * const actor = createActor(
 *   dialerMachine.provide({ guards: { wanted: () => false } }),
 *   { input: { peer: "ed25519:x", addresses: ["tcp:127.0.0.1:1"] } },
 * ).start();
 * console.assert(actor.getSnapshot().value === "idle");
 * actor.stop();
 * ```
 */
export const dialerMachine = setup({
  types: {
    context: {} as DialerContext,
    events: {} as DialerEvent,
    input: {} as DialerInput,
  },
  actors: {
    // The owner's: dial, handshake, resolve once established.
    connect: fromPromise<void, ConnectInput>(({ input, signal }) =>
      input.host
        ? input.host.connect(input.address, signal, input.attempt)
        : Promise.reject(new Error("no connect implementation provided"))
    ),
  },
  guards: {
    // The owner's: unacked messages or open threads for the peer.
    wanted: ({ context }) => context.host?.wanted() ?? false,
    dialBack: ({ context }) => context.dialBack,
    hasAddress: ({ context }) => context.addresses.length > 0,
    newAddress: ({ context, event }) =>
      event.type === "ADDRESS" && !context.addresses.includes(event.address),
  },
  delays: {
    backoff: ({ context }) => retryDelay(context),
    dialBackGrace: ({ context }) => context.timing.graceMs,
  },
  actions: {
    recordFailure: assign({
      attempt: ({ context }) => context.attempt + 1,
      refused: ({ event }) => isRefusal((event as { error?: unknown }).error),
      downSince: ({ context }) => context.downSince ?? context.now(),
      lastError: ({ event }) => {
        return errorText((event as { error?: unknown }).error);
      },
    }),
    resetAttempts: assign({
      attempt: 0,
      lastError: undefined,
      refused: false,
      downSince: undefined,
    }),
    learnAddress: assign({
      addresses: ({ context, event }) => {
        if (event.type !== "ADDRESS") return context.addresses;
        return [
          event.address,
          ...context.addresses.filter((a) => a !== event.address),
        ];
      },
    }),
  },
}).createMachine({
  id: "dialer",
  context: ({ input }) => ({
    peer: input.peer,
    ...(input.host ? { host: input.host } : {}),
    addresses: [...input.addresses],
    dialBack: input.dialBack ?? false,
    timing: { ...DEFAULT_DIALER_TIMING, ...input.timing },
    random: input.random ?? Math.random,
    now: input.now ?? Date.now,
    attempt: 0,
    refused: false,
  }),
  initial: "idle",
  on: {
    ADDRESS: { actions: "learnAddress" },
    STOP: ".stopped",
  },
  states: {
    idle: {
      on: {
        WAKE: "check",
        CONNECTED: "connected",
      },
    },
    // Entry point of every (re)try: dial if there is something to deliver.
    check: {
      always: [
        { guard: not("hasAddress"), target: "idle" },
        { guard: "wanted", target: "connecting" },
        { target: "idle" },
      ],
    },
    connecting: {
      invoke: {
        src: "connect",
        input: ({ context }) => ({
          peer: context.peer,
          ...(context.host ? { host: context.host } : {}),
          address:
            context.addresses[context.attempt % context.addresses.length],
          attempt: context.attempt,
        }),
        onDone: { target: "connected", actions: "resetAttempts" },
        onError: { target: "backoff", actions: "recordFailure" },
      },
      on: { CONNECTED: "connected" },
    },
    backoff: {
      after: { backoff: "check" },
      on: {
        CONNECTED: "connected",
        // A new address is a sign of life: try it now.
        ADDRESS: [
          {
            guard: "newAddress",
            target: "check",
            actions: ["learnAddress", "resetAttempts"],
          },
          { actions: "learnAddress" },
        ],
      },
    },
    grace: {
      after: { dialBackGrace: "check" },
      on: { CONNECTED: "connected" },
    },
    connected: {
      entry: "resetAttempts",
      on: {
        // A drop is redialed at once: the other side may be restarting.
        DISCONNECTED: [
          { guard: "dialBack", target: "grace" },
          { target: "check" },
        ],
      },
    },
    stopped: { type: "final" },
  },
});
