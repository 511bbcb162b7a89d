/**
 * Opens the CLI's Peer, in the home or, under `--store URL`, with its state
 * in a remote Deno KV reached through KV Connect (`openStore({ url })`).
 *
 * @module
 */

import { Peer, type PeerOptions } from "../peer/peer.ts";
import { openStore } from "../storage/open_store.ts";

const MARKER_META = "cli:store-marker";

/**
 * Opens a Peer with `options`; with `url`, the state lives at that KV
 * Connect URL (token in `DENO_KV_ACCESS_TOKEN`) while spool and blobs stay
 * in `options.home`. Rejects with one line when the token is missing, the
 * store cannot be opened, or this Peer does not take a remote store.
 *
 * @example
 * ```ts
 * import { openPeer } from "./open_peer.ts";
 * const home = await Deno.makeTempDir();
 * const peer = await openPeer({ home });
 * await peer.close();
 * await Deno.remove(home, { recursive: true });
 * ```
 */
export async function openPeer(
  options: PeerOptions,
  url?: string,
): Promise<Peer> {
  if (url === undefined) return await Peer.open(options);
  if (!Deno.env.get("DENO_KV_ACCESS_TOKEN")) {
    throw new Error("--store needs DENO_KV_ACCESS_TOKEN in the environment");
  }
  // The same path the Peer takes; a marker proves the Peer used this store.
  const probe = await openStore({ url });
  const marker = crypto.randomUUID();
  try {
    await probe.setMeta(MARKER_META, marker);
  } finally {
    probe.close();
  }
  const peer = await Peer.open({ ...options, url });
  if (await peer.store.getMeta<string>(MARKER_META) !== marker) {
    await peer.close();
    throw new Error(
      "--store: the peer did not keep its state in the store at that URL",
    );
  }
  return peer;
}
