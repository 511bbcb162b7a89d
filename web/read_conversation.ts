/**
 * One thread as the dashboard's Conversation view shows it: every msg and
 * state both ways from the traffic log, plus our lines still queued in the
 * outbox, each of ours marked queued, sent or acked.
 *
 * @module
 */

import type { Peer } from "../peer/peer.ts";
import type {
  Conversation,
  ConversationBlob,
  ConversationItem,
} from "./dashboard_types.ts";

/**
 * Reads thread `th` with `peer` (a key). `blobUrl` names a blob's download
 * link (given only for blobs whose bytes are here).
 *
 * @example
 * ```ts
 * import { Peer } from "../peer/peer.ts";
 * import { readConversation } from "./read_conversation.ts";
 * const a = await Peer.open({ memory: true });
 * const b = await Peer.open({ memory: true });
 * const { th } = await a.send(b.key, "hi"); // b is away: queued
 * const c = await readConversation(a, b.key, th, () => "");
 * console.log(c.items[0].delivery); // "queued"
 * await a.close();
 * await b.close();
 * ```
 */
export async function readConversation(
  peer: Peer,
  key: string,
  th: string,
  blobUrl: (peer: string, dir: "in" | "out", ref: string) => string,
): Promise<Conversation> {
  const store = peer.store;
  const [log, outbox, record, thread, peers] = await Promise.all([
    peer.log({ peer: key, th }),
    store.outbox(key),
    store.peer(key),
    store.thread(key, th),
    peer.peers(),
  ]);
  // Our lines are logged when queued: an unacked one is on its way while
  // the peer is connected (written at once, or replayed on its resume),
  // queued while it is away.
  const connected = peers.some((p) => p.key === key && p.connected);
  const unacked = new Map(
    outbox.filter((e) => e.th === th && (e.t === "msg" || e.t === "state"))
      .map((e) => [e.id, e]),
  );
  const items: ConversationItem[] = [];
  const seen = new Set<string>();
  for (const e of log.sort((x, y) => x.seq - y.seq)) {
    if ((e.t !== "msg" && e.t !== "state") || !e.id) continue;
    // A line replayed after a reconnect is logged again: show it once.
    const once = `${e.dir} ${e.id}`;
    if (seen.has(once)) continue;
    seen.add(once);
    let m: Record<string, unknown>;
    try {
      m = JSON.parse(e.line);
    } catch {
      continue;
    }
    items.push(
      toItem(
        m,
        e.dir,
        e.dir !== "out"
          ? undefined
          : !unacked.has(e.id)
          ? "acked"
          : connected
          ? "sent"
          : "queued",
      ),
    );
  }
  for (const [id, e] of unacked) {
    if (seen.has(`out ${id}`)) continue;
    items.push(toItem({ ...e.fields, id, ts: e.ts }, "out", "queued"));
  }
  for (const item of items) {
    if (!item.parts) continue;
    const blobs: ConversationBlob[] = [];
    for (const p of item.parts) {
      if (p.k !== "blob" || typeof p.ref !== "string") continue;
      const rec = await store.blob(key, p.ref, item.dir);
      const here = rec !== undefined && rec.status === "complete" &&
        await isFile(rec.path);
      blobs.push({
        ref: p.ref,
        ...(typeof p.name === "string" ? { name: p.name } : {}),
        ...(typeof p.mime === "string" ? { mime: p.mime } : {}),
        size: typeof p.size === "number" ? p.size : rec?.size ?? 0,
        status: rec?.status ?? "missing",
        ...(here ? { download: blobUrl(key, item.dir, p.ref) } : {}),
      });
    }
    if (blobs.length) item.blobs = blobs;
  }
  const subject = thread?.subject ??
    items.find((i) => i.subject)?.subject;
  const peerName = record?.alias ?? record?.name;
  return {
    peer: key,
    ...(peerName ? { peerName } : {}),
    th,
    ...(subject ? { subject } : {}),
    items: items.sort((x, y) => x.ts.localeCompare(y.ts)),
  };
}

function toItem(
  m: Record<string, unknown>,
  dir: "in" | "out",
  delivery: ConversationItem["delivery"],
): ConversationItem {
  const base = {
    dir,
    id: String(m.id),
    ts: typeof m.ts === "string" ? m.ts : "",
    ...(typeof m.re === "string" ? { re: m.re } : {}),
    ...(delivery ? { delivery } : {}),
  };
  if (m.t === "state") {
    return {
      kind: "state",
      ...base,
      state: String(m.state),
      ...(typeof m.note === "string" ? { note: m.note } : {}),
    };
  }
  return {
    kind: "msg",
    ...base,
    ...(typeof m.subject === "string" ? { subject: m.subject } : {}),
    parts: Array.isArray(m.parts)
      ? m.parts.filter((p): p is Record<string, unknown> =>
        typeof p === "object" && p !== null
      )
      : [],
  };
}

async function isFile(path: string): Promise<boolean> {
  if (!path) return false;
  try {
    return (await Deno.stat(path)).isFile;
  } catch {
    return false;
  }
}
