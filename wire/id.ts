/**
 * Message ids: ULIDs that strictly increase per sender (NOTES.md item 3).
 *
 * @module
 */

const ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
const ALPHABET_CODES: readonly number[] = [...ALPHABET].map((c) =>
  c.charCodeAt(0)
);
const DECODE: ReadonlyMap<string, number> = new Map(
  [...ALPHABET].map((c, i) => [c, i]),
);
const TIME_CHARS = 10;
const RANDOM_CHARS = 16;
const ID_LENGTH = TIME_CHARS + RANDOM_CHARS;
const MAX_TIME = 2 ** 48 - 1;

function decodeTime(id: string): number | undefined {
  if (id.length !== ID_LENGTH) return undefined;
  let time = 0;
  for (let i = 0; i < ID_LENGTH; i++) {
    const digit = DECODE.get(id[i]);
    if (digit === undefined) return undefined;
    if (i < TIME_CHARS) time = time * 32 + digit;
  }
  return time > MAX_TIME ? undefined : time;
}

function encodeTime(time: number): string {
  let out = "";
  for (let i = 0; i < TIME_CHARS; i++) {
    out = ALPHABET[time % 32] + out;
    time = Math.floor(time / 32);
  }
  return out;
}

/**
 * The millisecond timestamp of a ULID in canonical (upper case Crockford)
 * form, or undefined when `id` is not one.
 *
 * @example
 * ```ts
 * import { idTime, IdGenerator } from "./id.ts";
 * const id = new IdGenerator({ now: () => 1_700_000_000_000 }).next();
 * console.log(idTime(id)); // 1700000000000
 * ```
 */
export function idTime(id: string): number | undefined {
  return decodeTime(id);
}

/**
 * Issues 26-character ULIDs that strictly increase as strings, in the order
 * they are issued: within one millisecond (the random part is incremented),
 * when the clock steps backwards (the last time is reused), and across
 * restarts when constructed with `last`, the highest id issued before.
 *
 * @example
 * ```ts
 * import { IdGenerator } from "./id.ts";
 * const ids = new IdGenerator();
 * const a = ids.next();
 * const b = ids.next();
 * console.log(a < b, ids.last === b); // true true
 * ```
 */
export class IdGenerator {
  #now: () => number;
  #time = -1;
  // Random part as base-32 digits, so increments need no bigint.
  #random: number[] = new Array<number>(RANDOM_CHARS).fill(0);
  /** `encodeTime(#timeTextOf)`, kept: many ids share a millisecond. */
  #timeText = "";
  #timeTextOf = -1;
  /** The random part's characters as char codes, reused by every id. */
  #randomCodes: number[] = new Array<number>(RANDOM_CHARS).fill(0);
  #last: string | undefined;

  /**
   * `last` must be a canonical ULID (26 upper case Crockford characters);
   * `skipMs` puts the next id at least that many ms past `last`'s time
   * (ids handed out after `last` but never recorded stay below it); `now`
   * defaults to `Date.now` and exists for tests.
   */
  constructor(
    options: { last?: string; skipMs?: number; now?: () => number } = {},
  ) {
    this.#now = options.now ?? Date.now;
    if (options.last !== undefined) {
      const time = decodeTime(options.last);
      if (time === undefined) {
        throw new TypeError(
          `IdGenerator: last is not a canonical ULID: ${
            JSON.stringify(options.last)
          }`,
        );
      }
      const skip = Math.max(0, Math.floor(options.skipMs ?? 0));
      this.#time = Math.min(time + skip, MAX_TIME);
      this.#random = skip > 0 && this.#time > time
        ? new Array(RANDOM_CHARS).fill(0)
        : [...options.last.slice(TIME_CHARS)].map((c) => DECODE.get(c)!);
      this.#last = options.last;
    }
  }

  /** The last id issued (or given as `last`), if any. */
  get last(): string | undefined {
    return this.#last;
  }

  /** Issues the next id, greater than every id issued before. */
  next(): string {
    const now = Math.floor(this.#now());
    if (!Number.isFinite(now) || now < 0 || now > MAX_TIME) {
      throw new RangeError(`IdGenerator: clock out of ULID range: ${now}`);
    }
    if (now > this.#time) {
      this.#time = now;
      fillRandom(this.#random);
    } else if (!increment(this.#random)) {
      // 80 bits exhausted within one millisecond: borrow the next one.
      if (this.#time >= MAX_TIME) {
        throw new RangeError("IdGenerator: ULID space exhausted");
      }
      this.#time += 1;
      fillRandom(this.#random);
    }
    if (this.#timeTextOf !== this.#time) {
      this.#timeText = encodeTime(this.#time);
      this.#timeTextOf = this.#time;
    }
    // One string for the random part instead of 16 concatenations.
    const codes = this.#randomCodes;
    for (let i = 0; i < RANDOM_CHARS; i++) {
      codes[i] = ALPHABET_CODES[this.#random[i]];
    }
    const id = this.#timeText + String.fromCharCode.apply(null, codes);
    this.#last = id;
    return id;
  }
}

/**
 * Random bytes fetched in bulk: `getRandomValues` is a runtime call (~10 µs
 * here) whatever its size, and every millisecond with a line out took one.
 */
const randomPool = new Uint8Array(4096);
let randomAt = randomPool.length;

/** Overwrites `digits` (RANDOM_CHARS of them) with fresh random ones. */
function fillRandom(digits: number[]): void {
  if (randomAt + RANDOM_CHARS > randomPool.length) {
    crypto.getRandomValues(randomPool);
    randomAt = 0;
  }
  for (let i = 0; i < RANDOM_CHARS; i++) {
    digits[i] = randomPool[randomAt++] & 31;
  }
}

/** Adds one to base-32 digits in place; false on overflow. */
function increment(digits: number[]): boolean {
  for (let i = digits.length - 1; i >= 0; i--) {
    if (digits[i] < 31) {
      digits[i] += 1;
      return true;
    }
    digits[i] = 0;
  }
  return false;
}
