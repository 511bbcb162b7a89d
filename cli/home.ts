/**
 * Where a peer's home is and the files the daemon keeps in it: the lock,
 * the log, the control socket and the default Unix listener.
 *
 * @module
 */

/** Unix socket paths longer than this do not fit `sun_path` everywhere (104 on macOS, 108 on Linux). */
const MAX_SOCKET_PATH = 100;

/**
 * The home directory: `--home`, else `$AWP_HOME`, else `~/.awp`. Made absolute.
 *
 * @example
 * ```ts
 * import { resolveHome } from "./home.ts";
 * console.log(resolveHome("/tmp/awp-x")); // "/tmp/awp-x"
 * ```
 */
export function resolveHome(flag?: string): string {
  const given = flag ?? Deno.env.get("AWP_HOME");
  if (given !== undefined && given !== "") return absolute(given);
  const base = Deno.env.get("HOME") ?? Deno.env.get("USERPROFILE");
  if (!base) {
    throw new Error(
      "cannot find a home directory: set AWP_HOME or pass --home",
    );
  }
  return `${base}/.awp`;
}

function absolute(path: string): string {
  if (path.startsWith("/")) return path.replace(/\/+$/, "") || "/";
  if (path === "~" || path.startsWith("~/")) {
    return `${Deno.env.get("HOME") ?? ""}${path.slice(1)}`.replace(/\/+$/, "");
  }
  return `${Deno.cwd()}/${path}`.replace(/\/+$/, "").replace(/\/\.\//g, "/");
}

/**
 * A short stable tag of a home path, for fallback socket names: FNV-1a, 64
 * bits. (node:crypto would cost every CLI start ~20 ms of Node set-up.)
 */
function homeTag(home: string): string {
  let hash = 0xcbf29ce484222325n;
  for (const byte of new TextEncoder().encode(home)) {
    hash = ((hash ^ BigInt(byte)) * 0x100000001b3n) & 0xffffffffffffffffn;
  }
  return hash.toString(16).padStart(16, "0");
}

function uid(): number | string {
  try {
    return Deno.uid() ?? "u";
  } catch {
    return "u";
  }
}

/**
 * A socket path for `name` in the home, or, when that is too long for a
 * Unix socket, one in a private `/tmp/awp-<uid>/` directory named after a
 * hash of the home.
 *
 * @example
 * ```ts
 * import { socketPath } from "./home.ts";
 * console.log(socketPath("/tmp/h", "control.sock")); // "/tmp/h/control.sock"
 * ```
 */
export function socketPath(home: string, name: string): string {
  const inHome = `${home}/${name}`;
  if (new TextEncoder().encode(inHome).length <= MAX_SOCKET_PATH) return inHome;
  return `/tmp/awp-${uid()}/${homeTag(home)}-${name}`;
}

/** The files of one home. */
export interface HomePaths {
  home: string;
  /** Held with an exclusive lock by the running daemon. */
  lock: string;
  /** The daemon's stdout and stderr when started in the background. */
  log: string;
  /** The control socket the CLI talks to. */
  control: string;
  /** The default Unix listener for peers. */
  peerSocket: string;
}

/**
 * Every path the daemon uses in `home`.
 *
 * @example
 * ```ts
 * import { homePaths } from "./home.ts";
 * console.log(homePaths("/tmp/h").lock); // "/tmp/h/daemon.lock"
 * ```
 */
export function homePaths(home: string): HomePaths {
  return {
    home,
    lock: `${home}/daemon.lock`,
    log: `${home}/daemon.log`,
    control: socketPath(home, "control.sock"),
    peerSocket: socketPath(home, "awp.sock"),
  };
}

/**
 * Makes sure the directory that holds a socket exists and is private.
 *
 * @example
 * ```ts
 * import { ensureSocketDir } from "./home.ts";
 * const dir = await Deno.makeTempDir();
 * await ensureSocketDir(`${dir}/x.sock`);
 * await Deno.remove(dir, { recursive: true });
 * ```
 */
export async function ensureSocketDir(path: string): Promise<void> {
  const dir = path.slice(0, path.lastIndexOf("/")) || "/";
  await Deno.mkdir(dir, { recursive: true, mode: 0o700 });
}
