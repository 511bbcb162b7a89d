/**
 * Summary statistics for benchmark samples: median and spread of repeated
 * runs, percentiles of latency samples.
 *
 * @example
 * ```ts
 * import { summarize } from "./stats.ts";
 * console.log(summarize([3, 1, 2]).median); // 2
 * ```
 *
 * @module
 */

/** Median and spread of one metric over the runs of a workload. */
export interface Summary {
  median: number;
  min: number;
  max: number;
  /** (max - min) / median, 0 for a single run. */
  spread: number;
  /** Every run's value, in run order. */
  runs: number[];
}

/**
 * The `p`-th percentile (0..100) of `values`, nearest-rank on a sorted copy.
 *
 * @example
 * ```ts
 * import { percentile } from "./stats.ts";
 * console.log(percentile([1, 2, 3, 4], 50)); // 2
 * ```
 */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) throw new RangeError("percentile of no values");
  if (!(p >= 0 && p <= 100)) throw new RangeError(`bad percentile ${p}`);
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.max(1, Math.ceil((p / 100) * sorted.length));
  return sorted[rank - 1];
}

/**
 * The median of `values` (mean of the middle two for an even count).
 *
 * @example
 * ```ts
 * import { median } from "./stats.ts";
 * console.log(median([4, 1, 3, 2])); // 2.5
 * ```
 */
export function median(values: readonly number[]): number {
  if (values.length === 0) throw new RangeError("median of no values");
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/**
 * Summarizes the runs of one metric.
 *
 * @example
 * ```ts
 * import { summarize } from "./stats.ts";
 * console.log(summarize([10, 12, 11]).spread); // 0.18181818181818182
 * ```
 */
export function summarize(runs: readonly number[]): Summary {
  const m = median(runs);
  const min = Math.min(...runs);
  const max = Math.max(...runs);
  return {
    median: m,
    min,
    max,
    spread: runs.length > 1 && m !== 0 ? (max - min) / Math.abs(m) : 0,
    runs: [...runs],
  };
}
