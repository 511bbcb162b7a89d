/**
 * Opens the peer's store: Deno KV in the awp home, a KV Connect URL, or
 * memory.
 *
 * @module
 */

import { KvStore } from "./kv_store.ts";
import { MemoryStore } from "./memory_store.ts";
import type { Store } from "./store.ts";
import { prepareStoreFile, StoreDamagedError } from "./store_file.ts";
import { errorText } from "../wire/error_text.ts";

export {
  ensureHomeDir,
  HomeNotDirectoryError,
  moveStoreAside,
  StoreDamagedError,
  StorePermissionsError,
} from "./store_file.ts";

/**
 * Durable storage cannot be opened in this runtime (Deno KV is unstable and
 * needs `--unstable-kv`). The message is one line saying what to do.
 *
 * @example
 * ```ts
 * import { StoreUnavailableError } from "./open_store.ts";
 * console.log(new StoreUnavailableError().message.includes("--unstable-kv")); // true
 * ```
 */
export class StoreUnavailableError extends Error {
  /** Creates the error; the default message says how to enable Deno KV. */
  constructor(
    message =
      'durable storage needs Deno KV: run with --unstable-kv (or "unstable": ["kv"] in deno.json), or open the store with { memory: true } to run ephemeral (nothing survives a restart)',
  ) {
    super(message);
    this.name = "StoreUnavailableError";
  }
}

/** Where {@link openStore} keeps the state. */
export interface OpenStoreOptions {
  /** The awp home directory: the store is `${home}/awp.kv` (dir mode 0700). */
  home?: string;
  /** A KV Connect URL (http/https); the token is `DENO_KV_ACCESS_TOKEN`. */
  url?: string;
  /** Keep everything in memory (ephemeral). */
  memory?: boolean;
  /** Most traffic-log entries kept (default 100,000). */
  maxLogEntries?: number;
  /** Most traffic-log bytes kept (default 256 MiB). */
  maxLogBytes?: number;
}

/**
 * Opens the store: `memory` wins, then `url`, then `home`.
 *
 * @example
 * ```ts
 * import { openStore } from "./open_store.ts";
 * const home = await Deno.makeTempDir();
 * const store = await openStore({ home });
 * console.log(typeof store.nextId()); // "string"
 * store.close();
 * await Deno.remove(home, { recursive: true });
 * ```
 */
export async function openStore(options: OpenStoreOptions): Promise<Store> {
  const storeOptions = {
    ...(options.maxLogEntries === undefined
      ? {}
      : { maxLogEntries: options.maxLogEntries }),
    ...(options.maxLogBytes === undefined
      ? {}
      : { maxLogBytes: options.maxLogBytes }),
  };
  if (options.memory) return new MemoryStore(storeOptions);
  if (typeof (Deno as { openKv?: unknown }).openKv !== "function") {
    throw new StoreUnavailableError();
  }
  if (options.url !== undefined) {
    if (!/^https?:\/\//i.test(options.url)) {
      throw new TypeError(
        `openStore: url must be http or https, got ${
          JSON.stringify(options.url)
        }`,
      );
    }
    return await KvStore.open(options.url, storeOptions);
  }
  if (options.home === undefined || options.home === "") {
    throw new TypeError("openStore: give home, url or memory: true");
  }
  const path = await prepareStoreFile(options.home);
  try {
    return await KvStore.open(path, storeOptions);
  } catch (error) {
    if (error instanceof Deno.errors.PermissionDenied) throw error;
    throw new StoreDamagedError(
      path,
      options.home,
      `Deno KV cannot open it (${errorText(error)})`,
    );
  }
}
