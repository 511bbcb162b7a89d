/**
 * Transfers: blobs in flight with progress bars and rates, then the
 * finished ones.
 *
 * @module
 */

import type { Transfer } from "../dashboard_types.ts";
import { ago, bytes, html, shortKey } from "./html.ts";

const FINISHED = new Set(["done", "complete", "refused", "failed"]);

function Row({ t }: { t: Transfer }) {
  const total = t.total > 0 ? t.total : 0;
  const done = FINISHED.has(t.status);
  const ok = t.status === "done" || t.status === "complete";
  const pct = total
    ? Math.min(100, Math.round((t.bytes / total) * 100))
    : ok
    ? 100
    : 0;
  return html`
    <div class=${`transfer ${done ? "finished" : "active"} ${
      ok ? "ok" : ""
    }`} data-ref=${t.ref}>
      <div class="transfer-head">
        <span class="dir">${t.dir === "in" ? "↓ from" : "↑ to"}</span>
        <strong>${t.peerName ?? shortKey(t.peer)}</strong>
        <span class="blob-name">${t.name ?? t.ref}</span>
        <span class=${`chip blob-${t.status}`}>${t.status}</span>
      </div>
      <div class="bar" role="progressbar" aria-valuemin="0" aria-valuemax="100"
        aria-valuenow=${pct}>
        <div class="fill" style=${{ width: `${pct}%` }}></div>
      </div>
      <div class="transfer-foot muted">
        <span class="amount">${bytes(t.bytes)} of ${bytes(
          t.total,
        )} · ${pct}%</span>
        <span>${!done && t.rate > 0
          ? `${bytes(t.rate)}/s`
          : done
          ? ago(t.updated)
          : ""}</span>
      </div>
    </div>
  `;
}

/** The Transfers view. */
export function TransfersView({ transfers }: { transfers: Transfer[] }) {
  const active = transfers.filter((t) => !FINISHED.has(t.status));
  const finished = transfers.filter((t) => FINISHED.has(t.status));
  return html`<section class="view transfers">
    <h2>In flight <span class="muted">${active.length}</span></h2>
    ${
    active.length
      ? html`<div class="transfer-list active-list">${
        active.map((t) => html`<${Row} key=${t.dir + t.peer + t.ref} t=${t} />`)
      }</div>`
      : html`<p class="empty">Nothing moving.</p>`
  }
    <h2>Finished <span class="muted">${finished.length}</span></h2>
    ${
    finished.length
      ? html`<div class="transfer-list finished-list">${
        finished.map((t) =>
          html`<${Row} key=${t.dir + t.peer + t.ref} t=${t} />`
        )
      }</div>`
      : html`<p class="empty">None yet.</p>`
  }
  </section>`;
}
