/**
 * Whether a path exists, for tests checking files appear or go away.
 *
 * @module
 */

/**
 * True when `path` exists. Follows symlinks unless `lstat` is set (then a
 * dangling link counts as existing).
 *
 * @example
 * ```ts
 * import { pathExists } from "./path_exists.ts";
 * const dir = await Deno.makeTempDir();
 * const here = await pathExists(dir);
 * await Deno.remove(dir);
 * if (!here || await pathExists(dir)) throw new Error("exists");
 * ```
 */
export async function pathExists(
  path: string,
  options: { lstat?: boolean } = {},
): Promise<boolean> {
  try {
    await (options.lstat ? Deno.lstat(path) : Deno.stat(path));
    return true;
  } catch {
    return false;
  }
}
