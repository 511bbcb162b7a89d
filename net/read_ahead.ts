/**
 * A socket's read loop that keeps reading while its owner works on what it
 * was handed: the reads of a burst pile up in the other of two buffers and
 * go to the owner together once it is done, so the sender is not stopped
 * by a small kernel buffer (a Unix socket holds ~200 KB) and a busy owner
 * gets fewer, bigger pieces. It reads ahead by at most one buffer
 * (backpressure: a full buffer waits for the owner), and a quiet
 * connection holds one small buffer, smaller still once it idles (a
 * short read after a long wait: a ping).
 *
 * @module
 */

import { errorText } from "../wire/error_text.ts";

/** What {@linkcode readAhead} reads from (a socket's transport). */
export interface ByteSource {
  /** Reads into `p`; resolves with the count, or null at EOF. */
  read(p: Uint8Array): Promise<number | null>;
  /** Closed by its owner: reading stops, and its read errors are no errors. */
  readonly closed: boolean;
}

/** Sizes of {@linkcode readAhead}'s buffers. */
export interface ReadAheadSizes {
  /** A buffer while the peer sends little. */
  idle: number;
  /**
   * A buffer once the connection is idle: after a read shorter than this
   * that waited at least `stillAfterMs` for its bytes (a ping on an idle
   * connection), the loop reads into a buffer of this size, and back into
   * one of `idle` after a read that fills it. Unset: always `idle`.
   */
  still?: number;
  /** See `still`; {@linkcode STILL_AFTER_MS} when unset. */
  stillAfterMs?: number;
  /** A buffer during a burst (from a read that filled its room). */
  burst: number;
  /**
   * Bytes read and not handed over yet, at most (a small line waits behind
   * them): the reads ahead stop there until the owner takes them.
   */
  ahead: number;
}

/**
 * How long a short read must have waited before the loop reads into a
 * `still` buffer: a busy connection's reads come sooner (and keep reading
 * together what was written together), an idle one's pings far later.
 */
export const STILL_AFTER_MS = 5_000;

/** What the owner of a {@linkcode readAhead} loop is told. */
export interface ReadAheadHandlers {
  /**
   * Bytes read, in order; a view valid until the returned promise settles.
   * The next piece comes only after that.
   */
  onData(chunk: Uint8Array): void | Promise<void>;
  /**
   * Called once, after every piece read was handed over: at EOF, on a
   * read error (`error`), or once the source is closed (no error).
   */
  onEnd(error?: Error): void;
}

/** One of the two buffers of a burst, filled from its start. */
interface Slab {
  bytes: Uint8Array;
  /** Bytes read into it so far. */
  used: number;
  /** Bytes of it handed over (from 0); the rest up to `used` is queued. */
  given: number;
}

/** How a burst ended: quiet again (go on reading), or the end. */
type BurstEnd = { ended: false } | { ended: true; error?: Error };

/**
 * Runs the read loop of `source` until EOF, an error or its close;
 * resolves after `onEnd`. Errors thrown by `onData` end it too (as a read
 * error would, unless closed).
 *
 * @example
 * ```ts
 * import { readAhead } from "./read_ahead.ts";
 * const parts = [new Uint8Array([1, 2]), new Uint8Array([3])];
 * const source = {
 *   closed: false,
 *   read(p: Uint8Array) {
 *     const next = parts.shift();
 *     if (!next) return Promise.resolve(null);
 *     p.set(next);
 *     return Promise.resolve(next.length);
 *   },
 * };
 * const got: number[] = [];
 * await readAhead(source, { idle: 16, burst: 64, ahead: 64 }, {
 *   onData: (c) => void got.push(...c),
 *   onEnd: () => {},
 * });
 * console.log(got); // [1, 2, 3]
 * ```
 */
export async function readAhead(
  source: ByteSource,
  sizes: ReadAheadSizes,
  handlers: ReadAheadHandlers,
): Promise<void> {
  // Quiet: one small buffer, read again once the owner is done with it
  // (an idle connection holds only this and one pending read).
  let buffer = new Uint8Array(sizes.idle);
  const still = sizes.still ?? sizes.idle;
  const stillAfterMs = sizes.stillAfterMs ?? STILL_AFTER_MS;
  let error: Error | undefined;
  try {
    while (!source.closed) {
      const asked = still < sizes.idle ? performance.now() : 0;
      const n = await source.read(buffer);
      if (n === null) break;
      if (buffer.length < sizes.idle) {
        // Still: a read that fills it means data flows again; grow (no
        // burst for a line a little longer than a ping).
        await handlers.onData(buffer.subarray(0, n));
        if (n === buffer.length) buffer = new Uint8Array(sizes.idle);
        continue;
      }
      if (n < buffer.length) {
        const idle = n < still && performance.now() - asked >= stillAfterMs;
        await handlers.onData(buffer.subarray(0, n));
        if (idle) buffer = new Uint8Array(still);
        continue;
      }
      // A read that filled it: a burst, read ahead until quiet again.
      const end = await burst(source, sizes, handlers, buffer);
      if (end.ended) {
        error = end.error;
        break;
      }
    }
  } catch (e) {
    // Reads interrupted by our own close are a normal end.
    if (!source.closed) error = asError(e);
  }
  try {
    handlers.onEnd(error);
  } catch { /* the owner's problem; never crash the loop */ }
}

/**
 * A burst, from the quiet buffer `first` that a read filled: reads go on
 * into two big buffers in turn while the owner takes what came before.
 * Returns once a read is small and all was handed over (or at the end).
 */
async function burst(
  source: ByteSource,
  sizes: ReadAheadSizes,
  handlers: ReadAheadHandlers,
  first: Uint8Array,
): Promise<BurstEnd> {
  let fill: Slab = slab(sizes.burst);
  let other: Slab | undefined = { bytes: first, used: first.length, given: 0 };
  /** Pieces read and not handed over yet, in order (ends in a slab). */
  const queue: Array<{ slab: Slab; end: number }> = [
    { slab: other, end: first.length },
  ];
  let held: Slab | undefined;
  type Step =
    | { kind: "read"; slab: Slab; n: number | null; error?: unknown }
    | { kind: "owned"; error?: unknown; threw: boolean };
  let reading: Promise<Step> | undefined;
  let owning: Promise<Step> | undefined;
  let quiet = false;
  let end: BurstEnd | undefined;
  /** Bytes queued, not handed over yet (bounded by `sizes.ahead`). */
  let queued = first.length;

  const consumed = (s: Slab) => s !== held && s.given === s.used;

  /** A slab with room to read into, or undefined (wait for the owner). */
  const room = (): Slab | undefined => {
    // All handed over and done with: read from its start again.
    if (consumed(fill)) {
      fill.used = fill.given = 0;
      return fill;
    }
    if (fill.bytes.length - fill.used >= sizes.idle) return fill;
    // Full: the other one, once nothing in it is queued or held.
    if (other !== undefined && !consumed(other)) return undefined;
    const next = other?.bytes.length === sizes.burst
      ? other
      : slab(sizes.burst);
    other = fill;
    next.used = next.given = 0;
    fill = next;
    return fill;
  };

  for (;;) {
    // Closed by us: nothing more is read or handed over.
    if (!end && source.closed) {
      end = { ended: true };
      queue.length = 0;
      queued = 0;
    }
    const allowed = sizes.ahead - queued;
    if (!reading && !end && !quiet && allowed >= sizes.idle) {
      const target = room();
      if (target) {
        const to = Math.min(target.bytes.length, target.used + allowed);
        reading = source.read(target.bytes.subarray(target.used, to)).then(
          (n): Step => ({ kind: "read", slab: target, n }),
          (e): Step => ({ kind: "read", slab: target, n: null, error: e }),
        );
      }
    }
    if (!owning && queue.length > 0) {
      const next = queue.shift()!;
      let to = next.end;
      // Later reads into the same slab go with it: one bigger piece.
      while (queue.length > 0 && queue[0].slab === next.slab) {
        to = queue.shift()!.end;
      }
      const s = next.slab;
      const piece = s.bytes.subarray(s.given, to);
      queued -= piece.length;
      s.given = to;
      held = s;
      owning = (async (): Promise<Step> => {
        try {
          await handlers.onData(piece);
          return { kind: "owned", threw: false };
        } catch (e) {
          return { kind: "owned", error: e, threw: true };
        }
      })();
    }
    // Once ended, a pending read is not waited for (the socket may stay
    // open and quiet); what was read is still handed over.
    const waits: Array<Promise<Step>> = [];
    if (owning) waits.push(owning);
    if (reading && !end) waits.push(reading);
    if (waits.length === 0) break;
    const step = await Promise.race(waits);
    if (step.kind === "owned") {
      owning = undefined;
      held = undefined;
      if (step.threw) {
        queue.length = 0;
        queued = 0;
        end = source.closed ? { ended: true } : {
          ended: true,
          error: end?.ended ? end.error : asError(step.error),
        };
      }
      continue;
    }
    reading = undefined;
    if (step.n === null) {
      // Reads interrupted by our own close are a normal end.
      end ??= step.error === undefined || source.closed
        ? { ended: true }
        : { ended: true, error: asError(step.error) };
      continue;
    }
    step.slab.used += step.n;
    queued += step.n;
    queue.push({ slab: step.slab, end: step.slab.used });
    // A small read with nothing else waiting: quiet again.
    if (step.n < sizes.idle && queue.length === 1 && !held) quiet = true;
  }
  // A read may still be pending after the owner's throw or our close.
  void reading?.catch(() => {});
  return end ?? { ended: false };
}

function slab(size: number): Slab {
  return { bytes: new Uint8Array(size), used: 0, given: 0 };
}

function asError(e: unknown): Error {
  return e instanceof Error ? e : new Error(errorText(e));
}
