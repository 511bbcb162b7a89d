/**
 * Modules of this package imported on first use, by a computed specifier.
 *
 * Deno prepares the whole module graph of a program at start, including
 * every `import("./literal.ts")` that may never run: it resolves, reads
 * and hashes each module and npm package behind it, and the memory stays
 * with the process. A literal dynamic import of the MCP server, never
 * taken, cost a process ~10 MiB of RSS; the CLI's literal imports of the
 * daemon, driver, MCP server, hook, bootstrap and conformance runner made
 * every `awp` process (`status`, the driver, the daemon) ~7 MiB heavier.
 * A computed specifier is resolved only when the import runs.
 *
 * `deno compile` includes only what it can see: every path here is passed
 * to it with `--include` (the `compile` task; `tests/peer/lazy_import_test.ts`
 * fails when one is missing).
 *
 * @example
 * ```ts
 * import { lazyImport } from "./lazy_import.ts";
 * const m = await lazyImport<typeof import("../wire/error_text.ts")>(
 *   "wire/error_text.ts",
 * );
 * console.log(m.errorText(new Error("x"))); // x
 * ```
 *
 * @module
 */

/** The package root, from which {@linkcode LAZY_MODULES} are resolved. */
const ROOT = new URL("../", import.meta.url);
/**
 * Running from the generated bundle (`cli/process_bundle.ts`): this code is
 * then in a `.js` file at the bundle's root, and each module named here is
 * the bundle's entry at the same path, with `.js`.
 */
const BUNDLED = import.meta.url.endsWith(".js");

/**
 * The modules loaded through {@linkcode lazyImport} in the package's own
 * code, relative to the package root.
 *
 * @example
 * ```ts
 * import { LAZY_MODULES } from "./lazy_import.ts";
 * console.log(LAZY_MODULES.includes("cli/driver.ts")); // true
 * ```
 */
export const LAZY_MODULES: readonly string[] = [
  "cli/daemon.ts",
  "cli/driver.ts",
  "cli/mcp_server.ts",
  "cli/hook.ts",
  "cli/bootstrap.ts",
  "conform/cli.ts",
  "samvad/samvad_agent.ts",
  "samvad/daemon_op.ts",
  "web/serve_dashboard.ts",
];

/**
 * The URL of this package's module at `path` (relative to the package
 * root): the TypeScript source, or its entry in the generated bundle when
 * this code runs from it.
 *
 * @example
 * ```ts
 * import { packageModuleUrl } from "./lazy_import.ts";
 * console.log(packageModuleUrl("cli/hook.ts").pathname.endsWith("/cli/hook.ts")); // true
 * ```
 */
export function packageModuleUrl(path: string): URL {
  return BUNDLED
    ? new URL(path.replace(/\.ts$/, ".js"), import.meta.url)
    : new URL(path, ROOT);
}

/**
 * Imports the module at `path` (relative to the package root) when called,
 * without adding it to the graph Deno prepares at start. Type it with
 * `typeof import(...)`, which costs nothing at run time.
 *
 * @example
 * ```ts
 * import { lazyImport } from "./lazy_import.ts";
 * const { formatKey } = await lazyImport<
 *   typeof import("../wire/key_text.ts")
 * >("wire/key_text.ts");
 * console.log(formatKey(new Uint8Array(32)).startsWith("ed25519:")); // true
 * ```
 */
export function lazyImport<T>(path: string): Promise<T> {
  return import(packageModuleUrl(path).href);
}
