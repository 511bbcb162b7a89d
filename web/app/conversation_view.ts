/**
 * Conversation: one thread as a chat. Text shows as text (never HTML),
 * code highlighted, data pretty-printed, blobs with size and a download
 * link; state changes inline; our msgs marked queued, sent or acked; exec
 * and fs requests shown with the answers that name them in `re`.
 *
 * @module
 */

import { useEffect, useState } from "npm:preact@^10.29.8/hooks";
import type {
  Conversation,
  ConversationBlob,
  ConversationItem,
  ThreadRow,
} from "../dashboard_types.ts";
import { highlight } from "./highlight.ts";
import { bytes, clock, html, shortKey, stateClass } from "./html.ts";
import { act } from "./live_state.ts";

const REQUESTS: Record<string, string> = {
  "application/vnd.awp.exec+json": "exec",
  "application/vnd.awp.fs-read+json": "fs:read",
  "application/vnd.awp.fs-write+json": "fs:write",
  "application/vnd.awp.admin+json": "admin",
};

function requestOf(item: ConversationItem): string | undefined {
  for (const p of item.parts ?? []) {
    if (p.k === "data" && typeof p.mime === "string" && REQUESTS[p.mime]) {
      return REQUESTS[p.mime];
    }
  }
  return undefined;
}

function Blob({ b }: { b: ConversationBlob }) {
  return html`<div class="blob">
    <span class="blob-icon">⬇</span>
    <span class="blob-name">${b.name ?? b.ref}</span>
    <span class="muted">${bytes(b.size)}</span>
    <span class=${`chip blob-${b.status}`}>${b.status}</span>
    ${
    b.download
      ? html`<a class="download" href=${b.download} download>download</a>`
      : null
  }
  </div>`;
}

function Part({ p }: { p: Record<string, unknown> }) {
  switch (p.k) {
    case "text":
      return html`<div class="text">${String(p.text ?? "")}</div>`;
    case "code":
      return html`<figure class="code">
        ${
        typeof p.lang === "string"
          ? html`<figcaption>${p.lang}</figcaption>`
          : null
      }
        <pre class="hljs"><code>${
        highlight(
          String(p.text ?? ""),
          typeof p.lang === "string" ? p.lang : undefined,
        )
      }</code></pre>
      </figure>`;
    case "data": {
      const cap = typeof p.mime === "string" ? REQUESTS[p.mime] : undefined;
      return html`
        <figure class=${`data ${cap ? "request" : ""}`}>
          <figcaption>${cap ? `${cap} request` : p.mime ?? "data"}</figcaption>
          <pre class="hljs"><code>${highlight(
            JSON.stringify(p.data, null, 2) ?? "null",
            "json",
          )}</code></pre>
        </figure>
      `;
    }
    case "blob":
      return null; // drawn from item.blobs, with its status
    default:
      return html`<pre class="unknown">${JSON.stringify(p, null, 2)}</pre>`;
  }
}

const MARKS: Record<string, [string, string]> = {
  queued: ["◷", "queued: waiting for the peer"],
  sent: ["✓", "sent, not acked yet"],
  acked: ["✓✓", "acked: stored by the peer"],
};

function Msg(
  { item, who, answers }: {
    item: ConversationItem;
    who: string;
    answers: ConversationItem[];
  },
) {
  const mark = item.delivery ? MARKS[item.delivery] : undefined;
  return html`
    <div class=${`msg ${item.dir}`} data-id=${item.id}>
      <div class="bubble">
          <div class="meta">
            <strong>${who}</strong>
            <span class="muted">${clock(item.ts)}</span>
            ${mark
              ? html`<span class=${`ack ${item.delivery}`} title=${mark[1]}>${
                mark[0]
              } ${item.delivery}</span>`
              : null}
          </div>
          ${item.subject
            ? html`<div class="subject">${item.subject}</div>`
            : null}
          ${(item.parts ?? []).map((p) => html`<${Part} p=${p} />`)}
          ${(item.blobs ?? []).map((b) => html`<${Blob} b=${b} />`)}
          ${answers.length
            ? html`<div class="answers">${
              answers.map((a) =>
                html`<div class="answer" data-id=${a.id}>
            <div class="meta"><strong>result</strong>
              <span class="muted">${clock(a.ts)}</span></div>
            ${(a.parts ?? []).map((p) => html`<${Part} p=${p} />`)}
            ${(a.blobs ?? []).map((b) => html`<${Blob} b=${b} />`)}
          </div>`
              )
            }</div>`
            : null}
        </div>
    </div>
  `;
}

function Composer(
  { peer, th, onSent }: { peer: string; th: string; onSent: () => void },
) {
  const [text, setText] = useState("");
  const [state, setState] = useState("working");
  const [error, setError] = useState("");
  const run = async (f: () => Promise<unknown>) => {
    try {
      await f();
      setError("");
      onSent();
    } catch (e) {
      setError((e as Error).message);
    }
  };
  return html`
    <div class="composer">
      <textarea placeholder="Write a message…" value=${text}
        onInput=${(e: Event) =>
          setText((e.target as HTMLTextAreaElement).value)} />
      <div class="composer-actions">
        <button class="primary" disabled=${!text.trim()}
          onClick=${() =>
            run(async () => {
              await act("send", { peer, th, text });
              setText("");
            })}>send</button>
        <select value=${state} onChange=${(e: Event) =>
          setState((e.target as HTMLSelectElement).value)}>
            ${["open", "working", "waiting", "done", "failed", "closed"].map((
              s,
            ) => html`<option value=${s}>${s}</option>`)}
          </select>
        <button onClick=${() => run(() => act("state", { peer, th, state }))}>
            set state</button>
        <span class="error">${error}</span>
      </div>
    </div>
  `;
}

/** The Conversation view of thread `th` with `peer`. */
export function ConversationView(
  { peer, th, selfName, touched, write, row }: {
    peer: string;
    th: string;
    selfName: string;
    /** The thread's record (both states), when listed. */
    row?: ThreadRow;
    /** Changes whenever the server says the thread changed. */
    touched: number;
    write: boolean;
  },
) {
  const [conv, setConv] = useState<Conversation | undefined>(undefined);
  const [error, setError] = useState("");
  const [reload, setReload] = useState(0);
  useEffect(() => {
    let live = true;
    fetch(`/api/conversation?${new URLSearchParams({ peer, th })}`)
      .then(async (r) => {
        if (!r.ok) throw new Error((await r.text()).trim());
        return await r.json() as Conversation;
      })
      .then((c) => live && (setConv(c), setError("")))
      .catch((e) => live && setError((e as Error).message));
    return () => {
      live = false;
    };
  }, [peer, th, touched, reload]);
  if (error) return html`<p class="error">${error}</p>`;
  if (!conv) return html`<p class="loading">loading…</p>`;
  const them = conv.peerName ?? shortKey(peer);
  const requests = new Set(
    conv.items.filter((i) => requestOf(i)).map((i) => i.id),
  );
  const answersOf = (id: string) =>
    conv.items.filter((i) => i.kind === "msg" && i.re === id);
  return html`<section class="view conversation">
    <header class="conv-head">
      <h2>${conv.subject ?? "(no subject)"}</h2>
      <span class="muted">with <strong>${them}</strong> · <code>${th}</code></span>
      <span class="states">
        <span class="muted">mine</span>
        ${
    row?.mine
      ? html`<span class=${`chip ${
        stateClass(row.mine.state)
      }`}>${row.mine.state}</span>`
      : html`<span class="muted">—</span>`
  }
        <span class="muted">theirs</span>
        ${
    row?.theirs
      ? html`<span class=${`chip ${
        stateClass(row.theirs.state)
      }`}>${row.theirs.state}</span>`
      : html`<span class="muted">—</span>`
  }
      </span>
    </header>
    <div class="chat">
      ${
    conv.items.length === 0 ? html`<p class="empty">Nothing yet.</p>` : null
  }
      ${
    conv.items.map((item) => {
      if (item.kind === "state") {
        return html`<div class="state-line" data-id=${item.id}>
          <span>${item.dir === "out" ? selfName : them} set</span>
          <span class=${`chip ${stateClass(item.state)}`}>${item.state}</span>
          ${item.note ? html`<span class="muted">“${item.note}”</span>` : null}
          <span class="muted">${clock(item.ts)}</span>
        </div>`;
      }
      if (item.re && requests.has(item.re)) return null; // under its request
      return html`
        <${Msg} item=${item}
          who=${item.dir === "out" ? selfName : them}
          answers=${requests.has(item.id) ? answersOf(item.id) : []} />
      `;
    })
  }
    </div>
    ${
    write
      ? html`
        <${Composer} peer=${peer} th=${th}
          onSent=${() => setReload((n) => n + 1)} />
      `
      : null
  }
  </section>`;
}
