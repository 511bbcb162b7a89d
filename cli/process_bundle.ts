/**
 * The generated JavaScript bundle that the processes awp starts run from
 * (`dist/bundle/`: the `awp` CLI, the daemon, the driver, and the modules
 * they load on demand): `deno bundle` with code splitting, minified. Not
 * with `--keep-names`: its `__name(fn, "…")` wrappers give every closure
 * an own `name` property, +7.5 KiB of heap per idle connection.
 *
 * Why: Deno runs a TypeScript module as emitted JavaScript with an inline
 * source map that embeds the source, and V8 keeps every module's whole
 * text; npm packages bring Deno's npm resolution with them. The same
 * program as a few plain JavaScript files, npm packages inlined, saves an
 * idle driver ~8 MiB of RSS (`bench/README.md`, section "pack").
 *
 * The bundle is generated, never committed (it would conflict on every
 * merge and be stale after it): `deno task bundle` builds it when the
 * sources changed (a SHA-256 of every source file, recorded in
 * `dist/bundle/stamp.json`) and does nothing otherwise; `deno task start`
 * and `deno task bench` run it first. `--check` only reports staleness
 * (exit 1). Library users import `mod.ts` as before; `deno run -A cli.ts`
 * and `deno compile` still run the TypeScript.
 *
 * ```sh
 * deno task bundle           # build dist/bundle/ when stale
 * deno task bundle --check   # exit 1 when stale or missing
 * deno run -A --unstable-kv --no-config --no-lock dist/bundle/cli.js status
 * ```
 *
 * @module
 */

import { LAZY_MODULES } from "../peer/lazy_import.ts";
import { BUNDLE_RUN_FLAGS, selfCommand } from "./self_command.ts";
import { denoBundle } from "./deno_bundle.ts";

/** The repository root (cli/..). */
const ROOT = new URL("../", import.meta.url);

/**
 * The bundle's entry modules, relative to the root: the CLI and every
 * module it loads on demand (`peer/lazy_import.ts`), each its own file in
 * the bundle at the same path with `.js`.
 *
 * @example
 * ```ts
 * import { BUNDLE_ENTRIES } from "./process_bundle.ts";
 * console.log(BUNDLE_ENTRIES.includes("cli/driver.ts")); // true
 * ```
 */
export const BUNDLE_ENTRIES: readonly string[] = ["cli.ts", ...LAZY_MODULES];

/**
 * Folders and files (relative to the root) whose contents the bundle is
 * built from: a change to any file in them makes the bundle stale (a
 * superset of the entries' module graphs, which
 * `tests/cli/process_bundle_test.ts` checks).
 *
 * @example
 * ```ts
 * import { BUNDLE_SOURCES } from "./process_bundle.ts";
 * console.log(BUNDLE_SOURCES.includes("wire")); // true
 * ```
 */
export const BUNDLE_SOURCES: readonly string[] = [
  "actors",
  "cli",
  "conform",
  "extensions",
  "inspector",
  "net",
  "peer",
  "profile",
  "samvad",
  "schema",
  "storage",
  "web",
  "wire",
  "cli.ts",
  "mod.ts",
  "deno.json",
  "deno.lock",
];

/** What `stamp.json` in a bundle holds. */
export interface BundleStamp {
  /** {@link sourceHash} of the sources it was built from. */
  sources: string;
  /** The Deno that built it (its bundler's output may differ by version). */
  deno: string;
}

/**
 * The bundle's folder under `root` (default: this repository).
 *
 * @example
 * ```ts
 * import { bundleDir } from "./process_bundle.ts";
 * console.log(bundleDir().pathname.endsWith("/dist/bundle/")); // true
 * ```
 */
export function bundleDir(root: URL = ROOT): URL {
  return new URL("dist/bundle/", root);
}

async function* sourceFiles(dir: URL, rel: string): AsyncGenerator<string> {
  let info: Deno.FileInfo;
  try {
    info = await Deno.stat(new URL(rel, dir));
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return;
    throw e;
  }
  if (info.isFile) {
    yield rel;
    return;
  }
  const names: string[] = [];
  for await (const e of Deno.readDir(new URL(rel, dir))) names.push(e.name);
  for (const name of names.sort()) {
    yield* sourceFiles(dir, `${rel}/${name}`);
  }
}

/**
 * A SHA-256 (hex) over the path and contents of every source file under
 * `root`, in a fixed order, plus the Deno version.
 *
 * @example
 * ```ts
 * import { sourceHash } from "./process_bundle.ts";
 * console.log((await sourceHash()).length); // 64
 * ```
 */
export async function sourceHash(root: URL = ROOT): Promise<string> {
  const enc = new TextEncoder();
  const parts: Uint8Array[] = [enc.encode(`deno ${Deno.version.deno}\n`)];
  for (const top of BUNDLE_SOURCES) {
    for await (const rel of sourceFiles(root, top)) {
      const bytes = await Deno.readFile(new URL(rel, root));
      parts.push(enc.encode(`\n${rel} ${bytes.length}\n`), bytes);
    }
  }
  const all = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    all.set(p, at);
    at += p.length;
  }
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", all));
  return Array.from(digest, (b) => b.toString(16).padStart(2, "0")).join("");
}

/**
 * The stamp of the bundle in `dir`, or undefined when there is none.
 *
 * @example
 * ```ts
 * import { readStamp } from "./process_bundle.ts";
 * console.log(await readStamp(new URL("file:///nonexistent/"))); // undefined
 * ```
 */
export async function readStamp(dir: URL): Promise<BundleStamp | undefined> {
  try {
    return JSON.parse(await Deno.readTextFile(new URL("stamp.json", dir)));
  } catch {
    return undefined;
  }
}

/**
 * True when the bundle under `root` exists and was built from the sources
 * there as they are now.
 *
 * @example
 * ```ts ignore
 * import { bundleFresh } from "./process_bundle.ts";
 * console.log(typeof await bundleFresh()); // "boolean"
 * ```
 */
export async function bundleFresh(root: URL = ROOT): Promise<boolean> {
  const stamp = await readStamp(bundleDir(root));
  return stamp !== undefined && stamp.sources === await sourceHash(root);
}

/**
 * Builds the bundle of `root`'s sources into `out` (replaced whole; built
 * beside it first, so a failed build leaves the old one). Throws with
 * `deno bundle`'s message when it fails.
 *
 * @example
 * ```ts ignore
 * import { buildBundle, bundleDir } from "./process_bundle.ts";
 * await buildBundle(bundleDir());
 * ```
 */
export async function buildBundle(
  out: URL,
  root: URL = ROOT,
): Promise<BundleStamp> {
  const sources = await sourceHash(root);
  const parent = new URL("../", out);
  await Deno.mkdir(parent, { recursive: true });
  const tmp = await Deno.makeTempDir({
    dir: parent.pathname,
    prefix: ".bundle-",
  });
  try {
    await denoBundle([
      "--platform",
      "deno",
      "--code-splitting",
      "--minify",
      "--outdir",
      tmp,
      ...BUNDLE_ENTRIES.map((e) => new URL(e, root).pathname),
    ], root.pathname);
    const stamp: BundleStamp = { sources, deno: Deno.version.deno };
    await Deno.writeTextFile(`${tmp}/stamp.json`, JSON.stringify(stamp));
    await Deno.remove(out, { recursive: true }).catch(() => {});
    try {
      await Deno.rename(tmp, out);
    } catch (e) {
      // Another build (a test, the bench) finished first: keep its result.
      if ((await readStamp(out))?.sources !== sources) throw e;
      await Deno.remove(tmp, { recursive: true });
    }
    return stamp;
  } catch (e) {
    await Deno.remove(tmp, { recursive: true }).catch(() => {});
    throw e;
  }
}

/**
 * Builds the bundle under `root` unless it is fresh; resolves with true
 * when it built.
 *
 * @example
 * ```ts ignore
 * import { ensureBundle } from "./process_bundle.ts";
 * await ensureBundle();
 * ```
 */
export async function ensureBundle(root: URL = ROOT): Promise<boolean> {
  if (await bundleFresh(root)) return false;
  await buildBundle(bundleDir(root), root);
  return true;
}

/**
 * How to start this program again with `args` (the daemon `awp up`
 * starts): from the bundle when this program is this repository's
 * `mod.ts` or `cli.ts` and the bundle is fresh (built from the sources as
 * they are now), else as {@linkcode selfCommand} says (the same program;
 * a compiled binary, or a bundle that already runs, restart themselves).
 *
 * @example
 * ```ts ignore
 * import { selfCommandPreferBundle } from "./process_bundle.ts";
 * const { command, args } = await selfCommandPreferBundle(["version"]);
 * ```
 */
export async function selfCommandPreferBundle(
  args: readonly string[],
): Promise<{ command: string; args: string[] }> {
  const main = Deno.mainModule;
  const ours = [new URL("mod.ts", ROOT).href, new URL("cli.ts", ROOT).href];
  if (
    !Deno.build.standalone && ours.includes(main) &&
    await bundleFresh().catch(() => false)
  ) {
    return {
      command: Deno.execPath(),
      args: [
        "run",
        ...BUNDLE_RUN_FLAGS,
        new URL("cli.js", bundleDir()).pathname,
        ...args,
      ],
    };
  }
  return selfCommand(args);
}

if (import.meta.main) {
  if (Deno.args.includes("--check")) {
    const fresh = await bundleFresh();
    if (!fresh) {
      console.error(
        "dist/bundle/ is missing or stale: run `deno task bundle`",
      );
    }
    Deno.exit(fresh ? 0 : 1);
  }
  const built = await ensureBundle();
  if (!Deno.args.includes("--quiet")) {
    console.error(
      built ? "built dist/bundle/" : "dist/bundle/ is up to date",
    );
  }
}
