/**
 * The outbound side: calls a skill of a SAMVAD agent the way an
 * independent SAMVAD agent expects it. Fetches and caches the card
 * (cardTTL), validates the payload against the skill's inputSchema, signs
 * the envelope (RFC 9421 headers), sends it, and checks the response:
 * envelope shape, echoed traceId, Content-Digest when given, and the
 * result against the outputSchema.
 *
 * @module
 */

import {
  agentBaseUrl,
  type AgentCard,
  CardCache,
  type SkillDef,
} from "./card.ts";
import {
  checkResponseEnvelope,
  type RequestEnvelope,
  type ResponseEnvelope,
  SamvadError,
  type SamvadErrorBody,
  type SamvadMode,
} from "./envelope.ts";
import {
  contentDigest,
  type SignBytes,
  signRequest,
} from "./http_signature.ts";
import { schemaProblem } from "./skill_schemas.ts";
import { errorText } from "../wire/error_text.ts";

/** How a {@link SamvadClient} identifies and signs. */
export interface SamvadClientOptions {
  /** Our `agent://` id: receivers fetch our card there to check signatures. */
  from: string;
  /** The kid of our key in that card. */
  kid: string;
  /** Signs the signature base with our Ed25519 key. */
  sign: SignBytes;
  /** Use http for loopback agent ids (tests and local setups only). */
  httpLoopback?: boolean;
  /** A shared card cache. */
  cards?: CardCache;
  /** Per-request timeout, ms (2 minutes by default). */
  timeoutMs?: number;
}

/** Extra envelope fields of one call. */
export interface CallOptions {
  /** A delegation token to present. */
  delegationToken?: string;
  /** The auth scheme and token to present. */
  auth?: { scheme: string; token?: string };
  /** The trace id (a fresh UUID by default). */
  traceId?: string;
  /** The caller's span, if any. */
  parentSpanId?: string;
  /** Async only: where the agent POSTs the signed result. */
  callbackUrl?: string;
  /** Aborts the call. */
  signal?: AbortSignal;
}

/** A task's status as `GET /agent/task/:taskId` gives it. */
export interface TaskRecord {
  /** The task's id. */
  taskId: string;
  /** Where the task is. */
  status: "pending" | "running" | "done" | "failed";
  /** How far along it is, when the agent says. */
  progress?: number;
  /** The result, once done. */
  result?: Record<string, unknown>;
  /** The error, once failed. */
  error?: SamvadErrorBody;
}

/** One event of a stream call. */
export type StreamEvent =
  | { done: false; chunk: unknown }
  | { done: true; result: Record<string, unknown> };

const ENDPOINT: Record<SamvadMode, string> = {
  sync: "/agent/message",
  async: "/agent/task",
  stream: "/agent/stream",
};

/**
 * A SAMVAD caller with one identity.
 *
 * @example
 * ```ts ignore
 * import { SamvadClient } from "./client.ts";
 * const client = new SamvadClient({ from: "agent://me.example", kid, sign });
 * const result = await client.call("agent://them.example", "echo", { text: "hi" });
 * ```
 */
export class SamvadClient {
  readonly #o: SamvadClientOptions;
  readonly #cards: CardCache;

  constructor(options: SamvadClientOptions) {
    this.#o = options;
    this.#cards = options.cards ??
      new CardCache({ httpLoopback: options.httpLoopback });
  }

  /** The card of `agent` (cached for its cardTTL). */
  card(agent: string): Promise<AgentCard> {
    return this.#cards.get(agent);
  }

  /** Calls `skill` in sync mode and resolves with its checked result. */
  async call(
    agent: string,
    skill: string,
    payload: Record<string, unknown>,
    options: CallOptions = {},
  ): Promise<Record<string, unknown>> {
    const { res, envelope, def } = await this.#send(
      agent,
      skill,
      "sync",
      payload,
      options,
    );
    const response = await this.#response(res, envelope.traceId);
    return this.#result(def, response);
  }

  /** Starts `skill` in async mode; resolves with the task id (HTTP 202). */
  async task(
    agent: string,
    skill: string,
    payload: Record<string, unknown>,
    options: CallOptions = {},
  ): Promise<{ taskId: string; traceId: string }> {
    const { res, envelope } = await this.#send(
      agent,
      skill,
      "async",
      payload,
      options,
    );
    const text = await res.text();
    const body = parseJson(text) as { taskId?: unknown } & ResponseEnvelope;
    if (res.status !== 202 || typeof body?.taskId !== "string") {
      throw errorOf(body, res.status);
    }
    return { taskId: body.taskId, traceId: envelope.traceId };
  }

  /** The status of a task. */
  async taskStatus(agent: string, taskId: string): Promise<TaskRecord> {
    const base = agentBaseUrl(agent, this.#o.httpLoopback);
    const res = await fetch(
      `${base}/agent/task/${encodeURIComponent(taskId)}`,
      { signal: AbortSignal.timeout(this.#o.timeoutMs ?? 120_000) },
    );
    const body = parseJson(await res.text()) as TaskRecord | undefined;
    if (!res.ok || typeof body?.status !== "string") {
      throw errorOf(body, res.status);
    }
    return body;
  }

  /** Polls a task until done (resolves with its checked result) or failed (throws). */
  async waitTask(
    agent: string,
    skill: string,
    taskId: string,
    options: { intervalMs?: number; timeoutMs?: number } = {},
  ): Promise<Record<string, unknown>> {
    const deadline = Date.now() + (options.timeoutMs ?? 300_000);
    const def = await this.#skill(agent, skill);
    while (true) {
      const task = await this.taskStatus(agent, taskId);
      if (task.status === "done") {
        return this.#result(def, { status: "ok", result: task.result });
      }
      if (task.status === "failed") {
        throw errorOf({ status: "error", error: task.error }, 500);
      }
      if (Date.now() > deadline) {
        throw new SamvadError(
          "AGENT_UNAVAILABLE",
          `task ${taskId} did not finish in time`,
        );
      }
      await new Promise((r) => setTimeout(r, options.intervalMs ?? 100));
    }
  }

  /** Calls `skill` in stream mode: each chunk, then the checked result. */
  async *stream(
    agent: string,
    skill: string,
    payload: Record<string, unknown>,
    options: CallOptions = {},
  ): AsyncGenerator<StreamEvent> {
    const { res, def } = await this.#send(
      agent,
      skill,
      "stream",
      payload,
      options,
    );
    if (
      !res.ok ||
      !res.headers.get("content-type")?.startsWith("text/event-stream")
    ) {
      throw errorOf(parseJson(await res.text()), res.status);
    }
    const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = "";
    try {
      while (true) {
        const { done, value } = await reader.read();
        if (done) break;
        buffer += value;
        let cut;
        while ((cut = buffer.indexOf("\n\n")) >= 0) {
          const block = buffer.slice(0, cut);
          buffer = buffer.slice(cut + 2);
          const data = block.split("\n").filter((l) => l.startsWith("data:"))
            .map((l) => l.slice(5).trimStart()).join("\n");
          if (data === "") continue; // a keep-alive comment
          const event = parseJson(data) as {
            done?: boolean;
            chunk?: unknown;
            result?: Record<string, unknown>;
            error?: SamvadErrorBody;
          };
          if (!event || typeof event !== "object") {
            throw new SamvadError("AGENT_UNAVAILABLE", "bad SSE event");
          }
          if (!event.done) {
            yield { done: false, chunk: event.chunk };
            continue;
          }
          if (event.error) {
            throw errorOf({ status: "error", error: event.error }, 500);
          }
          yield {
            done: true,
            result: this.#result(def, { status: "ok", result: event.result }),
          };
          return;
        }
      }
    } finally {
      await reader.cancel().catch(() => {});
    }
    throw new SamvadError(
      "AGENT_UNAVAILABLE",
      "the stream ended without a final event",
    );
  }

  async #skill(agent: string, skill: string): Promise<SkillDef> {
    const card = await this.#cards.get(agent);
    const def = card.skills.find((s) => s.id === skill);
    if (!def) {
      throw new SamvadError(
        "SKILL_NOT_FOUND",
        `${agent} has no skill "${skill}" (its card lists ${
          card.skills.map((s) => s.id).join(", ") || "none"
        })`,
      );
    }
    return def;
  }

  async #send(
    agent: string,
    skill: string,
    mode: SamvadMode,
    payload: Record<string, unknown>,
    options: CallOptions,
  ): Promise<{ res: Response; envelope: RequestEnvelope; def: SkillDef }> {
    const def = await this.#skill(agent, skill);
    if (def.modes && !def.modes.includes(mode)) {
      throw new SamvadError(
        "SCHEMA_INVALID",
        `skill "${skill}" of ${agent} does not take ${mode} mode (${
          def.modes.join(", ")
        })`,
      );
    }
    const problem = schemaProblem(def.inputSchema, payload, "payload");
    if (problem) throw new SamvadError("SCHEMA_INVALID", problem);
    const envelope: RequestEnvelope = {
      from: this.#o.from,
      to: agent,
      skill,
      mode,
      nonce: crypto.randomUUID(),
      timestamp: new Date().toISOString(),
      traceId: options.traceId ?? crypto.randomUUID(),
      spanId: crypto.randomUUID(),
      parentSpanId: options.parentSpanId ?? null,
      delegationToken: options.delegationToken ?? null,
      ...(options.auth ? { auth: options.auth } : {}),
      ...(options.callbackUrl && mode === "async"
        ? { callbackUrl: options.callbackUrl }
        : {}),
      payload,
    };
    const path = ENDPOINT[mode];
    const body = new TextEncoder().encode(JSON.stringify(envelope));
    const headers = await signRequest(
      this.#o.sign,
      this.#o.kid,
      "POST",
      path,
      body,
    );
    const base = agentBaseUrl(agent, this.#o.httpLoopback);
    const signal = options.signal ??
      AbortSignal.timeout(this.#o.timeoutMs ?? 120_000);
    let res: Response;
    try {
      res = await fetch(`${base}${path}`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          accept: mode === "stream" ? "text/event-stream" : "application/json",
          "x-agent-trace-id": envelope.traceId,
          "x-agent-span-id": envelope.spanId,
          ...headers,
        },
        body,
        signal,
      });
    } catch (error) {
      throw new SamvadError(
        "AGENT_UNAVAILABLE",
        `cannot reach ${agent}: ${errorText(error)}`,
      );
    }
    return { res, envelope, def };
  }

  async #response(res: Response, traceId: string): Promise<ResponseEnvelope> {
    const bytes = new Uint8Array(await res.arrayBuffer());
    const digest = res.headers.get("content-digest");
    if (digest && digest !== await contentDigest(bytes)) {
      throw new SamvadError(
        "AUTH_FAILED",
        "the response body does not match its Content-Digest",
      );
    }
    const body = parseJson(new TextDecoder().decode(bytes)) as ResponseEnvelope;
    const problem = checkResponseEnvelope(body);
    if (problem) {
      throw new SamvadError(
        "AGENT_UNAVAILABLE",
        `bad response (HTTP ${res.status}): ${problem}`,
      );
    }
    if (body.status === "error") throw errorOf(body, res.status);
    if (body.traceId !== undefined && body.traceId !== traceId) {
      throw new SamvadError(
        "AGENT_UNAVAILABLE",
        `the response is for trace ${body.traceId}, not ${traceId}`,
      );
    }
    return body;
  }

  #result(def: SkillDef, response: ResponseEnvelope): Record<string, unknown> {
    const result = response.result;
    const problem = schemaProblem(def.outputSchema, result, "result");
    if (problem) {
      throw new SamvadError(
        "AGENT_UNAVAILABLE",
        `the result of "${def.id}" fails its outputSchema: ${problem}`,
      );
    }
    return result as Record<string, unknown>;
  }
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function errorOf(body: unknown, status: number): SamvadError {
  const error = (body as ResponseEnvelope | undefined)?.error;
  if (error && typeof error.code === "string") {
    // Codes outside the standard list (some SDKs send TIMESTAMP_EXPIRED) are kept as sent.
    return new SamvadError(error.code, String(error.message ?? ""));
  }
  return new SamvadError(
    "AGENT_UNAVAILABLE",
    `unexpected answer (HTTP ${status})`,
  );
}
