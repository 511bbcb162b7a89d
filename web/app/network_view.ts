/**
 * Network: this peer in the middle, the peers it knows around it (green
 * line: connected, with the round trip; dashed: away), agents heard only
 * through presence gossip further out, then a card per peer.
 *
 * @module
 */

import { useState } from "npm:preact@^10.29.8/hooks";
import type { NetPeer, PresenceDoc, SelfInfo } from "../dashboard_types.ts";
import { ago, displayName, html, shortKey } from "./html.ts";
import { act } from "./live_state.ts";

interface Node {
  key: string;
  label: string;
  x: number;
  y: number;
  kind: "self" | "up" | "away" | "heard";
}

const W = 720;
const H = 380;
/** The peers' ellipse and the outer one for agents heard through gossip. */
const PEER_RX = 190;
const PEER_RY = 115;
const HEARD_RX = 300;
const HEARD_RY = 160;

function layout(
  self: SelfInfo,
  peers: NetPeer[],
  presence: PresenceDoc[],
): { nodes: Node[]; edges: Array<[Node, Node, NetPeer | undefined]> } {
  const cx = W / 2;
  const cy = H / 2;
  const me: Node = {
    key: self.key,
    label: self.name ?? shortKey(self.key),
    x: cx,
    y: cy,
    kind: "self",
  };
  const nodes: Node[] = [me];
  const edges: Array<[Node, Node, NetPeer | undefined]> = [];
  const byKey = new Map<string, Node>([[me.key, me]]);
  const angles = new Map<string, number>();
  peers.forEach((p, i) => {
    // From the right, clockwise: one peer sits beside us, two either side.
    const a = (2 * Math.PI * i) / Math.max(1, peers.length);
    angles.set(p.key, a);
    const n: Node = {
      key: p.key,
      label: displayName(p),
      x: cx + Math.cos(a) * PEER_RX,
      y: cy + Math.sin(a) * PEER_RY,
      kind: p.connected ? "up" : "away",
    };
    nodes.push(n);
    byKey.set(p.key, n);
    edges.push([me, n, p]);
  });
  const heard = presence.filter((d) => !byKey.has(d.origin));
  const perVia = new Map<string, number>();
  for (const d of heard) {
    const via = byKey.get(d.via) ?? me;
    const k = perVia.get(via.key) ?? 0;
    perVia.set(via.key, k + 1);
    const base = angles.get(via.key) ?? 0;
    const a = base + (k % 2 ? -1 : 1) * Math.ceil(k / 2) * 0.35;
    const n: Node = {
      key: d.origin,
      label: d.name ?? shortKey(d.origin),
      x: cx + Math.cos(a) * HEARD_RX,
      y: cy + Math.sin(a) * HEARD_RY,
      kind: "heard",
    };
    nodes.push(n);
    byKey.set(d.origin, n);
    edges.push([via, n, undefined]);
  }
  // Centre the drawing (one peer would otherwise leave half the box empty).
  const xs = nodes.map((n) => n.x);
  const ys = nodes.map((n) => n.y);
  const dx = W / 2 - (Math.min(...xs) + Math.max(...xs)) / 2;
  const dy = H / 2 - (Math.min(...ys) + Math.max(...ys)) / 2;
  for (const n of nodes) {
    n.x += dx;
    n.y += dy;
  }
  return { nodes, edges };
}

function edgeLabel(b: Node, p: NetPeer | undefined): string {
  if (b.kind === "heard") return "gossip";
  if (!p) return "";
  if (!p.connected) return "away";
  return p.rtt !== undefined ? `${p.rtt} ms` : "up";
}

function Graph(
  { self, peers, presence }: {
    self: SelfInfo;
    peers: NetPeer[];
    presence: PresenceDoc[];
  },
) {
  const { nodes, edges } = layout(self, peers, presence);
  return html`
    <svg class="graph" viewBox="0 0 ${W} ${H}" role="img"
      aria-label="network graph">
        ${edges.map(([a, b, p]) =>
          html`
            <g class=${`edge ${b.kind}`}>
              <line x1=${a.x} y1=${a.y} x2=${b.x} y2=${b.y} />
              <text class="rtt" x=${(a.x + b.x) / 2} y=${(a.y + b.y) / 2 -
                8}>${edgeLabel(b, p)}</text>
            </g>
          `
        )}
        ${nodes.map((n) =>
          html`
            <g class=${`node ${n.kind}`} data-key=${n.key}>
              <circle cx=${n.x} cy=${n.y} r=${n.kind === "self" ? 34 : 26} />
              <text class="initial" x=${n.x} y=${n.y + 6}>${n.label.slice(0, 2)
                .toUpperCase()}</text>
              <text class="label" x=${n.x} y=${n.y +
                (n.kind === "self" ? 54 : 46)}>${n.label}</text>
            </g>
          `
        )}
      </svg>
  `;
}

function GrantForm({ peer }: { peer: NetPeer }) {
  const [cap, setCap] = useState("fs:read");
  const [note, setNote] = useState("");
  const grant = async () => {
    try {
      await act("grant", { peer: peer.key, caps: [cap] });
      setNote(`granted ${cap} for 1h`);
    } catch (e) {
      setNote((e as Error).message);
    }
  };
  return html`
    <div class="grant">
      <select value=${cap} onChange=${(e: Event) =>
        setCap((e.target as HTMLSelectElement).value)}>
          ${["exec", "fs:read", "fs:write", "introduce"].map((c) =>
            html`<option value=${c}>${c}</option>`
          )}
        </select>
      <button onClick=${grant}>grant</button>
      <span class="muted">${note}</span>
    </div>
  `;
}

function PeerCard(
  { p, write, onOpen }: {
    p: NetPeer;
    write: boolean;
    onOpen: (key: string) => void;
  },
) {
  return html`
    <div class=${`card peer ${p.connected ? "up" : "away"}`}
      data-key=${p.key}>
        <div class="card-head">
          <span class=${`dot ${p.connected ? "up" : "away"}`}></span>
          <strong class="peer-name">${displayName(p)}</strong>
          <code class="key">${shortKey(p.key)}</code>
          <span class=${`badge ${p.connected ? "up" : "away"}`}>${p.connected
            ? "up"
            : "down"}</span>
          ${p.connected && p.rtt !== undefined
            ? html`<span class="badge">${p.rtt} ms</span>`
            : null}
        </div>
        ${p.about ? html`<p class="about">${p.about}</p>` : null}
        <dl>
          <dt>address</dt><dd>${p.addresses[0] ?? "—"}</dd>
          <dt>caps</dt><dd>${p.caps.length ? p.caps.join(", ") : "—"}</dd>
          <dt>granted</dt><dd>${p.granted.length
            ? p.granted.join(", ")
            : "—"}</dd>
          <dt>threads</dt><dd>${p.openThreads} open, ${p.unread} unread, ${p
            .queued} queued</dd>
          <dt>seen</dt><dd>${p.connected ? "now" : ago(p.lastSeen)}</dd>
        </dl>
        <div class="card-foot">
          <button class="link" onClick=${() => onOpen(p.key)}>threads →</button>
          ${write ? html`<${GrantForm} peer=${p} />` : null}
        </div>
      </div>
  `;
}

/** The Network view. */
export function NetworkView(
  { self, peers, presence, write, onOpenPeer }: {
    self: SelfInfo;
    peers: NetPeer[];
    presence: PresenceDoc[];
    write: boolean;
    onOpenPeer: (key: string) => void;
  },
) {
  const up = peers.filter((p) => p.connected).length;
  return html`<section class="view network">
    <div class="self card">
      <div class="card-head">
        <span class="dot self"></span>
        <strong>${self.name ?? "this peer"}</strong>
        <code class="key" title=${self.key}>${shortKey(self.key)}</code>
        <span class="muted">${up} of ${peers.length} peers connected</span>
      </div>
      <div class="addrs">${self.addrs.map((a) => html`<code>${a}</code>`)}</div>
    </div>
    <div class="net-top">
      <div class="net-graph">
        <${Graph} self=${self} peers=${peers} presence=${presence} />
        <div class="legend">
          <span><i class="dot up"></i> connected</span>
          <span><i class="dot away"></i> away</span>
          <span><i class="dot heard"></i> heard through presence</span>
        </div>
      </div>
      ${
    peers.length === 0
      ? html`<p class="empty">No peers yet: <code>awp connect ADDRESS</code></p>`
      : html`<div class="cards">${
        peers.map((p) =>
          html`
            <${PeerCard} key=${p.key} p=${p} write=${write}
              onOpen=${onOpenPeer} />
          `
        )
      }</div>`
  }
    </div>
    ${
    presence.length
      ? html`
        <h2>Presence</h2>
        <table class="grid presence">
          <thead>
            <tr>
              <th>agent</th>
              <th>hops</th>
              <th>via</th>
              <th>harness</th>
              <th>model</th>
              <th>unread</th>
              <th>heard</th>
            </tr>
          </thead>
          <tbody>${presence.map((d) =>
            html`
              <tr>
                <td><strong>${d.name ?? shortKey(d.origin)}</strong>
                            ${d.about
                              ? html`<div class="muted">${d.about}</div>`
                              : null}</td>
                <td>${d.hops}</td>
                <td>${displayName(
                  peers.find((p) => p.key === d.via) ?? { key: d.via },
                )}</td>
                <td>${d.harness ?? "—"}</td>
                <td>${d.model ?? "—"}</td>
                <td>${d.unread ?? 0}</td>
                <td>${ago(Date.now() - d.age_ms)}</td>
              </tr>
            `
          )}</tbody>
        </table>
      `
      : null
  }
  </section>`;
}
