/**
 * Text for a person: how the commands show peers, identities and inbox
 * items (messages, states, notices) in their human form. The `--json` form
 * is the daemon's answer as it is; `agent_text.ts` is the form for a model.
 *
 * @module
 */

import type { Output } from "./output.ts";
import type { InboxItem, PeerSummary, StatusResult } from "./protocol.ts";
import { renderPart, type ShownPart } from "./render_part.ts";

/**
 * The first eight characters of a key, after its `ed25519:` prefix.
 *
 * @example
 * ```ts
 * import { shortKey } from "./person_text.ts";
 * console.log(shortKey("ed25519:AbCdEfGhIjK")); // "AbCdEfGh"
 * ```
 */
export function shortKey(key: string): string {
  return key.startsWith("ed25519:") ? key.slice(8, 16) : key.slice(0, 8);
}

/**
 * A peer as a person knows it: `name (shortkey)`, or the short key alone.
 *
 * @example
 * ```ts
 * import { who } from "./person_text.ts";
 * console.log(who("ed25519:AbCdEfGhIjK", "ana")); // "ana (AbCdEfGh)"
 * ```
 */
export function who(peer: string, name?: string): string {
  return name ? `${name} (${shortKey(peer)})` : shortKey(peer);
}

/**
 * One inbox item as one line (a message with files or parts: more lines).
 *
 * @example
 * ```ts
 * import { itemLine } from "./person_text.ts";
 * import { Output } from "./output.ts";
 * const out = new Output({ json: false, color: false });
 * console.log(itemLine(out, { event: "connected", dir: "in", peer: "ed25519:AbCdEfGhIj", ts: "" }));
 * // "AbCdEfGh: connected"
 * ```
 */
export function itemLine(out: Output, item: InboxItem): string {
  const from = item.dir === "out"
    ? `to ${who(item.peer, item.peerName)}`
    : who(item.peer, item.peerName);
  const th = item.th ? out.dim(` [${item.th}]`) : "";
  switch (item.event) {
    case "message": {
      const firstLine = (item.text ?? "").split("\n")[0];
      const subject = item.subject && item.subject !== firstLine
        ? `${out.bold(item.subject)}: `
        : "";
      const blobs = (item.blobs ?? []) as Array<
        { name?: string; ref: string; path?: string; status: string }
      >;
      const extra = blobs.map((b) =>
        `\n  file ${b.name ?? b.ref}: ${b.path ?? b.status}`
      ).join("");
      const more = ((item.parts ?? []) as ShownPart[]).map(renderPart)
        .join("");
      return `${from}${th}: ${subject}${item.text ?? ""}${more}${extra}`;
    }
    case "state":
      return `${from}${th}: state ${out.bold(item.state ?? "")}${
        item.note ? ` (${item.note})` : ""
      }`;
    case "connected":
      return `${from}: connected`;
    case "disconnected":
      return `${from}: disconnected${item.detail ? ` (${item.detail})` : ""}`;
    default:
      return `${from}${th}: ${item.kind ?? "notice"}${
        item.detail ? `: ${item.detail}` : ""
      }`;
  }
}

/**
 * Prints inbox items: one JSON line each under `--json`, else
 * {@link itemLine}.
 *
 * @example
 * ```ts
 * import { printItems } from "./person_text.ts";
 * import { Output } from "./output.ts";
 * printItems(new Output({ json: true }), []);
 * ```
 */
export function printItems(out: Output, items: InboxItem[]): void {
  for (const item of items) {
    if (out.json) out.value(item);
    else out.line(itemLine(out, item));
  }
}

/**
 * One known peer as `status` and `peers` list it.
 *
 * @example
 * ```ts
 * import { peerLine } from "./person_text.ts";
 * import { Output } from "./output.ts";
 * const line = peerLine(new Output({ json: false, color: false }), {
 *   key: "ed25519:AbCdEfGhIj", connected: false, addresses: [], queued: 0,
 *   openThreads: 0, unread: 0, caps: [],
 * });
 * console.log(line.startsWith("AbCdEfGh  away")); // true
 * ```
 */
export function peerLine(out: Output, p: PeerSummary): string {
  const state = p.connected
    ? out.green("connected")
    : p.waking
    ? `waking${p.unreachable ? ` since ${p.unreachable.since}` : ""}`
    : p.unreachable
    ? `unreachable since ${p.unreachable.since}${
      p.unreachable.error ? ` (${p.unreachable.error})` : ""
    }`
    : "away";
  return `${
    who(p.key, p.alias ?? p.name)
  }  ${state}  queued ${p.queued}  open ${p.openThreads}  unread ${p.unread}` +
    `${p.caps.length ? `  holds ${p.caps.join(",")}` : ""}  ${p.key}`;
}

/**
 * This agent's name and key, the addresses to share, and the inspector's
 * and dashboard's URLs when served: what `up` and `status` print first.
 *
 * @example
 * ```ts
 * import { identityLines } from "./person_text.ts";
 * import { Output } from "./output.ts";
 * const s = { key: "ed25519:k", name: "ana", home: "/h", pid: 1, addrs: ["tcp:127.0.0.1:7000"],
 *   peers: [], unread: 0, notices: 0, queued: 0 };
 * console.log(identityLines(s, new Output({ json: false, color: false })));
 * // [ "ana ed25519:k", "  tcp:127.0.0.1:7000" ]
 * ```
 */
export function identityLines(s: StatusResult, out: Output): string[] {
  return [
    `${out.bold(s.name ?? "awp")} ${s.key}`,
    ...s.addrs.map((a) => `  ${a}`),
    ...(s.inspector ? [`inspector ${s.inspector}`] : []),
    ...(s.web ? [`web ${s.web}`] : []),
  ];
}
