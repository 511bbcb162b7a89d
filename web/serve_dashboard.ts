/**
 * Serves the dashboard: the page and its bundled script and style (embedded,
 * so a `deno compile`d binary serves them), JSON endpoints, blob downloads
 * and a live server-sent event stream that resumes from `Last-Event-ID`.
 *
 * Safety: answers only requests whose Host is the bound name (or one of
 * `allowHosts`), so a DNS-rebinding page cannot read it; a strict CSP with
 * no inline script; downloads are attachments. Writes (`write: true`) need
 * the same origin and the per-run token the page carries.
 *
 * @module
 */

import { APP_CSS, APP_JS } from "./app_bundle.generated.ts";
import { DashboardFeed, type DashboardSource } from "./dashboard_feed.ts";
import { dashboardPage } from "./dashboard_page.ts";
import { readConversation } from "./read_conversation.ts";
import { errorText as oneLine } from "../wire/error_text.ts";
import { serveHttp } from "../net/serve_http.ts";

/** Where and how to serve. */
export interface DashboardServerOptions {
  /** Interface to bind. Default "127.0.0.1". */
  hostname?: string;
  /** Port; 0 picks a free one. Default 0. */
  port?: number;
  /** Extra Host values (`name` or `name:port`) to answer, e.g. behind a tunnel. */
  allowHosts?: string[];
  /** Let the page send msgs, set states and grant. Default false. */
  write?: boolean;
}

/** A running dashboard. */
export interface DashboardServer {
  /** Base URL, e.g. `http://127.0.0.1:7788/`. */
  url: string;
  /** Whether the page may write. */
  write: boolean;
  /** Ends every stream and stops the server. */
  close(): Promise<void>;
}

/** Capabilities the page may grant (as `awp grant`). */
const GRANTABLE = new Set([
  "exec",
  "fs:read",
  "fs:write",
  "introduce",
  "admin",
]);
/** A stream whose reader stopped reading is cut off past this many bytes queued. */
const MAX_QUEUED_BYTES = 16 * 1024 * 1024;
const KEEPALIVE_MS = 15_000;

const SECURITY_HEADERS: Record<string, string> = {
  "content-security-policy": [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data:",
    "connect-src 'self'",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join("; "),
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "x-frame-options": "DENY",
  "cache-control": "no-store",
};

/**
 * Starts the dashboard for `source`'s Peer.
 *
 * @example
 * ```ts
 * import { Peer } from "../peer/peer.ts";
 * import { serveDashboard } from "./serve_dashboard.ts";
 * const peer = await Peer.open({ memory: true, name: "alice" });
 * const web = await serveDashboard({ peer, self: () => ({ key: peer.key, addrs: [] }) });
 * console.log(web.url); // http://127.0.0.1:PORT/
 * await web.close();
 * await peer.close();
 * ```
 */
export async function serveDashboard(
  source: DashboardSource,
  options: DashboardServerOptions = {},
): Promise<DashboardServer> {
  const write = options.write ?? false;
  const hostname = options.hostname ?? "127.0.0.1";
  const feed = new DashboardFeed(source, { write });
  const token = write ? randomToken() : "";
  const streams = new Set<() => void>();
  const peer = source.peer;
  let hosts = new Set<string>();
  let origin = "";

  const blobUrl = (key: string, dir: string, ref: string) =>
    `/api/blob?${new URLSearchParams({ peer: key, dir, ref })}`;

  const handler = async (req: Request): Promise<Response> => {
    const host = req.headers.get("host")?.trim().toLowerCase() ?? "";
    if (!hosts.has(host)) {
      return text(403, "forbidden: unexpected Host\n");
    }
    const url = new URL(req.url);
    if (req.method === "POST") {
      if (!write) {
        return text(403, "read-only dashboard (start it with --write)\n");
      }
      if (req.headers.get("origin") !== origin) {
        return text(403, "forbidden: another origin\n");
      }
      if (req.headers.get("x-awp-token") !== token) {
        return text(403, "forbidden: bad token\n");
      }
      try {
        return json(await act(url.pathname, await req.json()));
      } catch (error) {
        return text(400, `${oneLine(error)}\n`);
      }
    }
    if (req.method !== "GET" && req.method !== "HEAD") {
      return text(405, "method not allowed\n");
    }
    switch (url.pathname) {
      case "/":
      case "/index.html":
        return respond(dashboardPage(token), "text/html; charset=utf-8");
      case "/app.js":
        return respond(APP_JS, "text/javascript; charset=utf-8");
      case "/app.css":
        return respond(APP_CSS, "text/css; charset=utf-8");
      case "/events":
        return events(req);
      case "/api/snapshot":
        return json(await feed.snapshot());
      case "/api/conversation": {
        const key = url.searchParams.get("peer");
        const th = url.searchParams.get("th");
        if (!key || !th) return text(400, "missing ?peer=KEY&th=THREAD\n");
        return json(await readConversation(peer, key, th, blobUrl));
      }
      case "/api/blob":
        return await blob(url.searchParams);
      default:
        return text(404, "not found\n");
    }
  };

  const act = async (
    path: string,
    body: Record<string, unknown>,
  ): Promise<unknown> => {
    const key = need(body, "peer");
    switch (path) {
      case "/api/send": {
        const th = optional(body, "th");
        const subject = optional(body, "subject");
        const sent = await peer.send(key, need(body, "text"), {
          ...(th ? { thread: th } : {}),
          ...(subject ? { subject } : {}),
        });
        return { id: sent.id, th: sent.th };
      }
      case "/api/state": {
        const sent = await peer.setState(
          key,
          need(body, "th"),
          need(body, "state"),
          optional(body, "note"),
        );
        return { id: sent.id, th: sent.th };
      }
      case "/api/grant": {
        const caps = Array.isArray(body.caps) ? body.caps.map(String) : [];
        if (caps.length === 0) throw new Error("missing caps");
        for (const c of caps) {
          if (!GRANTABLE.has(c)) throw new Error(`unknown capability "${c}"`);
        }
        const ttlMs = typeof body.ttlMs === "number" ? body.ttlMs : 3_600_000;
        const grant = await peer.grant(key, caps, { ttlMs });
        return { exp: grant.exp, caps: grant.caps };
      }
      default:
        throw new Error(`unknown action ${path}`);
    }
  };

  const blob = async (q: URLSearchParams): Promise<Response> => {
    const key = q.get("peer") ?? "";
    const ref = q.get("ref") ?? "";
    const dir = q.get("dir") === "out" ? "out" : "in";
    const rec = key && ref ? await peer.store.blob(key, ref, dir) : undefined;
    if (!rec || rec.status !== "complete") return text(404, "no such blob\n");
    let file: Deno.FsFile;
    try {
      file = await Deno.open(rec.path, { read: true });
    } catch {
      return text(404, "the blob's bytes are gone\n");
    }
    const name = (rec.name ?? ref).replace(/[^\w.\-]+/g, "_");
    return new Response(file.readable, {
      headers: {
        ...SECURITY_HEADERS,
        // Never rendered here: remote bytes are a download.
        "content-type": "application/octet-stream",
        "content-disposition": `attachment; filename="${name}"`,
        "content-length": String(rec.size),
      },
    });
  };

  const events = (req: Request): Response => {
    const encoder = new TextEncoder();
    let stop = () => {};
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        let open = true;
        const put = (chunk: string) => {
          if (!open) return;
          if ((controller.desiredSize ?? 0) < -MAX_QUEUED_BYTES) {
            stop();
            return;
          }
          controller.enqueue(encoder.encode(chunk));
        };
        put("retry: 1000\n\n");
        const unsubscribe = feed.subscribe(
          req.headers.get("last-event-id"),
          (e) => put(`id: ${e.id}\nevent: ${e.event}\ndata: ${e.data}\n\n`),
        );
        const keepalive = setInterval(
          () => put(": keepalive\n\n"),
          KEEPALIVE_MS,
        );
        stop = () => {
          if (!open) return;
          open = false;
          clearInterval(keepalive);
          unsubscribe();
          streams.delete(stop);
          try {
            controller.close();
          } catch { /* already closed */ }
        };
        streams.add(stop);
      },
      cancel() {
        stop();
      },
    }, new ByteLengthQueuingStrategy({ highWaterMark: 64 * 1024 }));
    return new Response(body, {
      headers: {
        ...SECURITY_HEADERS,
        "content-type": "text/event-stream; charset=utf-8",
      },
    });
  };

  const { server, port, shownHost: shown } = await serveHttp(
    { hostname, port: options.port },
    handler,
  );
  const bound = `${shown}:${port}`.toLowerCase();
  hosts = new Set([bound]);
  if (shown === "127.0.0.1" || shown === "[::1]") {
    hosts.add(`localhost:${port}`);
  }
  for (const h of options.allowHosts ?? []) {
    const name = h.trim().toLowerCase();
    hosts.add(name);
    if (!/:\d+$/.test(name)) hosts.add(`${name}:${port}`);
  }
  origin = `http://${bound}`;
  return {
    url: `http://${bound}/`,
    write,
    async close() {
      for (const stop of [...streams]) stop();
      await server.shutdown();
      await feed.close();
    },
  };
}

function need(body: Record<string, unknown>, field: string): string {
  const v = body?.[field];
  if (typeof v !== "string" || v === "") throw new Error(`missing ${field}`);
  return v;
}

function optional(
  body: Record<string, unknown>,
  field: string,
): string | undefined {
  const v = body?.[field];
  return typeof v === "string" && v !== "" ? v : undefined;
}

function randomToken(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(24));
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

function respond(body: string, type: string): Response {
  return new Response(body, {
    headers: { ...SECURITY_HEADERS, "content-type": type },
  });
}

function text(status: number, body: string): Response {
  return new Response(body, {
    status,
    headers: {
      ...SECURITY_HEADERS,
      "content-type": "text/plain; charset=utf-8",
    },
  });
}

function json(body: unknown): Response {
  return respond(JSON.stringify(body), "application/json; charset=utf-8");
}
