/**
 * {@link denoBundle}: runs `deno bundle` (esbuild, fetched from npm on first
 * use) with the given arguments, for the generated bundles
 * (`cli/process_bundle.ts`, `web/build_bundle.ts`).
 *
 * @module
 */

/**
 * Runs `deno bundle --quiet ARGS` in `cwd`; throws with its message when it
 * fails.
 *
 * @example
 * ```ts ignore
 * import { denoBundle } from "./deno_bundle.ts";
 * await denoBundle(["--platform", "deno", "-o", "/tmp/out.js", "mod.ts"]);
 * ```
 */
export async function denoBundle(
  args: readonly string[],
  cwd?: string,
): Promise<void> {
  const { success, stderr } = await new Deno.Command(Deno.execPath(), {
    args: ["bundle", "--quiet", ...args],
    ...(cwd ? { cwd } : {}),
    stdout: "null",
    stderr: "piped",
  }).output();
  if (!success) {
    throw new Error(
      `deno bundle failed: ${new TextDecoder().decode(stderr).trim()}`,
    );
  }
}
