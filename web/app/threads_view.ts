/**
 * Threads: every thread with both sides' states, unread counts and last
 * activity, filtered by peer and by state.
 *
 * @module
 */

import type { NetPeer, ThreadRow } from "../dashboard_types.ts";
import { ago, displayName, html, shortKey, stateClass } from "./html.ts";

/** The filters, kept in the URL so a reload keeps them. */
export interface ThreadFilter {
  peer: string;
  state: string;
}

const STATES = ["open", "working", "waiting", "done", "failed", "closed"];

function StateChip({ state }: { state?: { state: string; ts: string } }) {
  return state
    ? html`
      <span class=${`chip ${stateClass(state.state)}`}
        title=${state.ts}>${state.state}</span>
    `
    : html`<span class="muted">—</span>`;
}

/** The Threads view. */
export function ThreadsView(
  { threads, peers, filter, onFilter, onOpen }: {
    threads: ThreadRow[];
    peers: NetPeer[];
    filter: ThreadFilter;
    onFilter: (f: ThreadFilter) => void;
    onOpen: (peer: string, th: string) => void;
  },
) {
  // The usual states always, plus any other word a peer used.
  const states = [
    ...new Set([
      ...STATES,
      ...threads.flatMap((t) => [t.mine?.state, t.theirs?.state]).filter(
        (s): s is string => !!s,
      ),
    ]),
  ];
  const rows = threads.filter((t) =>
    (!filter.peer || t.peer === filter.peer) &&
    (!filter.state ||
      (filter.state === "unread"
        ? t.unread > 0
        : t.mine?.state === filter.state || t.theirs?.state === filter.state))
  );
  const select = (field: keyof ThreadFilter) => (e: Event) =>
    onFilter({ ...filter, [field]: (e.target as HTMLSelectElement).value });
  return html`<section class="view threads">
    <div class="toolbar">
      <label>peer <select class="filter-peer" value=${filter.peer}
          onChange=${select("peer")}>
        <option value="">all</option>
        ${
    peers.map((p) => html`<option value=${p.key}>${displayName(p)}</option>`)
  }
      </select></label>
      <label>state <select class="filter-state" value=${filter.state}
          onChange=${select("state")}>
        <option value="">any</option>
        <option value="unread">unread</option>
        ${states.map((s) => html`<option value=${s}>${s}</option>`)}
      </select></label>
      <span class="muted">${rows.length} of ${threads.length} threads</span>
    </div>
    ${
    rows.length === 0
      ? html`<p class="empty">No threads${
        threads.length ? " match" : " yet"
      }.</p>`
      : html`
        <table class="grid threads-table">
          <thead>
            <tr>
              <th>subject</th>
              <th>peer</th>
              <th>mine</th>
              <th>theirs</th>
              <th>unread</th>
              <th>last activity</th>
            </tr>
          </thead>
          <tbody>${rows.map((t) =>
            html`
              <tr class="thread-row" data-th=${t.th}
                onClick=${() => onOpen(t.peer, t.th)}>
                <td><strong>${t.subject ?? "(no subject)"}</strong>
                            <div class="muted mono">${t.th}</div></td>
                <td>${t.peerName ?? shortKey(t.peer)}</td>
                <td>
                  <${StateChip} state=${t.mine} />
                </td>
                <td>
                  <${StateChip} state=${t.theirs} />
                </td>
                <td>${t.unread
                  ? html`<span class="badge unread">${t.unread}</span>`
                  : html`<span class="muted">0</span>`}</td>
                <td title=${t.updated}>${ago(t.updated)}</td>
              </tr>
            `
          )}</tbody>
        </table>
      `
  }
  </section>`;
}
