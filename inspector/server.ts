/**
 * Serves the inspector: the page, JSON endpoints, server-rendered statechart
 * SVGs and two live WebSocket streams of the hub's events (our compact
 * format on `/ws`, `@statelyai/inspect`'s format on `/ws/stately`).
 *
 * Only loopback Host headers are answered unless `allowHosts` says otherwise
 * (DNS-rebinding protection), and WebSockets opened by pages of another
 * origin are refused (a web page may open a WebSocket to localhost).
 *
 * @module
 */

import type { HubEvent, InspectionHub } from "./inspection_hub.ts";
import { machineToDot } from "./machine_to_dot.ts";
import { renderSvg } from "./render_svg.ts";
import { INSPECTOR_PAGE_HTML, STATELY_BRIDGE_HTML } from "./page.ts";
import { statelyActor, toStatelyEvent } from "./to_stately_event.ts";
import { serveHttp } from "../net/serve_http.ts";

/** Where and for whom to serve. */
export interface InspectorServerOptions {
  /** Interface to bind. Default "127.0.0.1". */
  hostname?: string;
  /** Port; 0 picks a free one. Default 0. */
  port?: number;
  /**
   * Extra Host names (or `name:port`) to answer besides loopback ones,
   * e.g. when reached through a tunnel or a LAN name.
   */
  allowHosts?: string[];
}

/** A running inspector server. */
export interface InspectorServer {
  /** Base URL of the page, e.g. `http://127.0.0.1:40123/`. */
  url: string;
  /** Closes every WebSocket and stops the server. */
  close(): Promise<void>;
}

/** Clients that stop reading are cut off rather than buffered forever. */
const MAX_BUFFERED = 8 * 1024 * 1024;

/** The tab's icon: a small statechart (two states and a transition). */
const FAVICON =
  '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16"><rect x="1" y="5" width="5" height="6" rx="2" fill="#3182ce"/>' +
  '<rect x="10" y="5" width="5" height="6" rx="2" fill="#2b6cb0"/><path d="M6 8h4" stroke="#1a202c" stroke-width="1.5"/></svg>';

/**
 * Starts the inspector server for `hub`.
 *
 * @example
 * ```ts
 * import { InspectionHub } from "./inspection_hub.ts";
 * import { serveInspector } from "./server.ts";
 * const server = await serveInspector(new InspectionHub());
 * console.log(`inspector at ${server.url}`);
 * await server.close();
 * ```
 */
export async function serveInspector(
  hub: InspectionHub,
  options: InspectorServerOptions = {},
): Promise<InspectorServer> {
  const hostname = options.hostname ?? "127.0.0.1";
  const allow = new Set((options.allowHosts ?? []).map((h) => h.toLowerCase()));
  const sockets = new Set<WebSocket>();
  const svgs = new Map<string, Promise<string>>();

  const diagram = (key: string): Promise<string> | undefined => {
    const def = hub.machine(key);
    if (def === undefined) return undefined;
    let svg = svgs.get(key);
    if (!svg) {
      svg = renderSvg(machineToDot(def));
      svgs.set(key, svg);
    }
    return svg;
  };

  const handler = async (req: Request): Promise<Response> => {
    if (!hostAllowed(req.headers.get("host"), allow)) {
      return text(
        403,
        "forbidden: Host is not loopback and not in allowHosts\n",
      );
    }
    const url = new URL(req.url);
    if (req.method !== "GET" && req.method !== "HEAD") {
      return text(405, "method not allowed\n");
    }
    switch (url.pathname) {
      case "/":
      case "/index.html":
        return html(INSPECTOR_PAGE_HTML);
      case "/stately":
        return html(STATELY_BRIDGE_HTML);
      case "/ws":
      case "/ws/stately": {
        if (req.headers.get("upgrade")?.toLowerCase() !== "websocket") {
          return text(426, "expected a WebSocket upgrade\n");
        }
        if (
          !originAllowed(
            req.headers.get("origin"),
            req.headers.get("host"),
            allow,
          )
        ) {
          return text(403, "forbidden: WebSocket from another origin\n");
        }
        const stately = url.pathname === "/ws/stately" ||
          url.searchParams.get("format") === "stately";
        const { socket, response } = Deno.upgradeWebSocket(req);
        stream(socket, stately);
        return response;
      }
      case "/api/actors":
        return json(hub.actors());
      case "/api/log": {
        const id = url.searchParams.get("id");
        if (!id) return text(400, "missing ?id=<actor session id>\n");
        if (!hub.actor(id)) return text(404, `no actor ${id}\n`);
        return json(hub.log(id, Number(url.searchParams.get("after") ?? 0)));
      }
      case "/api/machine":
      case "/api/diagram": {
        const key = url.searchParams.get("key");
        if (!key) return text(400, "missing ?key=<machine key>\n");
        if (url.pathname === "/api/machine") {
          const def = hub.machine(key);
          return def === undefined
            ? text(404, `no machine ${key}\n`)
            : json(def);
        }
        const svg = diagram(key);
        if (!svg) return text(404, `no machine ${key}\n`);
        try {
          return new Response(await svg, {
            headers: {
              "content-type": "image/svg+xml; charset=utf-8",
              "cache-control": "no-store",
            },
          });
        } catch (err) {
          svgs.delete(key);
          return text(500, `cannot draw ${key}: ${(err as Error).message}\n`);
        }
      }
      case "/favicon.ico":
        return new Response(FAVICON, {
          headers: { "content-type": "image/svg+xml" },
        });
      default:
        return text(404, "not found\n");
    }
  };

  const stream = (socket: WebSocket, stately: boolean) => {
    let unsubscribe: (() => void) | undefined;
    const send = (msg: unknown) => {
      if (socket.readyState !== WebSocket.OPEN) return;
      if (socket.bufferedAmount > MAX_BUFFERED) {
        socket.close(1013, "too slow");
        return;
      }
      socket.send(JSON.stringify(msg));
    };
    socket.onopen = () => {
      sockets.add(socket);
      if (stately) {
        for (const actor of hub.actors()) send(statelyActor(hub, actor));
      } else {
        send({ type: "hello", version: 1, actors: hub.actors() });
      }
      unsubscribe = hub.subscribe((event: HubEvent) => {
        if (!stately) return send(event);
        const s = toStatelyEvent(hub, event);
        if (s) send(s);
      });
    };
    socket.onclose = () => {
      sockets.delete(socket);
      unsubscribe?.();
    };
    socket.onerror = () => {
      // onclose follows and cleans up.
    };
    socket.onmessage = () => {
      // The streams are one-way; the page fetches logs and diagrams by HTTP.
    };
  };

  const { server, port, shownHost } = await serveHttp(
    { hostname, port: options.port },
    handler,
  );
  return {
    url: `http://${shownHost}:${port}/`,
    async close() {
      const closing = [...sockets].map((s) =>
        new Promise<void>((resolve) => {
          if (s.readyState === WebSocket.CLOSED) return resolve();
          s.addEventListener("close", () => resolve(), { once: true });
          s.close(1001, "inspector closing");
          // A client that never answers the close handshake must not hang us.
          setTimeout(resolve, 1000);
        })
      );
      await Promise.all(closing);
      await server.shutdown();
    },
  };
}

/** Splits a Host header into its lower-case name, without port or brackets. */
function hostName(host: string): string {
  const h = host.trim().toLowerCase();
  if (h.startsWith("[")) {
    return h.slice(1, h.indexOf("]") > 0 ? h.indexOf("]") : undefined);
  }
  const colon = h.indexOf(":");
  return colon >= 0 && h.indexOf(":", colon + 1) < 0 ? h.slice(0, colon) : h;
}

function isLoopback(name: string): boolean {
  return name === "localhost" || name.endsWith(".localhost") ||
    name === "::1" ||
    /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(name);
}

function hostAllowed(host: string | null, allow: Set<string>): boolean {
  if (!host) return false;
  const name = hostName(host);
  return isLoopback(name) || allow.has(name) ||
    allow.has(host.trim().toLowerCase());
}

function originAllowed(
  origin: string | null,
  host: string | null,
  allow: Set<string>,
): boolean {
  if (origin === null) return true; // not a browser page
  let url: URL;
  try {
    url = new URL(origin);
  } catch {
    return false;
  }
  if (host && url.host.toLowerCase() === host.trim().toLowerCase()) return true;
  return hostAllowed(url.host, allow);
}

function text(status: number, body: string): Response {
  return new Response(body, {
    status,
    headers: { "content-type": "text/plain; charset=utf-8" },
  });
}

function html(body: string): Response {
  return new Response(body, {
    headers: {
      "content-type": "text/html; charset=utf-8",
      "cache-control": "no-store",
    },
  });
}

function json(body: unknown): Response {
  return new Response(JSON.stringify(body), {
    headers: {
      "content-type": "application/json; charset=utf-8",
      "cache-control": "no-store",
    },
  });
}
