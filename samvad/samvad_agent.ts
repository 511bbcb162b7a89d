/**
 * This peer as a SAMVAD agent: calls SAMVAD agents (outbound), serves the
 * bridge (inbound), and forwards AWP msgs carrying an
 * `application/vnd.awp.samvad+json` data part to the SAMVAD agent they
 * name, answering on the thread. Reached through `Peer.samvad()`, which
 * imports this module (and so ajv and jose) only when first called.
 *
 * @module
 */

import type { Signer } from "../wire/keys.ts";
import type { PeerMessageEvent } from "../peer/peer_events.ts";
import { CardCache, kidOf } from "./card.ts";
import { type BridgeOptions, type BridgePeer, SamvadBridge } from "./bridge.ts";
import {
  type CallOptions,
  SamvadClient,
  type StreamEvent,
  type TaskRecord,
} from "./client.ts";
import { createDelegationToken, type DelegationOptions } from "./delegation.ts";
import { errorBodyOf, type ResponseEnvelope, SamvadError } from "./envelope.ts";
import { errorText } from "../wire/error_text.ts";

/** The media type of an AWP data part asking the bridge to call a SAMVAD agent. */
export const SAMVAD_MIME = "application/vnd.awp.samvad+json";

/** Options of `Peer.samvad()`. */
export interface SamvadOptions {
  /**
   * Our `agent://` id when calling out. Default: the served bridge's id, else
   * `agent://KID.awp.invalid` (then only agents that know our key by
   * configuration accept us: no card can be fetched there).
   */
  id?: string;
  /** Fetch cards over http, and accept http callbacks, for loopback hosts only (tests, local setups). */
  httpLoopback?: boolean;
}

/** What an AWP peer puts in a {@link SAMVAD_MIME} data part. */
export interface ForwardRequest {
  /** The SAMVAD agent to call, `agent://…`. */
  agent: string;
  /** The SAMVAD skill id to call. */
  skill: string;
  /** The skill's input (`{}` when absent). */
  payload?: Record<string, unknown>;
  /** How to call: sync (the default), async (a task, awaited) or stream. */
  mode?: "sync" | "async" | "stream";
  /** A delegation token to present to the agent. */
  delegationToken?: string;
  /** The auth scheme and token to present to the agent. */
  auth?: { scheme: string; token?: string };
}

/**
 * This peer's SAMVAD face. Get it with `await peer.samvad()`.
 *
 * @example
 * ```ts ignore
 * const samvad = await peer.samvad();
 * const result = await samvad.call("agent://them.example", "echo", { text: "hi" });
 * ```
 */
export class SamvadAgent {
  readonly #peer: BridgePeer;
  readonly #signer: Signer;
  #o: SamvadOptions;
  #cards: CardCache;
  #client: SamvadClient | undefined;
  #bridge: SamvadBridge | undefined;
  #log: (line: string) => void = () => {};

  /** Use `Peer.samvad()`, which makes it with the peer's own signer. */
  constructor(peer: BridgePeer, signer: Signer, options: SamvadOptions = {}) {
    this.#peer = peer;
    this.#signer = signer;
    this.#o = options;
    this.#cards = new CardCache({ httpLoopback: options.httpLoopback });
  }

  /** Our `agent://` id (see {@link SamvadOptions.id}). */
  get id(): string {
    return this.#o.id ?? this.#bridge?.card.id ??
      `agent://${this.kid.toLowerCase()}.awp.invalid`;
  }

  /**
   * From now on, fetch cards over http and accept http callbacks for
   * loopback hosts (tests and local setups; never for other hosts).
   */
  enableHttpLoopback(): void {
    if (this.#o.httpLoopback) return;
    this.#o = { ...this.#o, httpLoopback: true };
    this.#cards = new CardCache({ httpLoopback: true });
    this.#client = undefined;
  }

  /** The kid of this peer's key in our card. */
  get kid(): string {
    return kidOf(this.#signer.publicKey);
  }

  /** The running bridge, if {@link SamvadAgent.serve} started one. */
  get bridge(): SamvadBridge | undefined {
    return this.#bridge;
  }

  get #caller(): SamvadClient {
    // Rebuilt when the id changes (serve() gives us one).
    if (!this.#client || this.#clientId !== this.id) {
      this.#clientId = this.id;
      this.#client = new SamvadClient({
        from: this.id,
        kid: this.kid,
        sign: (d) => this.#signer.sign(d),
        httpLoopback: this.#o.httpLoopback,
        cards: this.#cards,
      });
    }
    return this.#client;
  }
  #clientId = "";

  /** Calls `skill` of `agent` (sync) and resolves with its checked result. */
  call(
    agent: string,
    skill: string,
    payload: Record<string, unknown>,
    options?: CallOptions,
  ): Promise<Record<string, unknown>> {
    return this.#caller.call(agent, skill, payload, options);
  }

  /** Starts an async task; resolves with its id. */
  task(
    agent: string,
    skill: string,
    payload: Record<string, unknown>,
    options?: CallOptions,
  ): Promise<{ taskId: string; traceId: string }> {
    return this.#caller.task(agent, skill, payload, options);
  }

  /** The status of a task. */
  taskStatus(agent: string, taskId: string): Promise<TaskRecord> {
    return this.#caller.taskStatus(agent, taskId);
  }

  /** Polls a task to its end: its checked result, or a thrown SamvadError. */
  waitTask(
    agent: string,
    skill: string,
    taskId: string,
    options?: { intervalMs?: number; timeoutMs?: number },
  ): Promise<Record<string, unknown>> {
    return this.#caller.waitTask(agent, skill, taskId, options);
  }

  /**
   * Starts an async task with our bridge's `/agent/callback` as callbackUrl;
   * `result` settles when the agent's signed callback arrives.
   */
  async taskWithCallback(
    agent: string,
    skill: string,
    payload: Record<string, unknown>,
    options: CallOptions = {},
  ): Promise<{ taskId: string; result: Promise<ResponseEnvelope> }> {
    const bridge = this.#bridge;
    if (!bridge) {
      throw new Error("taskWithCallback needs a served bridge (serve() first)");
    }
    const traceId = options.traceId ?? crypto.randomUUID();
    const result = bridge.expectCallback(traceId, agent);
    const { taskId } = await this.#caller.task(agent, skill, payload, {
      ...options,
      traceId,
      callbackUrl: `${bridge.card.url}/agent/callback`,
    });
    return { taskId, result };
  }

  /** Calls `skill` in stream mode: chunks, then the final checked result. */
  stream(
    agent: string,
    skill: string,
    payload: Record<string, unknown>,
    options?: CallOptions,
  ): AsyncGenerator<StreamEvent> {
    return this.#caller.stream(agent, skill, payload, options);
  }

  /** A delegation token signed by this peer (we are the issuer). */
  delegate(o: Omit<DelegationOptions, "issuer">): Promise<string> {
    return createDelegationToken(this.#signer.seed, this.#signer.publicKey, {
      issuer: this.id,
      ...o,
    });
  }

  /**
   * Serves the bridge and forwards SAMVAD requests sent over AWP. One
   * bridge per peer. The bridge subscribes to `peer.events()`: an
   * application that wants the events from before its own first
   * subscription subscribes before calling this.
   */
  async serve(options: BridgeOptions): Promise<SamvadBridge> {
    if (this.#bridge) throw new Error("the SAMVAD bridge is already running");
    if (options.log) this.#log = options.log;
    this.#bridge = await SamvadBridge.start({
      peer: this.#peer,
      publicKey: this.#signer.publicKey,
      sign: (d) => this.#signer.sign(d),
      kid: this.kid,
      cards: this.#cards,
      onOtherMessage: (e) => void this.#forward(e),
    }, { httpLoopback: this.#o.httpLoopback, ...options });
    return this.#bridge;
  }

  /** Stops the bridge. */
  async close(): Promise<void> {
    const bridge = this.#bridge;
    this.#bridge = undefined;
    await bridge?.close();
  }

  /** An AWP msg with a SAMVAD_MIME data part: call the agent, answer on the thread. */
  async #forward(e: PeerMessageEvent): Promise<void> {
    const part = e.parts.find((p) => p.k === "data" && p.mime === SAMVAD_MIME);
    if (!part || part.k !== "data") return;
    const req = part.data as Partial<ForwardRequest>;
    const peer = this.#peer;
    const answer = (text: string, data: unknown) =>
      peer.send(e.peer, text, {
        thread: e.th,
        re: e.id,
        parts: [{ k: "data", mime: "application/json", data }],
      });
    try {
      if (
        !req || typeof req.agent !== "string" || typeof req.skill !== "string"
      ) {
        throw new SamvadError(
          "SCHEMA_INVALID",
          `a ${SAMVAD_MIME} part needs "agent" and "skill"`,
        );
      }
      await peer.setState(e.peer, e.th, "working", `calling ${req.agent}`);
      const options: CallOptions = {
        ...(req.delegationToken
          ? { delegationToken: req.delegationToken }
          : {}),
        ...(req.auth ? { auth: req.auth } : {}),
      };
      const payload = req.payload ?? {};
      let result: Record<string, unknown>;
      if (req.mode === "stream") {
        result = {};
        for await (
          const ev of this.stream(req.agent, req.skill, payload, options)
        ) {
          if (!ev.done) {
            await peer.send(e.peer, String(ev.chunk), { thread: e.th });
          } else result = ev.result;
        }
      } else if (req.mode === "async") {
        const { taskId } = await this.task(
          req.agent,
          req.skill,
          payload,
          options,
        );
        result = await this.waitTask(req.agent, req.skill, taskId);
      } else {
        result = await this.call(req.agent, req.skill, payload, options);
      }
      await answer(`SAMVAD ${req.agent} ${req.skill}: ok`, result);
      await peer.setState(e.peer, e.th, "done");
    } catch (error) {
      const body = errorBodyOf(error);
      try {
        await answer(`SAMVAD call failed: ${body.code}: ${body.message}`, {
          error: body,
        });
        await peer.setState(
          e.peer,
          e.th,
          "failed",
          `${body.code}: ${body.message}`,
        );
      } catch (sendError) {
        this.#log(
          `samvad: cannot answer ${e.peer} on ${e.th}: ${errorText(sendError)}`,
        );
      }
    }
  }
}
