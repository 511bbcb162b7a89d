/**
 * What the daemon streams and answers about traffic, in the CLI's terms:
 * Peer events and logged lines as {@link InboxItem}s, blob progress as
 * {@link ProgressItem}s.
 *
 * @module
 */

import type { Peer } from "../peer/peer.ts";
import type { PeerEvent, ProgressEvent } from "../peer/peer_events.ts";
import type { LogEntry } from "../storage/store.ts";
import type { PeerNames } from "./peer_names.ts";
import type { InboxItem, ProgressItem } from "./protocol.ts";

/**
 * A Peer's progress event as the item `send`, `tail` and `wait` stream.
 *
 * @example
 * ```ts
 * import { progressItem } from "./inbox_item.ts";
 * const item = progressItem({ type: "progress", peer: "ed25519:k", ts: "", ref: "r", dir: "in", bytes: 1, total: 2, rate: 0, status: "receiving" });
 * console.log(item.event); // "progress"
 * ```
 */
export function progressItem(ev: ProgressEvent): ProgressItem {
  return {
    event: "progress",
    peer: ev.peer,
    ts: ev.ts,
    ref: ev.ref,
    dir: ev.dir,
    bytes: ev.bytes,
    total: ev.total,
    rate: ev.rate,
    status: ev.status,
    ...(ev.th ? { th: ev.th } : {}),
    ...(ev.name ? { name: ev.name } : {}),
  };
}

/**
 * A Peer event as an inbox item, for streams and notices; undefined for
 * events that are not shown (progress, presence, served requests...).
 *
 * @example
 * ```ts ignore
 * import { itemFromEvent } from "./inbox_item.ts";
 * for await (const ev of peer.events()) console.log(await itemFromEvent(ev, names));
 * ```
 */
export async function itemFromEvent(
  ev: PeerEvent,
  names: PeerNames,
): Promise<InboxItem | undefined> {
  const base = { dir: "in" as const, peer: ev.peer, ts: ev.ts };
  const peerName = ev.peer ? await names.nameOf(ev.peer) : undefined;
  const named = peerName ? { peerName } : {};
  switch (ev.type) {
    case "message":
      return {
        event: "message",
        ...base,
        ...named,
        id: ev.id,
        th: ev.th,
        ts: ev.message.ts,
        text: ev.text,
        parts: ev.parts,
        blobs: ev.blobs,
        ...(ev.subject ? { subject: ev.subject } : {}),
        ...(ev.re ? { re: ev.re } : {}),
      };
    case "state":
      return {
        event: "state",
        ...base,
        ...named,
        id: ev.id,
        th: ev.th,
        state: ev.state,
        ...(ev.note ? { note: ev.note } : {}),
      };
    case "connected":
      names.forget(ev.peer);
      return {
        event: "connected",
        ...base,
        ...(ev.name ? { peerName: ev.name } : named),
      };
    case "disconnected":
      return { event: "disconnected", ...base, ...named, detail: ev.reason };
    case "bye":
      return {
        event: "notice",
        kind: "bye",
        ...base,
        ...named,
        ...(ev.reason ? { detail: ev.reason } : {}),
      };
    case "grant":
      return {
        event: "notice",
        kind: "grant",
        ...base,
        ...named,
        detail: ev.valid
          ? `granted ${ev.grant.caps.join(",")} until ${ev.grant.exp}`
          : `invalid grant: ${ev.reason}`,
      };
    case "introduced":
      return {
        event: "notice",
        kind: "introduced",
        ...base,
        ...named,
        detail: `${ev.name ?? ""} ${ev.key}${
          ev.address ? ` at ${ev.address}` : ""
        }`.trim(),
      };
    case "blob":
      if (ev.dir === "out" && ev.status === "refused") {
        return {
          event: "notice",
          kind: "blob_refused",
          ...base,
          ...named,
          ...(ev.th ? { th: ev.th } : {}),
          detail: `${ev.name ?? ev.ref}: ${ev.detail ?? "refused"}`,
        };
      }
      return undefined;
    case "error":
      return {
        event: "notice",
        kind: "error",
        ...base,
        ...named,
        detail: `${ev.code}: ${ev.detail}`,
      };
    default:
      return undefined;
  }
}

/**
 * A logged line (msg, state, or a peer's err) as an inbox item, with the
 * local state of the files a msg carries; undefined for other lines.
 *
 * @example
 * ```ts ignore
 * import { itemFromLog } from "./inbox_item.ts";
 * for (const e of await peer.log({ peer: key })) console.log(await itemFromLog(e, peer, names));
 * ```
 */
export async function itemFromLog(
  e: LogEntry,
  peer: Peer,
  names: PeerNames,
): Promise<InboxItem | undefined> {
  let m: Record<string, unknown>;
  try {
    m = JSON.parse(e.line);
  } catch {
    return undefined;
  }
  const peerName = await names.nameOf(e.peer);
  const base = {
    dir: e.dir,
    peer: e.peer,
    ...(peerName ? { peerName } : {}),
    ts: typeof m.ts === "string" ? m.ts : new Date(e.at).toISOString(),
    ...(e.id ? { id: e.id } : {}),
    ...(e.th ? { th: e.th } : {}),
  };
  if (e.t === "msg") {
    const parts = Array.isArray(m.parts)
      ? m.parts as Array<Record<string, unknown>>
      : [];
    const blobs = [];
    for (const p of parts) {
      if (p.k !== "blob" || typeof p.ref !== "string") continue;
      const rec = await peer.store.blob(e.peer, p.ref, e.dir);
      blobs.push({
        ref: p.ref,
        ...(typeof p.name === "string" ? { name: p.name } : {}),
        size: typeof p.size === "number" ? p.size : rec?.size ?? 0,
        status: rec?.status ?? "missing",
        ...(rec?.path ? { path: rec.path } : {}),
        ...(rec?.sha256 ? { sha256: rec.sha256 } : {}),
      });
    }
    return {
      event: "message",
      ...base,
      ...(blobs.length ? { blobs } : {}),
      text: parts.filter((p) => p.k === "text").map((p) => String(p.text))
        .join("\n"),
      parts,
      ...(typeof m.subject === "string" ? { subject: m.subject } : {}),
      ...(typeof m.re === "string" ? { re: m.re } : {}),
    };
  }
  if (e.t === "err") {
    return {
      event: "notice",
      kind: "refused",
      ...base,
      ...(typeof m.re === "string" ? { re: m.re } : {}),
      detail: `${String(m.code)}${
        typeof m.detail === "string" ? `: ${m.detail}` : ""
      }`,
    };
  }
  if (e.t === "state") {
    return {
      event: "state",
      ...base,
      state: String(m.state),
      ...(typeof m.note === "string" ? { note: m.note } : {}),
    };
  }
  return undefined;
}
