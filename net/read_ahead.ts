/**
 * A socket's read loop that keeps reading while its owner works on what it
 * was handed: the reads of a burst pile up in the other of two buffers and
 * go to the owner together once it is done, so the sender is not stopped
 * by a small kernel buffer (a Unix socket holds ~200 KB) and a busy owner
 * gets fewer, bigger pieces. It reads ahead by at most one buffer
 * (backpressure: a full buffer waits for the owner), and a quiet
 * connection holds one small buffer.
 *
 * @module
 */

import { errorText } from "../wire/error_text.ts";

/** What {@linkcode readAhead} reads from (a `Deno.Conn`). */
export interface ByteSource {
  /** Reads into `p`; resolves with the count, or null at EOF. */
  read(p: Uint8Array): Promise<number | null>;
}

/** Sizes of {@linkcode readAhead}'s buffers. */
export interface ReadAheadSizes {
  /** A buffer while the peer sends little. */
  idle: number;
  /** A buffer during a burst (from a read that filled its room). */
  burst: number;
}

/** What the owner of a {@linkcode readAhead} loop is told. */
export interface ReadAheadHandlers {
  /**
   * Bytes read, in order; a view valid until the returned promise settles.
   * The next piece comes only after that.
   */
  onData(chunk: Uint8Array): void | Promise<void>;
  /**
   * Called once, after every piece read was handed over: at EOF, on a
   * read error (`error`), or once `stopped` said so (no error).
   */
  onEnd(error?: Error): void;
}

/** One of the two buffers, filled from its start. */
interface Slab {
  bytes: Uint8Array;
  /** Bytes read into it so far. */
  used: number;
  /** Bytes of it handed over (from 0); the rest up to `used` is queued. */
  given: number;
}

/**
 * Runs the read loop of `source` until EOF, an error or `stopped()`;
 * resolves after `onEnd`. Errors thrown by `onData` end it too (as a read
 * error would, unless stopped).
 *
 * @example
 * ```ts
 * import { readAhead } from "./read_ahead.ts";
 * const parts = [new Uint8Array([1, 2]), new Uint8Array([3])];
 * const source = {
 *   read(p: Uint8Array) {
 *     const next = parts.shift();
 *     if (!next) return Promise.resolve(null);
 *     p.set(next);
 *     return Promise.resolve(next.length);
 *   },
 * };
 * const got: number[] = [];
 * await readAhead(source, () => false, { idle: 16, burst: 64 }, {
 *   onData: (c) => void got.push(...c),
 *   onEnd: () => {},
 * });
 * console.log(got); // [1, 2, 3]
 * ```
 */
export async function readAhead(
  source: ByteSource,
  stopped: () => boolean,
  sizes: ReadAheadSizes,
  handlers: ReadAheadHandlers,
): Promise<void> {
  let size = sizes.idle;
  let fill: Slab = slab(size);
  let other: Slab | undefined;
  /** Pieces read and not handed over yet, in order (ends in a slab). */
  const queue: Array<{ slab: Slab; end: number }> = [];
  let held: Slab | undefined;
  type Step =
    | { kind: "read"; slab: Slab; n: number | null; error?: unknown }
    | { kind: "owned"; error?: unknown; threw: boolean };
  let reading: Promise<Step> | undefined;
  let owning: Promise<Step> | undefined;
  let ended = false;
  let error: Error | undefined;

  const consumed = (s: Slab) => s !== held && s.given === s.used;

  /** A slab with room to read into, or undefined (wait for the owner). */
  const room = (): Slab | undefined => {
    // All handed over and done with: read from its start again.
    if (consumed(fill)) {
      if (fill.bytes.length !== size) fill = slab(size);
      fill.used = fill.given = 0;
      return fill;
    }
    // Quiet: one buffer, read again once the owner is done with it.
    if (size === sizes.idle) return undefined;
    if (fill.bytes.length - fill.used >= sizes.idle) return fill;
    // Full: the other one, once nothing in it is queued or held.
    if (other !== undefined && !consumed(other)) return undefined;
    const next = other?.bytes.length === size ? other : slab(size);
    other = fill;
    next.used = next.given = 0;
    fill = next;
    return fill;
  };

  for (;;) {
    // Closed by us: nothing more is read or handed over.
    if (!ended && stopped()) {
      ended = true;
      queue.length = 0;
    }
    if (!reading && !ended) {
      const target = room();
      if (target) {
        reading = source.read(target.bytes.subarray(target.used)).then(
          (n): Step => ({ kind: "read", slab: target, n }),
          (e): Step => ({ kind: "read", slab: target, n: null, error: e }),
        );
      }
    }
    if (!owning && queue.length > 0) {
      const first = queue.shift()!;
      let end = first.end;
      // Later reads into the same slab go with it: one bigger piece.
      while (queue.length > 0 && queue[0].slab === first.slab) {
        end = queue.shift()!.end;
      }
      const s = first.slab;
      const piece = s.bytes.subarray(s.given, end);
      s.given = end;
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
    if (reading && !ended) waits.push(reading);
    if (waits.length === 0) break;
    const step = await Promise.race(waits);
    if (step.kind === "owned") {
      owning = undefined;
      held = undefined;
      if (step.threw) {
        ended = true;
        queue.length = 0;
        if (!stopped()) error ??= asError(step.error);
      }
      continue;
    }
    reading = undefined;
    if (step.n === null) {
      ended = true;
      // Reads interrupted by our own close are a normal end.
      if (step.error !== undefined && !stopped()) {
        error ??= asError(step.error);
      }
      continue;
    }
    const s = step.slab;
    // A read that filled a whole buffer: a burst; a small one: quiet again.
    const whole = s.used === 0 && step.n === s.bytes.length;
    s.used += step.n;
    queue.push({ slab: s, end: s.used });
    if (whole) size = sizes.burst;
    else if (step.n < sizes.idle && queue.length === 1 && !held) {
      size = sizes.idle;
      other = undefined;
    }
  }
  // A read may still be pending after the owner's throw or our close.
  void reading?.catch(() => {});
  try {
    handlers.onEnd(error);
  } catch { /* the owner's problem; never crash the loop */ }
}

function slab(size: number): Slab {
  return { bytes: new Uint8Array(size), used: 0, given: 0 };
}

function asError(e: unknown): Error {
  return e instanceof Error ? e : new Error(errorText(e));
}
