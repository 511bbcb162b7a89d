/**
 * The `awp` command: `deno run -A cli.ts status`. Unlike running `mod.ts`
 * (which loads the whole library before the CLI starts), this entry loads
 * only what the command needs: `awp status` talks to the daemon without
 * loading xstate, ajv or Deno KV. `deno task compile` builds from here.
 *
 * @example
 * ```sh
 * deno run -A cli.ts version
 * ```
 *
 * @module
 */

// First: the timers that do not load `node:timers` (cli/core_timers.ts).
import "./cli/use_core_timers.ts";
import { main } from "./cli/main.ts";

if (import.meta.main) Deno.exit(await main(Deno.args));
