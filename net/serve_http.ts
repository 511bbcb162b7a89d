/**
 * A local HTTP server for the inspector and the dashboard: `Deno.serve` on
 * `hostname` and `port` (0 picks one), resolved once it listens, with the
 * host to show in its URL (a wildcard address shown as its loopback twin,
 * IPv6 in brackets).
 *
 * @module
 */

/** A listening server and how to reach it. */
export interface ServedHttp {
  /** The server (`shutdown()` to stop it). */
  server: Deno.HttpServer<Deno.NetAddr>;
  /** The port it listens on. */
  port: number;
  /** The host for its URL: `127.0.0.1`, `[::1]`, `[fe80::1]`, `example`. */
  shownHost: string;
}

/**
 * Serves `handler` on `hostname`:`port` and resolves once it listens.
 *
 * @example
 * ```ts
 * import { serveHttp } from "./serve_http.ts";
 * const { server, port, shownHost } = await serveHttp(
 *   { hostname: "127.0.0.1" },
 *   () => new Response("hi"),
 * );
 * const text = await (await fetch(`http://${shownHost}:${port}/`)).text();
 * console.log(text); // "hi"
 * await server.shutdown();
 * ```
 */
export async function serveHttp(
  options: { hostname: string; port?: number },
  handler: Deno.ServeHandler<Deno.NetAddr>,
): Promise<ServedHttp> {
  const listening = Promise.withResolvers<Deno.NetAddr>();
  const server = Deno.serve({
    hostname: options.hostname,
    port: options.port ?? 0,
    onListen: (addr) => listening.resolve(addr),
  }, handler);
  const { port } = await listening.promise;
  return { server, port, shownHost: shownHost(options.hostname) };
}

function shownHost(hostname: string): string {
  if (hostname === "0.0.0.0" || hostname === "") return "127.0.0.1";
  if (hostname === "::") return "[::1]";
  return hostname.includes(":") ? `[${hostname}]` : hostname;
}
