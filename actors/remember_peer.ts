/**
 * What a peer remembers of a remote after each handshake: its peer record
 * (name, about, caps, addresses in the order to dial them), written only
 * when something but `lastSeen` changed or it is stale.
 *
 * @module
 */

import type { PeerRecord, Store } from "../storage/store.ts";
import { samePlain } from "../wire/plain_json.ts";
import type { RemoteHello } from "./connection.ts";

/** How stale a stored `lastSeen` may be before a handshake rewrites it. */
const LAST_SEEN_PRECISION_MS = 60_000;

/** Equal but for `lastSeen`. */
function samePeerRecord(a: PeerRecord, b: PeerRecord): boolean {
  const { lastSeen: _a, ...restA } = a;
  const { lastSeen: _b, ...restB } = b;
  return samePlain(restA, restB);
}

/**
 * Records `remote` in `store` after a handshake: the address we dialed
 * first, then the dialer's, then the one the remote gave (NOTES item 6),
 * then the address `Peer.connect` was asked to dial (`askedAddr`, when it
 * differs: a name resolved to the socket's address). One read-and-write step,
 * so a connect's record and the supervisor's are one commit. Rejects
 * when the store does (the supervisor ignores that: bookkeeping only;
 * `Peer.connect` reports it).
 *
 * @example
 * ```ts
 * import { rememberPeer } from "./remember_peer.ts";
 * import { MemoryStore } from "../storage/memory_store.ts";
 * const store = new MemoryStore();
 * const remote = { key: "ed25519:a", caps: [], nonce: "n", grants: [] };
 * await rememberPeer(store, remote, {
 *   dialed: true,
 *   dialedAddr: "tcp:127.0.0.1:7000",
 *   dialerAddrs: [],
 *   askedAddr: "tcp:localhost:7000",
 * });
 * console.log((await store.peer("ed25519:a"))?.addresses);
 * // ["tcp:127.0.0.1:7000", "tcp:localhost:7000"]
 * ```
 */
export async function rememberPeer(
  store: Store,
  remote: RemoteHello,
  how: {
    dialed: boolean;
    dialedAddr?: string;
    dialerAddrs: readonly string[];
    askedAddr?: string;
  },
): Promise<void> {
  const { dialed, dialedAddr, dialerAddrs, askedAddr } = how;
  const first = [dialedAddr, ...dialerAddrs, remote.addr, askedAddr];
  const merged = (known: PeerRecord | undefined, now: number) =>
    mergedPeerRecord(known, remote, { first, dialed, now });
  const known = await store.peer(remote.key);
  const now = Date.now();
  // A peer that reconnects often (a restarting agent, a bench) would
  // cost a commit per handshake: skip it when only lastSeen moved, by
  // less than LAST_SEEN_PRECISION_MS.
  if (
    known && now - (known.lastSeen ?? 0) < LAST_SEEN_PRECISION_MS &&
    samePeerRecord(known, merged(known, now))
  ) return;
  await store.updatePeer(remote.key, (k) => merged(k, Date.now()));
}

/**
 * Reads `peer`'s record on a later turn, into the store's cache, so that
 * {@link rememberPeer} after the handshake costs no KV read (a new peer's
 * record is one); meanwhile the handshake's own lines go first.
 *
 * @example
 * ```ts ignore
 * import { readPeerSoon } from "./remember_peer.ts";
 * readPeerSoon(store, remote.key);
 * ```
 */
export function readPeerSoon(store: Store, peer: string): void {
  setTimeout(() => void store.peer(peer).catch(() => {}), 0);
}

/**
 * `known` (if any) updated with what `remote` said: its name, about and
 * caps; the addresses in `first` (in that order, unset ones skipped) ahead
 * of the ones known; `dialed` once we ever dialed it.
 *
 * @example
 * ```ts
 * import { mergedPeerRecord } from "./remember_peer.ts";
 * const remote = { key: "ed25519:a", caps: [], nonce: "n", grants: [] };
 * const known = { key: "ed25519:a", caps: [], addresses: ["tcp:b:1"], dialed: false, firstSeen: 1, lastSeen: 1 };
 * const record = mergedPeerRecord(known, remote, { first: ["tcp:a:1"], dialed: true, now: 2 });
 * console.log(record.addresses); // ["tcp:a:1", "tcp:b:1"]
 * ```
 */
export function mergedPeerRecord(
  known: PeerRecord | undefined,
  remote: RemoteHello,
  how: {
    first: ReadonlyArray<string | undefined>;
    dialed: boolean;
    now: number;
  },
): PeerRecord {
  const addresses = [...(known?.addresses ?? [])];
  for (const a of [...how.first].reverse()) {
    if (!a) continue;
    const i = addresses.indexOf(a);
    if (i >= 0) addresses.splice(i, 1);
    addresses.unshift(a);
  }
  return {
    ...known,
    key: remote.key,
    name: remote.name ?? known?.name,
    about: remote.about ?? known?.about,
    caps: remote.caps,
    addresses,
    dialed: (known?.dialed ?? false) || how.dialed,
    firstSeen: known?.firstSeen ?? how.now,
    lastSeen: how.now,
  };
}
