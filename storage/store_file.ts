/**
 * The store's file in the home, checked before Deno KV opens it: created
 * 0600, refused when others can read it, refused when empty or not a
 * database, never replaced quietly; and the home itself, which must be a
 * directory. No Deno KV here, so the CLI can use it without loading the
 * store.
 *
 * @module
 */

/**
 * The store file exists but is not a usable Deno KV database (empty,
 * truncated, or something else). It holds the peer's identity and threads,
 * so it is never replaced quietly: the message names the file and the two
 * ways on (restore it, or start over on purpose with `awp reset`).
 *
 * @example
 * ```ts
 * import { StoreDamagedError } from "./store_file.ts";
 * const e = new StoreDamagedError("/h/awp.kv", "/h", "it is empty (0 bytes)");
 * console.log(e.message.includes("awp reset --home /h")); // true
 * ```
 */
export class StoreDamagedError extends Error {
  /** The damaged file. */
  readonly path: string;

  /** `path` is the store file, `home` its directory, `why` what is wrong. */
  constructor(path: string, home: string, why: string) {
    super(
      `the store ${path} is damaged: ${why}. It holds this peer's identity and threads, so it is not replaced: ` +
        `restore it from a backup, or start over with a new identity: awp reset --home ${home}`,
    );
    this.name = "StoreDamagedError";
    this.path = path;
  }
}

/**
 * The store (which holds the private key) can be read by other users. As
 * ssh does for a private key, the peer refuses to start and says which
 * `chmod` to run.
 *
 * @example
 * ```ts
 * import { StorePermissionsError } from "./store_file.ts";
 * const e = new StorePermissionsError([{ path: "/h/awp.kv", mode: 0o644 }]);
 * console.log(e.message.endsWith("chmod 600 /h/awp.kv")); // true
 * ```
 */
export class StorePermissionsError extends Error {
  /** The files that are too open, with their modes. */
  readonly files: ReadonlyArray<{ path: string; mode: number }>;

  /** `files` are the store's files whose mode lets others in. */
  constructor(files: ReadonlyArray<{ path: string; mode: number }>) {
    const modes = files.map((f) =>
      `${f.mode.toString(8).padStart(4, "0")} for ${f.path}`
    ).join(", ");
    super(
      `permissions ${modes} are too open: the store holds this peer's private key and must not be readable by others; ` +
        `the peer will not start until you run: chmod 600 ${
          files.map((f) => f.path).join(" ")
        }`,
    );
    this.name = "StorePermissionsError";
    this.files = files;
  }
}

/**
 * The home's path (or a parent of it) is a file, not a directory.
 *
 * @example
 * ```ts
 * import { HomeNotDirectoryError } from "./store_file.ts";
 * console.log(new HomeNotDirectoryError("/h").message.includes("/h")); // true
 * ```
 */
export class HomeNotDirectoryError extends Error {
  /** `home` is the path that should have been a directory. */
  constructor(home: string) {
    super(
      `the awp home ${home} is a file, not a directory (or is inside one): choose another --home (or AWP_HOME), or move the file away`,
    );
    this.name = "HomeNotDirectoryError";
  }
}

/** The store's file in `home`, and the files SQLite keeps beside it. */
function storeFiles(home: string): { path: string; companions: string[] } {
  const path = `${home}/awp.kv`;
  return { path, companions: [`${path}-wal`, `${path}-shm`] };
}

/** The first bytes of every SQLite database file (Deno KV is SQLite). */
const SQLITE_HEADER = "SQLite format 3\0";

/**
 * Makes `home` (0700 when new) and returns the path of its store, checked:
 * refused when it is readable by others, empty or not a database; created
 * 0600 (so SQLite's `-wal` and `-shm` are 0600 too) when it does not exist.
 *
 * @example
 * ```ts
 * import { prepareStoreFile } from "./store_file.ts";
 * const home = await Deno.makeTempDir();
 * console.log(await prepareStoreFile(home) === `${home}/awp.kv`); // true
 * await Deno.remove(home, { recursive: true });
 * ```
 */
export async function prepareStoreFile(home: string): Promise<string> {
  await ensureHomeDir(home);
  const { path, companions } = storeFiles(home);
  let info: Deno.FileInfo;
  try {
    info = await Deno.stat(path);
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
    await createStoreFile(path);
    return path;
  }
  if (!info.isFile) {
    throw new StoreDamagedError(path, home, "it is not a file");
  }
  const tooOpen: Array<{ path: string; mode: number }> = [];
  for (const file of [path, ...companions]) {
    const mode = await fileMode(file);
    if (mode !== undefined && (mode & 0o077) !== 0) {
      tooOpen.push({ path: file, mode });
    }
  }
  if (tooOpen.length > 0) throw new StorePermissionsError(tooOpen);
  if (info.size === 0) {
    throw new StoreDamagedError(path, home, "it is empty (0 bytes)");
  }
  const head = new Uint8Array(SQLITE_HEADER.length);
  {
    using file = await Deno.open(path, { read: true });
    let filled = 0;
    while (filled < head.length) {
      const n = await file.read(head.subarray(filled));
      if (n === null) break;
      filled += n;
    }
  }
  if (new TextDecoder().decode(head) !== SQLITE_HEADER) {
    throw new StoreDamagedError(path, home, "it is not a Deno KV database");
  }
  return path;
}

async function fileMode(path: string): Promise<number | undefined> {
  try {
    return ((await Deno.stat(path)).mode ?? 0) & 0o777;
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return undefined;
    throw error;
  }
}

/**
 * Makes the home directory (0700 when new) and says so in one line, naming
 * it, when its path is taken by something that is not a directory.
 *
 * @example
 * ```ts
 * import { ensureHomeDir } from "./store_file.ts";
 * const dir = await Deno.makeTempDir();
 * await ensureHomeDir(`${dir}/home`);
 * await Deno.writeTextFile(`${dir}/file`, "");
 * await ensureHomeDir(`${dir}/file`).catch((e) => console.log(e.message.includes("is a file"))); // true
 * await Deno.remove(dir, { recursive: true });
 * ```
 */
export async function ensureHomeDir(home: string): Promise<void> {
  try {
    await Deno.mkdir(home, { recursive: true, mode: 0o700 });
  } catch (error) {
    if (
      error instanceof Deno.errors.AlreadyExists ||
      error instanceof Deno.errors.NotADirectory
    ) {
      throw new HomeNotDirectoryError(home);
    }
    throw error;
  }
}

/**
 * Creates the store file empty and 0600 before Deno KV opens it: SQLite
 * gives its `-wal` and `-shm` the mode of the database file. SQLite writes
 * the header at once on open, so an empty store file afterwards means
 * damage (only a crash within that first open could leave one, with
 * nothing in it yet to lose).
 */
async function createStoreFile(path: string): Promise<void> {
  try {
    await Deno.writeFile(path, new Uint8Array(0), {
      createNew: true,
      mode: 0o600,
    });
  } catch (error) {
    // Another process created it a moment ago: that one is the store.
    if (error instanceof Deno.errors.AlreadyExists) return;
    throw error;
  }
  await Deno.chmod(path, 0o600); // whatever the umask
}

/**
 * Moves the store of `home` aside (`awp.kv.<time>.bak`, with its `-wal` and
 * `-shm`), so the next start creates a new identity. Nothing is deleted.
 * Resolves with the new paths, or none when there was no store.
 *
 * @example
 * ```ts
 * import { moveStoreAside, prepareStoreFile } from "./store_file.ts";
 * const home = await Deno.makeTempDir();
 * await prepareStoreFile(home);
 * const moved = await moveStoreAside(home);
 * console.log(moved.length >= 1); // true
 * await Deno.remove(home, { recursive: true });
 * ```
 */
export async function moveStoreAside(home: string): Promise<string[]> {
  const { path, companions } = storeFiles(home);
  const stamp = new Date().toISOString().replace(/[:.]/g, "-");
  const moved: string[] = [];
  for (const file of [path, ...companions]) {
    const to = `${path}.${stamp}.bak${file.slice(path.length)}`;
    try {
      await Deno.rename(file, to);
      moved.push(to);
    } catch (error) {
      if (!(error instanceof Deno.errors.NotFound)) throw error;
    }
  }
  return moved;
}
