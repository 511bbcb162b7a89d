/**
 * Temp dirs that a test always removes, pass or fail.
 *
 * @module
 */

/** Options of {@link withTempDir}. */
export interface TempDirOptions {
  /** Name prefix of the dir under the system temp dir. */
  prefix?: string;
  /** Resolve symlinks in the path first (e.g. for path-confinement checks). */
  realPath?: boolean;
}

/**
 * Runs `fn` with a fresh temp dir and removes the dir (recursively) after.
 *
 * @example
 * ```ts
 * import { withTempDir } from "./temp_dir.ts";
 * let seen = "";
 * await withTempDir(async (dir) => {
 *   seen = dir;
 *   await Deno.writeTextFile(`${dir}/a.txt`, "a");
 * }, { prefix: "awp-example-" });
 * try {
 *   await Deno.stat(seen);
 *   throw new Error("left behind");
 * } catch (e) {
 *   if (!(e instanceof Deno.errors.NotFound)) throw e;
 * }
 * ```
 */
export async function withTempDir(
  fn: (dir: string) => Promise<void>,
  options: TempDirOptions = {},
): Promise<void> {
  const made = await Deno.makeTempDir({ prefix: options.prefix });
  const dir = options.realPath ? await Deno.realPath(made) : made;
  try {
    await fn(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}
