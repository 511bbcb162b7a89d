/**
 * The daemon flags that set bounds on what remotes can make us hold (the
 * README's "Limits" table), as one table: flag, unit, where it goes in
 * {@link PeerOptions}.
 *
 * @module
 */

import type { PeerOptions } from "../peer/peer.ts";
import { type Args, UsageError } from "./args.ts";

/** The bound values given on the command line, by flag name (without `--`). */
export type BoundValues = Partial<Record<BoundFlag, number>>;

/** One bound flag: its unit and how it lands in the Peer's options. */
interface BoundSpec {
  unit: "count" | "bytes" | "seconds";
  apply(options: PeerOptions, value: number): void;
}

const BOUNDS = {
  "max-connections": {
    unit: "count",
    apply: (o, v) => o.limits = { ...o.limits, maxConnections: v },
  },
  "max-unauthenticated": {
    unit: "count",
    apply: (o, v) => o.limits = { ...o.limits, maxUnauthenticated: v },
  },
  "max-unauthenticated-per-host": {
    unit: "count",
    apply: (o, v) => o.limits = { ...o.limits, maxUnauthenticatedPerHost: v },
  },
  "handshake-timeout": {
    unit: "seconds",
    apply: (o, v) =>
      o.timeouts = { ...o.timeouts, handshake: Math.round(v * 1000) },
  },
  "max-log-bytes": {
    unit: "bytes",
    apply: (o, v) => o.maxLogBytes = v,
  },
  "max-unfinished-blob-bytes": {
    unit: "bytes",
    apply: (o, v) => o.unfinishedBlobs = { ...o.unfinishedBlobs, perPeer: v },
  },
  "max-unfinished-blob-total": {
    unit: "bytes",
    apply: (o, v) => o.unfinishedBlobs = { ...o.unfinishedBlobs, total: v },
  },
  "max-unsent": {
    unit: "bytes",
    apply: (o, v) => o.maxUnsentBytes = v,
  },
  "max-serving": {
    unit: "count",
    apply: (o, v) => o.maxServing = v,
  },
  "unfinished-blob-ttl": {
    unit: "seconds",
    apply: (o, v) =>
      o.unfinishedBlobs = { ...o.unfinishedBlobs, ttlMs: Math.round(v * 1000) },
  },
} satisfies Record<string, BoundSpec>;

/** The name of a bound flag, e.g. "max-connections". */
export type BoundFlag = keyof typeof BOUNDS;

/** The bound flags as `FlagSpec`s (each takes one value).
 *
 * @example
 * ```ts
 * import { BOUND_FLAG_SPECS } from "./bound_flags.ts";
 * console.log(BOUND_FLAG_SPECS[0].name); // "max-connections"
 * ```
 */
export const BOUND_FLAG_SPECS: ReadonlyArray<
  { name: BoundFlag; type: "string" }
> = (Object.keys(BOUNDS) as BoundFlag[]).map((name) => ({
  name,
  type: "string" as const,
}));

/**
 * Reads and checks the bound flags: counts and bytes are positive
 * integers, seconds positive numbers. Throws {@link UsageError}.
 *
 * @example
 * ```ts ignore
 * const bounds = parseBoundFlags(args); // { "max-connections": 100 }
 * ```
 */
export function parseBoundFlags(args: Args): BoundValues {
  const out: BoundValues = {};
  for (
    const [flag, spec] of Object.entries(BOUNDS) as [BoundFlag, BoundSpec][]
  ) {
    const text = args.string(flag);
    if (text === undefined) continue;
    const n = Number(text);
    const ok = spec.unit === "seconds"
      ? Number.isFinite(n) && n > 0
      : Number.isSafeInteger(n) && n > 0;
    if (!ok) {
      throw new UsageError(
        `bad --${flag} "${text}": give ${
          spec.unit === "seconds"
            ? "seconds"
            : spec.unit === "bytes"
            ? "bytes (a positive integer)"
            : "a positive integer"
        }`,
      );
    }
    out[flag] = n;
  }
  return out;
}

/**
 * The bound flags as arguments again (what `up` passes to the daemon).
 *
 * @example
 * ```ts
 * import { boundFlagArgv } from "./bound_flags.ts";
 * console.log(boundFlagArgv({ "max-connections": 100 })); // ["--max-connections", "100"]
 * ```
 */
export function boundFlagArgv(values: BoundValues = {}): string[] {
  return Object.entries(values).flatMap((
    [flag, v],
  ) => [`--${flag}`, String(v)]);
}

/**
 * Sets the bounds in a Peer's options.
 *
 * @example
 * ```ts
 * import { applyBounds } from "./bound_flags.ts";
 * const options = { memory: true };
 * applyBounds(options, { "handshake-timeout": 2 });
 * console.log(options); // { memory: true, timeouts: { handshake: 2000 } }
 * ```
 */
export function applyBounds(
  options: PeerOptions,
  values: BoundValues = {},
): PeerOptions {
  for (const [flag, v] of Object.entries(values) as [BoundFlag, number][]) {
    BOUNDS[flag].apply(options, v);
  }
  return options;
}
