/**
 * Activity: the traffic log, newest first, with a pause (the list stops
 * moving; lines keep arriving underneath) and a filter.
 *
 * @module
 */

import { useState } from "npm:preact@^10.29.8/hooks";
import type { ActivityLine, NetPeer } from "../dashboard_types.ts";
import { clock, displayName, html } from "./html.ts";

const SHOWN = 500;

/** A short, readable account of a wire line (the raw line is its tooltip). */
function summarize(l: ActivityLine): string {
  let m: Record<string, unknown>;
  try {
    m = JSON.parse(l.line);
  } catch {
    return l.line;
  }
  const parts = Array.isArray(m.parts)
    ? m.parts as Array<Record<string, unknown>>
    : [];
  switch (m.t) {
    case "msg": {
      const text = parts.map((p) =>
        p.k === "text"
          ? String(p.text)
          : p.k === "blob"
          ? `[blob ${p.name ?? p.ref}]`
          : `[${p.k}${p.mime ? ` ${p.mime}` : ""}]`
      ).join(" ");
      return `${m.subject ? `${m.subject}: ` : ""}${text}`;
    }
    case "state":
      return `${m.state}${m.note ? ` “${m.note}”` : ""}`;
    case "ack":
      return `acks ${m.re}`;
    case "chunk":
      return `${m.ref} #${m.n}${m.last ? " (last)" : ""}`;
    case "err":
      return `${m.code}: ${m.detail ?? ""}`;
    case "grant": {
      const g = m.grant as { caps?: string[]; exp?: string } | undefined;
      return `${(g?.caps ?? []).join(", ")} until ${g?.exp ?? "?"}`;
    }
    default:
      return l.line;
  }
}

/** The Activity view. */
export function ActivityView(
  { activity, peers }: { activity: ActivityLine[]; peers: NetPeer[] },
) {
  const [paused, setPaused] = useState<ActivityLine[] | undefined>(undefined);
  const [filter, setFilter] = useState("");
  const [hidePings, setHidePings] = useState(true);
  const names = new Map(peers.map((p) => [p.key, displayName(p)]));
  const source = paused ?? activity;
  const needle = filter.trim().toLowerCase();
  const rows = [];
  for (let i = source.length - 1; i >= 0 && rows.length < SHOWN; i--) {
    const l = source[i];
    if (hidePings && (l.t === "ping" || l.t === "pong")) continue;
    const who = names.get(l.peer) ?? l.peer;
    const summary = summarize(l);
    if (
      needle &&
      !`${l.t} ${who} ${summary} ${l.line}`.toLowerCase().includes(needle)
    ) continue;
    rows.push(html`
      <tr class=${`line ${l.dir}`}>
        <td class="mono muted">${clock(l.at)}</td>
        <td class="dir">${l.dir === "in" ? "←" : "→"}</td>
        <td>${who}</td>
        <td><span class=${`chip t-${l.t}`}>${l.t}</span></td>
        <td class="summary" title=${l.line}>${summary}</td>
        <td class="mono raw muted">${l.th ?? ""}</td>
      </tr>
    `);
  }
  return html`
    <section class="view activity">
      <div class="toolbar">
        <button class=${paused ? "primary pause" : "pause"}
          onClick=${() =>
            setPaused(paused ? undefined : [...activity])}>${paused
            ? "▶ resume"
            : "❚❚ pause"}</button>
        <input class="filter" type="search" placeholder="filter: type, peer or text"
          value=${filter}
          onInput=${(e: Event) =>
            setFilter((e.target as HTMLInputElement).value)} />
        <label><input type="checkbox" checked=${hidePings}
            onChange=${(e: Event) =>
              setHidePings(
                (e.target as HTMLInputElement).checked,
              )} /> hide ping/pong</label>
        <span class="muted">${paused
          ? `paused · ${activity.length - paused.length} new`
          : `${activity.length} lines`}</span>
      </div>
      <table class="grid log">
        <tbody>${rows}</tbody>
      </table>
    </section>
  `;
}
