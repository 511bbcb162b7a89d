/**
 * A small command-line flag parser: `--flag value`, `--flag=value`, short
 * aliases, booleans and repeatable flags, with one-line usage errors.
 *
 * Our own rather than `node:util`'s `parseArgs` because a key prefix that
 * begins with `-` must still work as a positional argument (the reference
 * CLI allows it), and every mistake must come back as one clear line.
 *
 * @module
 */

/** Shortest key prefix that names a peer (as `resolvePeer` requires). */
const KEY_PREFIX_MIN = 4;

/** An unknown flag that could be a key: how to pass it as one. */
function keyHint(word: string): string {
  if (!/^-[A-Za-z0-9_-]+$/.test(word)) return "";
  return ` (a key that begins with "-": write ed25519:${word}, or put -- before it)`;
}

/** A bad command line: exit code 2 with one line. */
export class UsageError extends Error {
  /**
   * @example
   * ```ts
   * import { UsageError } from "./args.ts";
   * console.log(new UsageError("missing peer").message); // "missing peer"
   * ```
   */
  constructor(message: string) {
    super(message);
    this.name = "UsageError";
  }
}

/** How one flag is spelled and what it holds. */
export interface FlagSpec {
  /** Long name without dashes, e.g. `thread`. */
  name: string;
  /** Single-letter alias without the dash, e.g. `t`. */
  short?: string;
  /**
   * `boolean` takes no value, `string` one (last wins), `list` repeats,
   * `optional` takes a value only as `--flag=VALUE` (alone it is "").
   */
  type: "boolean" | "string" | "list" | "optional";
}

/** The parsed command line. */
export class Args {
  readonly #values: Map<string, string | boolean | string[]>;
  /** Arguments that are not flags, in order. */
  readonly positionals: string[];

  /**
   * @example
   * ```ts
   * import { Args } from "./args.ts";
   * const args = new Args(new Map([["json", true]]), ["peer"]);
   * console.log(args.bool("json"), args.positionals); // true [ "peer" ]
   * ```
   */
  constructor(
    values: Map<string, string | boolean | string[]>,
    positionals: string[],
  ) {
    this.#values = values;
    this.positionals = positionals;
  }

  /** A string flag's value, if given. */
  string(name: string): string | undefined {
    const v = this.#values.get(name);
    return typeof v === "string" ? v : undefined;
  }

  /** True when a boolean flag was given. */
  bool(name: string): boolean {
    return this.#values.get(name) === true;
  }

  /** Every value of a repeatable flag, in order. */
  list(name: string): string[] {
    const v = this.#values.get(name);
    return Array.isArray(v) ? [...v] : [];
  }

  /** True when the flag was given at all. */
  has(name: string): boolean {
    return this.#values.has(name);
  }
}

/**
 * Flags every command accepts.
 *
 * @example
 * ```ts
 * import { COMMON_FLAGS } from "./args.ts";
 * console.log(COMMON_FLAGS.map((f) => f.name)); // [ "home", "json", "help" ]
 * ```
 */
export const COMMON_FLAGS: readonly FlagSpec[] = [
  { name: "home", type: "string" },
  { name: "json", type: "boolean" },
  { name: "help", short: "h", type: "boolean" },
];

/**
 * Parses `argv` against `specs` (plus {@link COMMON_FLAGS}). `--` ends the
 * flags; `-` alone is a positional (stdin). An unknown single-dash word of
 * four or more characters is kept as a positional, so a key prefix that
 * starts with `-` still names a peer; a shorter one's error says how to
 * pass it (after `--`, or as `ed25519:-…`).
 *
 * @example
 * ```ts
 * import { parseArgs } from "./args.ts";
 * const a = parseArgs(["--thread", "t1", "-f", "a", "--file=b", "hi"], [
 *   { name: "thread", short: "t", type: "string" },
 *   { name: "file", short: "f", type: "list" },
 * ]);
 * console.log(a.string("thread"), a.list("file"), a.positionals); // t1 [ "a", "b" ] [ "hi" ]
 * ```
 */
export function parseArgs(
  argv: readonly string[],
  specs: readonly FlagSpec[],
): Args {
  const all = [...COMMON_FLAGS, ...specs];
  const byLong = new Map(all.map((s) => [s.name, s]));
  const byShort = new Map(
    all.filter((s) => s.short).map((s) => [s.short as string, s]),
  );
  const values = new Map<string, string | boolean | string[]>();
  const positionals: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const word = argv[i];
    if (word === "--") {
      positionals.push(...argv.slice(i + 1));
      break;
    }
    if (word === "-" || !word.startsWith("-")) {
      positionals.push(word);
      continue;
    }
    let spec: FlagSpec | undefined;
    let inline: string | undefined;
    if (word.startsWith("--")) {
      const eq = word.indexOf("=");
      const name = eq === -1 ? word.slice(2) : word.slice(2, eq);
      inline = eq === -1 ? undefined : word.slice(eq + 1);
      spec = byLong.get(name);
      if (!spec) {
        throw new UsageError(`unknown flag --${name}${keyHint(word)}`);
      }
    } else {
      spec = byShort.get(word.slice(1));
      if (!spec) {
        if (word.length >= KEY_PREFIX_MIN) {
          positionals.push(word);
          continue;
        }
        throw new UsageError(`unknown flag ${word}${keyHint(word)}`);
      }
    }
    if (spec.type === "optional") {
      values.set(spec.name, inline ?? "");
      continue;
    }
    if (spec.type === "boolean") {
      if (inline !== undefined && inline !== "true" && inline !== "false") {
        throw new UsageError(`flag --${spec.name} takes no value`);
      }
      values.set(spec.name, inline !== "false");
      continue;
    }
    let value = inline;
    if (value === undefined) {
      if (i + 1 >= argv.length) {
        throw new UsageError(`flag --${spec.name} needs a value`);
      }
      value = argv[++i];
    }
    if (spec.type === "string") values.set(spec.name, value);
    else {
      const prev = values.get(spec.name);
      values.set(spec.name, [...(Array.isArray(prev) ? prev : []), value]);
    }
  }
  return new Args(values, positionals);
}

/**
 * Parses a duration: `500ms`, `10s`, `2m`, `1h`, `1h30m`, or a plain number
 * of seconds. Returns milliseconds; throws {@link UsageError} on bad input.
 *
 * @example
 * ```ts
 * import { parseDuration } from "./args.ts";
 * console.log(parseDuration("1m30s"), parseDuration("2"), parseDuration("250ms")); // 90000 2000 250
 * ```
 */
export function parseDuration(text: string): number {
  const t = text.trim();
  if (/^\d+(\.\d+)?$/.test(t)) return Math.round(Number(t) * 1000);
  const re = /(\d+(?:\.\d+)?)(ms|s|m|h|d)/gy;
  const unit: Record<string, number> = {
    ms: 1,
    s: 1000,
    m: 60_000,
    h: 3_600_000,
    d: 86_400_000,
  };
  let total = 0;
  let pos = 0;
  let match: RegExpExecArray | null;
  while ((match = re.exec(t)) !== null) {
    total += Number(match[1]) * unit[match[2]];
    pos = re.lastIndex;
  }
  if (t === "" || pos !== t.length) {
    throw new UsageError(`bad duration "${text}": use e.g. 500ms, 10s, 2m, 1h`);
  }
  return Math.round(total);
}
