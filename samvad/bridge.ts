/**
 * The inbound side: an HTTP server that speaks SAMVAD v1.2 for this peer.
 * It serves the card (this peer's Ed25519 key as the SAMVAD key), checks
 * every request ({@link ./request_verifier.ts}: replay window and nonce
 * before the RFC 9421 signature, rate limit per verified sender, skill,
 * trust tier, delegation, inputSchema), and turns each
 * into an AWP thread to the configured peer: skill -> subject, payload ->
 * a `data` part. The first reply msg with a data part (checked against the
 * outputSchema) is the result; text msgs before it are stream chunks; the
 * thread's `working`/`done`/`failed` states drive async tasks.
 *
 * @module
 */

import type { Part } from "../wire/types.ts";
import type { SendOptions, Sent } from "../peer/peer.ts";
import type { PeerEvent, PeerMessageEvent } from "../peer/peer_events.ts";
import {
  type AgentCard,
  buildCard,
  type CardCache,
  isLoopback,
} from "./card.ts";
import { type BridgeConfig, DEFAULT_RATE_LIMIT } from "./bridge_config.ts";
import {
  errorBodyOf,
  type RequestEnvelope,
  type ResponseEnvelope,
  SamvadError,
  type SamvadErrorBody,
  type SamvadMode,
} from "./envelope.ts";
import {
  parseSignatureInput,
  signatureHeadersOf,
  type SignBytes,
  signRequest,
  verifyRequest,
} from "./http_signature.ts";
import { schemaProblem } from "./skill_schemas.ts";
import { ThreadWatch } from "./thread_watch.ts";
import { errorText } from "../wire/error_text.ts";
import {
  RateLimitedError,
  RequestVerifier,
  type Verified,
} from "./request_verifier.ts";

/** The Peer methods the bridge uses. */
export interface BridgePeer {
  /** This peer's key. */
  readonly key: string;
  /** Sends a message (as `Peer.send`). */
  send(to: string, text: string, options?: SendOptions): Promise<Sent>;
  /** Sets a thread's state (as `Peer.setState`). */
  setState(to: string, th: string, state: string, note?: string): Promise<Sent>;
  /** The peer's events (as `Peer.events`). */
  events(): AsyncIterableIterator<PeerEvent>;
}

/** How a bridge starts. */
export interface BridgeOptions {
  /** HOST:PORT to listen on (port 0 for a free one). */
  listen: string;
  /** The bridge's `skills.json`. */
  config: BridgeConfig;
  /** The AWP peer that handles the skills (overrides config.to). */
  to?: string;
  /** Fetch cards over http and accept http callbacks, for loopback hosts only. */
  httpLoopback?: boolean;
  /** One log line (errors of callbacks, forwards). */
  log?: (line: string) => void;
}

/** What the bridge is given by its {@link SamvadAgent}. */
export interface BridgeDeps {
  peer: BridgePeer;
  publicKey: Uint8Array;
  sign: SignBytes;
  kid: string;
  cards: CardCache;
  /** Msgs on threads the bridge did not open (the forwarder). */
  onOtherMessage?: (e: PeerMessageEvent) => void;
}

interface Task {
  taskId: string;
  status: "pending" | "running" | "done" | "failed";
  result?: Record<string, unknown>;
  error?: SamvadErrorBody;
  /** When the record may be forgotten (1 h after it ended). */
  until?: number;
}

/** How the AWP side of one request reports back. */
interface DispatchHooks {
  onChunk?: (text: string) => void;
  onState?: (state: string) => void;
}

const MAX_BODY_BYTES = 1 << 20;
const TASK_RETENTION_MS = 60 * 60_000;
const KEEP_ALIVE_MS = 15_000;
const MODE_OF_PATH: Record<string, SamvadMode> = {
  "/agent/message": "sync",
  "/agent/task": "async",
  "/agent/stream": "stream",
};
const JSON_TYPE = { "content-type": "application/json" };

/**
 * A running SAMVAD bridge. Start it with {@link SamvadBridge.start}.
 *
 * @example
 * ```ts ignore
 * const samvad = await peer.samvad();
 * const bridge = await samvad.serve({ listen: "127.0.0.1:8788", config, to: "worker" });
 * console.log(bridge.card.id, bridge.url);
 * await bridge.close();
 * ```
 */
export class SamvadBridge {
  /** The card served at /.well-known/agent.json. */
  readonly card: AgentCard;
  /** The base URL it listens on. */
  readonly url: string;
  readonly #deps: BridgeDeps;
  readonly #o: BridgeOptions;
  readonly #to: string;
  readonly #server: Deno.HttpServer;
  readonly #watch: ThreadWatch;
  readonly #verifier: RequestVerifier;
  readonly #tasks = new Map<string, Task>();
  readonly #callbackWaiters = new Map<
    string,
    { agent: string; resolve: (r: ResponseEnvelope) => void }
  >();
  readonly #started = Date.now();
  readonly #closing = new AbortController();
  #active = 0;

  private constructor(
    deps: BridgeDeps,
    options: BridgeOptions,
    server: Deno.HttpServer,
    card: AgentCard,
    url: string,
    to: string,
  ) {
    this.#deps = deps;
    this.#o = options;
    this.#server = server;
    this.card = card;
    this.url = url;
    this.#to = to;
    this.#verifier = new RequestVerifier(
      card,
      options.config,
      deps.cards,
      options.httpLoopback === true,
    );
    this.#watch = new ThreadWatch(
      deps.peer.events(),
      (e) => deps.onOtherMessage?.(e),
    );
  }

  /** Listens and serves; throws one line when the address is taken or bad. */
  static async start(
    deps: BridgeDeps,
    options: BridgeOptions,
  ): Promise<SamvadBridge> {
    const to = options.to ?? options.config.to;
    if (!to) {
      throw new Error(
        'the SAMVAD bridge needs the AWP peer that handles its skills (--to PEER or "to" in skills.json)',
      );
    }
    const colon = options.listen.lastIndexOf(":");
    const hostname = options.listen.slice(0, colon).replace(/^\[|\]$/g, "");
    const port = Number(options.listen.slice(colon + 1));
    if (colon <= 0 || !Number.isInteger(port) || port < 0 || port > 65535) {
      throw new Error(`bad --listen "${options.listen}": use HOST:PORT`);
    }
    // Requests that come before the constructor ran wait for it.
    const made = Promise.withResolvers<SamvadBridge>();
    const ready = Promise.withResolvers<Deno.NetAddr>();
    const server = Deno.serve({
      hostname,
      port,
      onListen: (addr) => ready.resolve(addr as Deno.NetAddr),
      onError: (error) => errorResponse(error, undefined, crypto.randomUUID()),
    }, async (req) => (await made.promise).#handle(req));
    const addr = await ready.promise;
    const hostPort = `${
      addr.hostname.includes(":") ? `[${addr.hostname}]` : addr.hostname
    }:${addr.port}`;
    const c = options.config;
    const id = c.id ?? `agent://${hostPort}`;
    const scheme = options.httpLoopback && isLoopback(addr.hostname) && !c.url
      ? "http"
      : "https";
    const url = c.url ?? `${scheme}://${id.slice("agent://".length)}`;
    const card = buildCard({
      id,
      url,
      name: c.name ?? "AWP bridge",
      description: c.description ??
        "An Agent Wire Protocol peer answering SAMVAD calls",
      version: c.version ?? "0.1.0",
      publicKey: deps.publicKey,
      skills: c.skills,
      rateLimit: c.rateLimit ?? DEFAULT_RATE_LIMIT,
      ...(c.cardTTL !== undefined ? { cardTTL: c.cardTTL } : {}),
      bearer: c.skills.some((s) => s.trust === "authenticated"),
    });
    const bridge = new SamvadBridge(
      deps,
      options,
      server,
      card,
      `http://${hostPort}`,
      to,
    );
    made.resolve(bridge);
    return bridge;
  }

  /** Stops serving and waiting on threads. */
  async close(): Promise<void> {
    this.#closing.abort();
    await this.#server.shutdown();
    await this.#watch.close();
  }

  /**
   * Waits for the signed callback of a task we started elsewhere with
   * callbackUrl = `${url}/agent/callback`, verified against `agent`'s card.
   */
  expectCallback(traceId: string, agent: string): Promise<ResponseEnvelope> {
    return new Promise((resolve) => {
      this.#callbackWaiters.set(traceId, { agent, resolve });
    });
  }

  async #handle(req: Request): Promise<Response> {
    const path = new URL(req.url).pathname;
    if (req.method === "GET") {
      if (path === "/.well-known/agent.json") {
        return Response.json(this.card, {
          headers: { "cache-control": `public, max-age=${this.card.cardTTL}` },
        });
      }
      if (path === "/agent/health") {
        return Response.json({
          status: "ok",
          protocolVersion: "1.2",
          agentVersion: this.card.version,
          uptime: Math.floor((Date.now() - this.#started) / 1000),
          load: {
            activeRequests: this.#active,
            queuedTasks: [...this.#tasks.values()].filter((t) =>
              t.status === "pending" || t.status === "running"
            ).length,
          },
        });
      }
      if (path === "/agent/intro") {
        return new Response(this.#intro(), {
          headers: { "content-type": "text/markdown; charset=utf-8" },
        });
      }
      const task = /^\/agent\/task\/([^/]+)$/.exec(path);
      if (task) return this.#taskStatus(decodeURIComponent(task[1]));
    }
    if (req.method === "POST") {
      const mode = MODE_OF_PATH[path];
      if (mode) return await this.#request(req, path, mode);
      if (path === "/agent/callback") return await this.#callback(req, path);
    }
    return Response.json(
      { error: `no ${req.method} ${path} here` },
      { status: 404 },
    );
  }

  #intro(): string {
    if (this.#o.config.intro) return this.#o.config.intro;
    const lines = [
      `# ${this.card.name}`,
      "",
      this.card.description,
      "",
      "This agent is an Agent Wire Protocol (AWP) peer; each call becomes an AWP thread.",
      "",
      "## Skills",
      ...this.card.skills.map((s) =>
        `- \`${s.id}\` (${s.modes.join(", ")}; ${s.trust}): ${s.description}`
      ),
    ];
    return lines.join("\n") + "\n";
  }

  #taskStatus(taskId: string): Response {
    this.#forgetOldTasks();
    const task = this.#tasks.get(taskId);
    if (!task) {
      return Response.json({ error: "Task not found" }, { status: 404 });
    }
    const { until: _, ...record } = task;
    return Response.json(record);
  }

  #forgetOldTasks(): void {
    const now = Date.now();
    for (const [id, t] of this.#tasks) {
      if (t.until !== undefined && t.until < now) this.#tasks.delete(id);
    }
  }

  async #request(
    req: Request,
    path: string,
    mode: SamvadMode,
  ): Promise<Response> {
    const spanId = crypto.randomUUID();
    let traceId: string | undefined;
    this.#active++;
    try {
      const body = await readBody(req);
      const parsed = parseEnvelope(body);
      traceId = typeof parsed?.traceId === "string"
        ? parsed.traceId
        : undefined;
      const v = await this.#verifier.verify(
        req,
        path,
        mode,
        body,
        parsed,
        spanId,
      );
      if (mode === "sync") {
        const result = await this.#dispatch(v, {});
        return Response.json(
          { traceId, spanId, status: "ok", result } satisfies ResponseEnvelope,
        );
      }
      if (mode === "async") return this.#startTask(v);
      return this.#stream(v);
    } catch (error) {
      return errorResponse(error, traceId, spanId);
    } finally {
      this.#active--;
    }
  }

  /**
   * Opens an AWP thread to the skill's peer and resolves with the reply's
   * data part (checked against the outputSchema).
   */
  #dispatch(
    v: Verified,
    hooks: DispatchHooks,
    timeoutMs: number = this.#o.config.replyTimeoutMs ?? 120_000,
  ): Promise<Record<string, unknown>> {
    const { envelope: env, skill } = v;
    const th = `samvad_${crypto.randomUUID()}`;
    return new Promise((resolve, reject) => {
      let settled = false;
      const finish = (
        error?: unknown,
        result?: Record<string, unknown>,
        tellPeer = false,
      ) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        off();
        this.#closing.signal.removeEventListener("abort", onClose);
        if (tellPeer) {
          // The AWP side learns why its work was not used.
          this.#deps.peer.setState(
            this.#to,
            th,
            "failed",
            errorBodyOf(error).message,
          ).catch(() => {});
        }
        if (error) reject(error);
        else resolve(result!);
      };
      const onClose = () =>
        finish(new SamvadError("AGENT_UNAVAILABLE", "the bridge is closing"));
      this.#closing.signal.addEventListener("abort", onClose);
      const timer = setTimeout(
        () =>
          finish(
            new SamvadError(
              "AGENT_UNAVAILABLE",
              `no reply from the AWP peer within ${
                Math.round(timeoutMs / 1000)
              } s`,
            ),
            undefined,
            true,
          ),
        timeoutMs,
      );
      const off = this.#watch.on(th, (e) => {
        if (e.type === "state") {
          hooks.onState?.(e.state);
          if (e.state === "failed") {
            finish(
              new SamvadError(
                "AGENT_UNAVAILABLE",
                `the AWP peer failed${e.note ? `: ${e.note}` : ""}`,
              ),
            );
          } else if (e.state === "done" || e.state === "closed") {
            finish(
              new SamvadError(
                "AGENT_UNAVAILABLE",
                `the AWP peer ended the thread (${e.state}) without a data reply`,
              ),
            );
          }
          return;
        }
        const data = e.parts.find((p): p is Extract<Part, { k: "data" }> =>
          p.k === "data"
        );
        if (!data) {
          hooks.onChunk?.(e.text);
          return;
        }
        const problem = schemaProblem(skill.outputSchema, data.data, "result");
        if (problem) {
          finish(
            new SamvadError(
              "AGENT_UNAVAILABLE",
              `the AWP peer's reply fails the outputSchema: ${problem}`,
            ),
            undefined,
            true,
          );
        } else finish(undefined, data.data as Record<string, unknown>);
      });
      this.#deps.peer.send(
        this.#to,
        `SAMVAD ${env.mode} call of "${skill.id}" from ${env.from} (trace ${env.traceId}). ` +
          "Reply on this thread with a data part that fits the skill's outputSchema.",
        {
          thread: th,
          subject: skill.id,
          parts: [{
            k: "data",
            mime: "application/json",
            data: env.payload ?? {},
          }],
        },
      ).catch((error) =>
        finish(
          new SamvadError(
            "AGENT_UNAVAILABLE",
            `cannot reach the AWP peer: ${errorText(error)}`,
          ),
        )
      );
    });
  }

  #startTask(v: Verified): Response {
    this.#forgetOldTasks();
    const task: Task = { taskId: crypto.randomUUID(), status: "pending" };
    this.#tasks.set(task.taskId, task);
    const env = v.envelope;
    void this.#dispatch(v, {
      onState: (state) => {
        if (state === "working" && task.status === "pending") {
          task.status = "running";
        }
      },
      onChunk: () => {
        if (task.status === "pending") task.status = "running";
      },
    }, this.#o.config.taskTimeoutMs ?? TASK_RETENTION_MS).then(
      (result): ResponseEnvelope => {
        Object.assign(task, { status: "done", result });
        return { traceId: env.traceId, spanId: v.spanId, status: "ok", result };
      },
      (error): ResponseEnvelope => {
        Object.assign(task, { status: "failed", error: errorBodyOf(error) });
        return {
          traceId: env.traceId,
          spanId: v.spanId,
          status: "error",
          error: errorBodyOf(error),
        };
      },
    ).then((response: ResponseEnvelope) => {
      task.until = Date.now() + TASK_RETENTION_MS;
      if (env.callbackUrl) {
        return this.#deliverCallback(env.callbackUrl, response);
      }
    });
    return Response.json({ taskId: task.taskId, status: "accepted" }, {
      status: 202,
    });
  }

  /** POSTs the signed response envelope to the callback; a few tries (callers also poll). */
  async #deliverCallback(
    callbackUrl: string,
    response: ResponseEnvelope,
  ): Promise<void> {
    const url = new URL(callbackUrl);
    const body = new TextEncoder().encode(JSON.stringify(response));
    for (let attempt = 0; attempt < 3; attempt++) {
      if (this.#closing.signal.aborted) return;
      try {
        const headers = await signRequest(
          this.#deps.sign,
          this.#deps.kid,
          "POST",
          url.pathname,
          body,
        );
        const res = await fetch(url, {
          method: "POST",
          headers: {
            ...JSON_TYPE,
            "x-agent-agent-id": this.card.id,
            ...headers,
          },
          body,
          signal: AbortSignal.timeout(10_000),
        });
        await res.body?.cancel();
        if (res.ok) return;
        this.#o.log?.(
          `samvad: callback to ${url.origin} answered ${res.status}`,
        );
      } catch (error) {
        this.#o.log?.(
          `samvad: callback to ${url.origin} failed: ${errorText(error)}`,
        );
      }
      await new Promise((r) => setTimeout(r, 500 * 2 ** attempt));
    }
  }

  /** Receives a task result we asked for with callbackUrl; checks its signature. */
  async #callback(req: Request, path: string): Promise<Response> {
    const spanId = crypto.randomUUID();
    try {
      const body = await readBody(req);
      const parsed = parseEnvelope(body) as ResponseEnvelope | undefined;
      const waiter = parsed?.traceId
        ? this.#callbackWaiters.get(parsed.traceId)
        : undefined;
      if (!parsed || !waiter) {
        throw new SamvadError("SCHEMA_INVALID", "no task awaits this callback");
      }
      const headers = signatureHeadersOf(req.headers);
      const input = headers && parseSignatureInput(headers["signature-input"]);
      const key = input &&
        (await this.#verifier.keysOf(waiter.agent)).get(input.keyid);
      if (
        !headers || !key ||
        !(await verifyRequest("POST", path, body, headers, key))
      ) {
        throw new SamvadError(
          "AUTH_FAILED",
          `the callback is not signed by ${waiter.agent}`,
        );
      }
      this.#callbackWaiters.delete(parsed.traceId!);
      waiter.resolve(parsed);
      return Response.json({ status: "ok" });
    } catch (error) {
      return errorResponse(error, undefined, spanId);
    }
  }

  #stream(v: Verified): Response {
    const encoder = new TextEncoder();
    const env = v.envelope;
    let keepAlive: ReturnType<typeof setInterval> | undefined;
    const body = new ReadableStream<Uint8Array>({
      start: (controller) => {
        const send = (text: string) => {
          try {
            controller.enqueue(encoder.encode(text));
          } catch { /* the caller went away */ }
        };
        keepAlive = setInterval(() => send(": keep-alive\n\n"), KEEP_ALIVE_MS);
        void this.#dispatch(v, {
          onChunk: (chunk) =>
            send(`data: ${JSON.stringify({ chunk, done: false })}\n\n`),
        }).then(
          (result) => ({ done: true, result }),
          (error) => ({ done: true, error: errorBodyOf(error) }),
        ).then((final) => {
          clearInterval(keepAlive);
          send(
            `data: ${
              JSON.stringify({
                ...final,
                traceId: env.traceId,
                spanId: v.spanId,
              })
            }\n\n`,
          );
          try {
            controller.close();
          } catch { /* cancelled */ }
        });
      },
      cancel: () => clearInterval(keepAlive),
    });
    return new Response(body, {
      headers: {
        "content-type": "text/event-stream",
        "cache-control": "no-cache",
        connection: "keep-alive",
        "x-accel-buffering": "no",
      },
    });
  }
}

/** The body, refused past 1 MiB without reading the rest. */
async function readBody(req: Request): Promise<Uint8Array> {
  const tooBig = () =>
    new SamvadError("SCHEMA_INVALID", "the body is over 1 MiB");
  if (Number(req.headers.get("content-length") ?? 0) > MAX_BODY_BYTES) {
    throw tooBig();
  }
  const chunks: Uint8Array<ArrayBuffer>[] = [];
  let size = 0;
  for await (const chunk of req.body ?? []) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) throw tooBig();
    chunks.push(chunk);
  }
  return new Uint8Array(await new Blob(chunks).arrayBuffer());
}

function parseEnvelope(body: Uint8Array): RequestEnvelope | undefined {
  try {
    const value = JSON.parse(new TextDecoder().decode(body));
    return value && typeof value === "object" && !Array.isArray(value)
      ? value
      : undefined;
  } catch {
    return undefined;
  }
}

function errorResponse(
  error: unknown,
  traceId: string | undefined,
  spanId: string,
): Response {
  const body = errorBodyOf(error);
  const status = error instanceof SamvadError ? error.status : 500;
  const headers: Record<string, string> = {};
  if (error instanceof RateLimitedError) {
    headers["retry-after"] = String(error.retryAfter);
  }
  return Response.json(
    {
      // SAMVAD's response schema requires a traceId: a new root when the
      // request gave none we could read.
      traceId: traceId ?? crypto.randomUUID(),
      spanId,
      status: "error",
      error: body,
    } satisfies ResponseEnvelope,
    { status, headers },
  );
}
