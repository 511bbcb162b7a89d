/**
 * The dashboard page: tabs over one live state, routed by the URL hash
 * (`#/network`, `#/threads`, `#/c/PEER/TH`, `#/transfers`, `#/activity`).
 *
 * @module
 */

import { render } from "npm:preact@^10.29.8";
import { useEffect, useState } from "npm:preact@^10.29.8/hooks";
import { ActivityView } from "./activity_view.ts";
import { ConversationView } from "./conversation_view.ts";
import { html, shortKey } from "./html.ts";
import { type LiveState, useLiveState } from "./live_state.ts";
import { NetworkView } from "./network_view.ts";
import { type ThreadFilter, ThreadsView } from "./threads_view.ts";
import { TransfersView } from "./transfers_view.ts";

interface Route {
  view: "network" | "threads" | "conversation" | "transfers" | "activity";
  peer?: string;
  th?: string;
  filter: ThreadFilter;
}

function parseHash(hash: string): Route {
  const [path, query] = hash.replace(/^#\/?/, "").split("?");
  const parts = path.split("/").map(decodeURIComponent);
  const q = new URLSearchParams(query ?? "");
  const filter = { peer: q.get("peer") ?? "", state: q.get("state") ?? "" };
  if (parts[0] === "c" && parts[1] && parts[2]) {
    return { view: "conversation", peer: parts[1], th: parts[2], filter };
  }
  const views = ["threads", "transfers", "activity"] as const;
  const view = views.find((v) => v === parts[0]) ?? "network";
  return { view, filter };
}

function go(hash: string): void {
  location.hash = hash;
}

function useRoute(): Route {
  const [route, setRoute] = useState(parseHash(location.hash));
  useEffect(() => {
    const on = () => setRoute(parseHash(location.hash));
    addEventListener("hashchange", on);
    return () => removeEventListener("hashchange", on);
  }, []);
  return route;
}

function Tabs({ route, s }: { route: Route; s: LiveState }) {
  const active =
    s.transfers.filter((t) =>
      !["done", "complete", "refused", "failed"].includes(t.status)
    ).length;
  const unread = s.threads.reduce((n, t) => n + t.unread, 0);
  const up = s.peers.filter((p) => p.connected).length;
  const tab = (view: Route["view"], label: string, count?: number) =>
    html`<a href=${`#/${view}`} class=${`tab tab-${view} ${
      route.view === view ? "on" : ""
    }`}>${label}${
      count ? html`<span class="count">${count}</span>` : null
    }</a>`;
  return html`<nav class="tabs">
    ${tab("network", "Network", up)}
    ${tab("threads", "Threads", unread)}
    ${
    route.view === "conversation"
      ? html`<a class="tab tab-conversation on">Conversation</a>`
      : null
  }
    ${tab("transfers", "Transfers", active)}
    ${tab("activity", "Activity")}
  </nav>`;
}

function App() {
  const s = useLiveState();
  const route = useRoute();
  if (!s) return html`<p class="loading">connecting to the daemon…</p>`;
  const selfName = s.self.name ?? shortKey(s.self.key);
  const threadsHash = (f: ThreadFilter) =>
    `#/threads?${new URLSearchParams({ peer: f.peer, state: f.state })}`;
  let body;
  switch (route.view) {
    case "threads":
      body = html`
        <${ThreadsView} threads=${s.threads} peers=${s.peers}
          filter=${route.filter} onFilter=${(f: ThreadFilter) =>
            go(threadsHash(f))}
          onOpen=${(peer: string, th: string) =>
            go(`#/c/${encodeURIComponent(peer)}/${encodeURIComponent(th)}`)} />
      `;
      break;
    case "conversation":
      body = html`
        <${ConversationView} key=${`${route.peer} ${route.th}`}
          peer=${route.peer} th=${route.th} selfName=${selfName}
          touched=${s.touched[`${route.peer} ${route.th}`] ?? 0}
          row=${s.threads.find((t) =>
            t.peer === route.peer && t.th === route.th
          )}
          write=${s.write} />
      `;
      break;
    case "transfers":
      body = html`<${TransfersView} transfers=${s.transfers} />`;
      break;
    case "activity":
      body = html`<${ActivityView} activity=${s.activity} peers=${s.peers} />`;
      break;
    default:
      body = html`
        <${NetworkView} self=${s.self} peers=${s.peers}
          presence=${s.presence} write=${s.write}
          onOpenPeer=${(peer: string) =>
            go(threadsHash({ peer, state: "" }))} />
      `;
  }
  return html`
    <div class="shell">
      <header class="top">
        <div
          class="brand"><span class="logo">◆</span> awp <span class="muted">dashboard</span></div>
        <${Tabs} route=${route} s=${s} />
        <div class=${`status ${s.online ? "online" : "offline"}`}>
            <span class="who">${selfName}</span>
            <span class="live">${s.online ? "live" : "reconnecting…"}</span>
            ${s.write ? html`<span class="badge write">write</span>` : null}
          </div>
      </header>
      <main>${body}</main>
    </div>
  `;
}

render(html`<${App} />`, document.getElementById("app")!);
