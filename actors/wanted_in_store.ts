/**
 * Whether a peer is still wanted (worth redialing), as the store says:
 * it has unacked outbox entries, or an open thread (NOTES item 12).
 *
 * @module
 */

import type { Store } from "../storage/store.ts";

/** Thread states after which a thread is no longer open. */
const DONE_STATES: ReadonlySet<string> = new Set(["done", "failed", "closed"]);

/**
 * Default outbox retention (`retentionMs`): an entry or thread idle longer
 * is expired, and such a thread is not open (7 days).
 *
 * @example
 * ```ts
 * import { DEFAULT_RETENTION_MS } from "./wanted_in_store.ts";
 * console.log(DEFAULT_RETENTION_MS / 86_400_000); // 7
 * ```
 */
export const DEFAULT_RETENTION_MS = 7 * 86_400_000;

/**
 * True when `peer` has unacked outbox entries, or a thread that neither
 * side ended (done, failed or closed) and that saw activity within
 * `retentionMs`. Rejects when the store cannot be read.
 *
 * @example
 * ```ts
 * import { wantedInStore } from "./wanted_in_store.ts";
 * import { MemoryStore } from "../storage/memory_store.ts";
 * console.log(await wantedInStore(new MemoryStore(), "ed25519:a")); // false
 * ```
 */
export async function wantedInStore(
  store: Store,
  peer: string,
  retentionMs: number = DEFAULT_RETENTION_MS,
): Promise<boolean> {
  if (await store.outboxCount(peer) > 0) return true;
  const horizon = Date.now() - retentionMs;
  for (const t of await store.threads(peer)) {
    const ended = DONE_STATES.has(t.mine?.state ?? "") ||
      DONE_STATES.has(t.theirs?.state ?? "");
    if (!ended && Date.parse(t.updated) >= horizon) return true;
  }
  return false;
}
