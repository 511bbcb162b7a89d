/**
 * {@link InboundHandlers}: what a Peer does with received lines besides
 * threads: before a batch commits (requests journaled, chunks written), and
 * the `err`, `grant` and `introduce` lines the supervisor routes here.
 *
 * @module
 */

import type { Delivery } from "../actors/supervisor.ts";
import type { Connection, ReceivedLine } from "../actors/connection.ts";
import type { RequestServer } from "../profile/request_server.ts";
import type { ReceiveExtras, Store } from "../storage/store.ts";
import { grantHash, verifyGrant } from "../wire/grant.ts";
import { isKey } from "../wire/keys.ts";
import { timestamp } from "../wire/time.ts";
import type { Err, Grant, GrantMsg, Introduce, Msg } from "../wire/types.ts";
import type { EventHub } from "./event_hub.ts";
import type { PeerBlobs } from "./peer_blobs.ts";

/** What {@link InboundHandlers} works with. */
export interface InboundParts {
  /** Our key (a grant's `sub` must be it). */
  ownKey: string;
  /** Grants and peers are stored here. */
  store: Store;
  /** Where the events go. */
  events: EventHub;
  /** Chunks and blob refusals go here. */
  blobs: PeerBlobs;
  /** Journals a batch's requests before it commits. */
  requests: RequestServer;
}

/**
 * Handlers for received lines, given to the supervisor as its routes and
 * its `beforeCommit`.
 *
 * @example
 * ```ts ignore
 * const inbound = new InboundHandlers({ ownKey, store, events, blobs, requests });
 * new Supervisor({ ...options, routes: { err: (d) => inbound.onErr(d) } });
 * ```
 */
export class InboundHandlers {
  #ownKey: string;
  #store: Store;
  #events: EventHub;
  #blobs: PeerBlobs;
  #requests: RequestServer;

  /** Handlers over `parts`. */
  constructor(parts: InboundParts) {
    this.#ownKey = parts.ownKey;
    this.#store = parts.store;
    this.#events = parts.events;
    this.#blobs = parts.blobs;
    this.#requests = parts.requests;
  }

  /**
   * Before received lines count as seen: each chunk's bytes (written as it
   * arrived, `PeerBlobs.arrive`) are synced to its sink and the BlobRecord is
   * persisted, so a crash can never leave a chunk seen (not replayed) but
   * missing from the file.
   */
  async beforeCommit(
    peer: string,
    conn: Connection,
    lines: ReceivedLine[],
  ): Promise<ReceiveExtras | void> {
    // An acked request is a promise: journaled before its msg commits.
    const msgs = lines.filter((l) => l.message.t === "msg").map((l) =>
      l.message as Msg
    );
    if (msgs.length > 0) {
      await this.#requests.journal(peer, msgs, conn.remote?.grants ?? []);
    }
    const chunks = lines.filter((l) => l.message.t === "chunk");
    if (chunks.length === 0) return;
    // The sinks' records commit with the chunks' seen markers.
    return { blobs: await this.#blobs.takeChunks(peer, conn, chunks) };
  }

  /** A received `err` line: an error event; a blob refusal stops that blob. */
  async onErr(d: Delivery): Promise<void> {
    const m = d.message as Err;
    this.#events.emit({
      type: "error",
      peer: d.peer,
      ts: timestamp(),
      code: m.code,
      detail: m.detail ?? "",
      remote: true,
      ...(m.ref !== undefined ? { ref: m.ref } : {}),
      ...(m.re !== undefined ? { re: m.re } : {}),
    });
    if (m.code !== "blob_refused" || typeof m.ref !== "string") return;
    await this.#blobs.refused(d.peer, m.ref, m.detail ?? "refused by the peer");
  }

  async #checkGrant(
    grant: unknown,
  ): Promise<{ ok: true; grant: Grant } | { ok: false; reason: string }> {
    const verdict = await verifyGrant(grant);
    if (!verdict.ok) return verdict;
    if (verdict.grant.sub !== this.#ownKey) {
      return { ok: false, reason: "the grant's sub is not our key" };
    }
    return verdict;
  }

  /** A received `grant` line: held if valid (once), and a grant event. */
  async onGrant(d: Delivery): Promise<void> {
    const m = d.message as GrantMsg;
    const verdict = await this.#checkGrant(m.grant);
    if (verdict.ok) {
      const hash = await grantHash(verdict.grant);
      // Grant lines are replayed until a later ack: a repeat is not news.
      const held = await this.#store.grants("held");
      if (held.some((g) => g.hash === hash)) return;
      await this.#store.putGrant({
        kind: "held",
        hash,
        grant: verdict.grant,
        from: d.peer,
        storedAt: Date.now(),
      });
    }
    this.#events.emit({
      type: "grant",
      peer: d.peer,
      ts: timestamp(),
      grant: m.grant,
      valid: verdict.ok,
      ...(verdict.ok ? {} : { reason: verdict.reason }),
    });
  }

  /** A received `introduce` line: its grant held, its peer known, an event. */
  async onIntroduce(d: Delivery): Promise<void> {
    const m = d.message as Introduce;
    const intro = m.peer;
    if (!intro || !isKey(intro.key) || intro.key === this.#ownKey) return;
    let grant: Grant | undefined;
    if (m.grant !== undefined) {
      const verdict = await this.#checkGrant(m.grant);
      if (verdict.ok) {
        grant = verdict.grant;
        await this.#store.putGrant({
          kind: "held",
          hash: await grantHash(grant),
          grant,
          from: d.peer,
          storedAt: Date.now(),
        });
      } else {
        this.#events.localError(
          d.peer,
          "grant",
          `introduction grant: ${verdict.reason}`,
        );
      }
    }
    const known = await this.#store.peer(intro.key);
    const now = Date.now();
    const addresses = [...(known?.addresses ?? [])];
    if (intro.address && !addresses.includes(intro.address)) {
      addresses.push(intro.address);
    }
    await this.#store.putPeer({
      ...known,
      key: intro.key,
      name: known?.name ?? intro.name,
      addresses,
      firstSeen: known?.firstSeen ?? now,
      lastSeen: known?.lastSeen ?? now,
    });
    this.#events.emit({
      type: "introduced",
      peer: d.peer,
      ts: timestamp(),
      key: intro.key,
      ...(intro.name !== undefined ? { name: intro.name } : {}),
      ...(intro.address !== undefined ? { address: intro.address } : {}),
      ...(grant ? { grant } : {}),
    });
  }
}
