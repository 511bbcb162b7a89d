/**
 * `--name VALUE` options of fixture programs.
 *
 * @module
 */

/**
 * The value after `--<name>` in `args` (default: `Deno.args`), if present.
 *
 * @example
 * ```ts
 * import { cliArg } from "./cli_arg.ts";
 * if (cliArg("home", ["--home", "/tmp/a"]) !== "/tmp/a") throw new Error();
 * if (cliArg("listen", ["--home", "/tmp/a"]) !== undefined) throw new Error();
 * ```
 */
export function cliArg(
  name: string,
  args: readonly string[] = Deno.args,
): string | undefined {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : undefined;
}
