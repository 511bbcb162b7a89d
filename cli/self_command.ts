/**
 * How this program runs itself again: for the background daemon and for
 * the one-time re-execution with `--unstable-kv`.
 *
 * @module
 */

/**
 * V8 flags for every process this program starts: a young generation of at
 * most 2 MiB a semi-space. By default V8 grows it to 32 MiB a semi-space
 * (64 MiB committed) when many objects survive a scavenge, as a burst of
 * queued msgs makes them; capped, a 2,000-msg burst peaks 30–40 MiB lower
 * in RSS on each side at the same CPU per msg (bench/README.md, "burst").
 * And an old generation grown 1.5× the live heap after each full GC, not
 * V8's up to 4× (a large-heap default): a burst's promoted garbage is then
 * collected at ~20 MiB of old space, not at ~40–55 (bench/README.md,
 * "burst2": 15–25 MiB lower peaks; not a ceiling, unlike
 * `--max-old-space-size`).
 *
 * @example
 * ```ts
 * import { V8_MEMORY_FLAGS } from "./self_command.ts";
 * console.log(V8_MEMORY_FLAGS.startsWith("--v8-flags=")); // true
 * ```
 */
export const V8_MEMORY_FLAGS =
  "--v8-flags=--max-semi-space-size=2,--heap-growing-percent=50";

/**
 * `deno run` flags for every process this program starts: KV, and xstate's
 * ES build (its default `import` entry is a CommonJS wrapper, whose loading
 * brings in Deno's Node compatibility layer, ~10 MiB of RSS per process).
 *
 * @example
 * ```ts
 * import { DENO_RUN_FLAGS } from "./self_command.ts";
 * console.log(DENO_RUN_FLAGS.includes("--unstable-kv")); // true
 * ```
 */
export const DENO_RUN_FLAGS: readonly string[] = [
  "-A",
  "--unstable-kv",
  "--conditions=module",
  V8_MEMORY_FLAGS,
];

/**
 * `deno run` flags for the generated bundle (`cli/process_bundle.ts`): it
 * needs no `deno.json` or lock file (its npm packages are inlined), and a
 * process that skips looking for them (their npm set-up) is ~2 MiB smaller.
 *
 * @example
 * ```ts
 * import { BUNDLE_RUN_FLAGS } from "./self_command.ts";
 * console.log(BUNDLE_RUN_FLAGS.includes("--no-config")); // true
 * ```
 */
export const BUNDLE_RUN_FLAGS: readonly string[] = [
  "-A",
  "--unstable-kv",
  "--no-config",
  "--no-lock",
  V8_MEMORY_FLAGS,
];

/**
 * The executable and arguments that run this program with `args`: the
 * compiled binary itself, or `deno run` with {@linkcode DENO_RUN_FLAGS} (for
 * the bundle: {@linkcode BUNDLE_RUN_FLAGS}) and the main module.
 *
 * @example
 * ```ts
 * import { selfCommand } from "./self_command.ts";
 * const { args } = selfCommand(["version"]);
 * console.log(args.at(-1)); // "version"
 * ```
 */
export function selfCommand(
  args: readonly string[],
): { command: string; args: string[] } {
  if (Deno.build.standalone) {
    return { command: Deno.execPath(), args: [...args] };
  }
  const flags = runsFromBundle() ? BUNDLE_RUN_FLAGS : DENO_RUN_FLAGS;
  return {
    command: Deno.execPath(),
    args: ["run", ...flags, Deno.mainModule, ...args],
  };
}

/** True when the main module is the generated bundle's (it has a stamp). */
function runsFromBundle(): boolean {
  if (!Deno.mainModule.endsWith(".js")) return false;
  try {
    return Deno.statSync(new URL("stamp.json", Deno.mainModule)).isFile;
  } catch {
    return false;
  }
}

/**
 * Environment for every process this program starts: no Deno update check.
 * Each `deno` process otherwise looks up `dl.deno.land` ~0.75 s after start
 * (a DNS query and a TLS dial from a daemon meant to sit idle; on machines
 * without internet access it only fails).
 *
 * @example
 * ```ts
 * import { CHILD_ENV } from "./self_command.ts";
 * console.log(CHILD_ENV.DENO_NO_UPDATE_CHECK); // "1"
 * ```
 */
export const CHILD_ENV: Readonly<Record<string, string>> = {
  DENO_NO_UPDATE_CHECK: "1",
};

/**
 * Set in the environment of a re-executed process, so it happens once.
 *
 * @example
 * ```ts
 * import { REEXEC_ENV } from "./self_command.ts";
 * console.log(REEXEC_ENV); // "AWP_REEXECUTED"
 * ```
 */
export const REEXEC_ENV = "AWP_REEXECUTED";

/**
 * True when Deno KV can be opened in this process.
 *
 * @example
 * ```ts
 * import { kvAvailable } from "./self_command.ts";
 * console.log(typeof kvAvailable()); // "boolean"
 * ```
 */
export function kvAvailable(): boolean {
  return typeof (Deno as { openKv?: unknown }).openKv === "function";
}

/**
 * Re-runs this program with `--unstable-kv` when Deno KV is missing, once
 * (guarded by {@link REEXEC_ENV}), with stdio inherited. Resolves with the
 * child's exit code, or `undefined` when no re-execution is needed or
 * possible.
 *
 * @example
 * ```ts
 * import { reexecWithKv } from "./self_command.ts";
 * // With KV available (deno.json turns it on) nothing happens:
 * console.log(await reexecWithKv(["version"])); // undefined
 * ```
 */
export async function reexecWithKv(
  args: readonly string[],
): Promise<number | undefined> {
  if (
    kvAvailable() || Deno.env.get(REEXEC_ENV) === "1" || Deno.build.standalone
  ) return undefined;
  const { command, args: argv } = selfCommand(args);
  try {
    const child = new Deno.Command(command, {
      args: argv,
      env: { ...CHILD_ENV, [REEXEC_ENV]: "1" },
      stdin: "inherit",
      stdout: "inherit",
      stderr: "inherit",
    }).spawn();
    const forward = (sig: Deno.Signal) => () => {
      try {
        child.kill(sig);
      } catch { /* gone */ }
    };
    const onInt = forward("SIGINT");
    const onTerm = forward("SIGTERM");
    Deno.addSignalListener("SIGINT", onInt);
    Deno.addSignalListener("SIGTERM", onTerm);
    const status = await child.status;
    Deno.removeSignalListener("SIGINT", onInt);
    Deno.removeSignalListener("SIGTERM", onTerm);
    return status.code;
  } catch {
    return undefined;
  }
}
