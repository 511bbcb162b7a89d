/**
 * How the SAMVAD bridge checks an inbound request before it becomes an AWP
 * thread (SAMVAD spec 7): the envelope and its replay window and nonce
 * before the RFC 9421 signature against the sender's keys (its card, or
 * the keys configured for it), then the rate limit per verified sender,
 * the skill, its trust tier, a delegation token, the inputSchema and the
 * callback URL.
 *
 * @module
 */

import {
  activeKeys,
  type AgentCard,
  type CardCache,
  isLoopback,
  type SkillDef,
} from "./card.ts";
import type { BridgeConfig } from "./bridge_config.ts";
import {
  checkRequestEnvelope,
  type RequestEnvelope,
  SamvadError,
  type SamvadMode,
} from "./envelope.ts";
import {
  parseSignatureInput,
  signatureHeadersOf,
  verifyRequest,
} from "./http_signature.ts";
import { issuerOf, verifyDelegationToken } from "./delegation.ts";
import { ReplayGuard } from "./replay_guard.ts";
import { SenderRateLimiter } from "./rate_limiter.ts";
import { schemaProblem } from "./skill_schemas.ts";
import { decodeBase64 } from "../wire/base64.ts";
import { errorText } from "../wire/error_text.ts";

/** A request that passed every check. */
export interface Verified {
  envelope: RequestEnvelope;
  skill: SkillDef;
  spanId: string;
}

/**
 * RATE_LIMITED with the seconds for Retry-After.
 *
 * @example
 * ```ts ignore
 * import { RateLimitedError } from "./request_verifier.ts";
 * console.log(new RateLimitedError("slow down", 3).retryAfter); // 3
 * ```
 */
export class RateLimitedError extends SamvadError {
  readonly retryAfter: number;
  constructor(message: string, retryAfter: number) {
    super("RATE_LIMITED", message);
    this.retryAfter = retryAfter;
  }
}

function wildcard(key: Uint8Array): Map<string, Uint8Array> {
  const map = new Map<string, Uint8Array>([["*", key]]);
  map.get = () => key;
  return map;
}

/**
 * The checks of one bridge, with its replay guard and rate limiter.
 *
 * @example
 * ```ts ignore
 * import { RequestVerifier } from "./request_verifier.ts";
 * const verifier = new RequestVerifier(card, config, cards, false);
 * const v = await verifier.verify(req, "/agent/message", "sync", body, envelope, spanId);
 * ```
 */
export class RequestVerifier {
  readonly #card: AgentCard;
  readonly #config: BridgeConfig;
  readonly #cards: CardCache;
  readonly #httpLoopback: boolean;
  readonly #replay = new ReplayGuard();
  readonly #limiter: SenderRateLimiter;

  /** `httpLoopback`: http callbacks are accepted for loopback hosts. */
  constructor(
    card: AgentCard,
    config: BridgeConfig,
    cards: CardCache,
    httpLoopback: boolean,
  ) {
    this.#card = card;
    this.#config = config;
    this.#cards = cards;
    this.#httpLoopback = httpLoopback;
    this.#limiter = new SenderRateLimiter(card.rateLimit);
  }

  /**
   * Checks one request, cheapest first: the envelope, its addressee and
   * mode, the replay window and nonce, the signature against the sender's
   * keys, the rate limit, the skill and its mode, trust tier, delegation,
   * inputSchema and callback URL. Throws a {@link SamvadError}.
   */
  async verify(
    req: Request,
    path: string,
    mode: SamvadMode,
    body: Uint8Array,
    parsed: RequestEnvelope | undefined,
    spanId: string,
  ): Promise<Verified> {
    if (!parsed) {
      throw new SamvadError("SCHEMA_INVALID", "the body is not JSON");
    }
    const problem = checkRequestEnvelope(parsed);
    if (problem) throw new SamvadError("SCHEMA_INVALID", problem);
    const env = parsed;
    if (env.to !== this.#card.id) {
      throw new SamvadError(
        "SCHEMA_INVALID",
        `the envelope is for ${env.to}, this agent is ${this.#card.id}`,
      );
    }
    if (env.mode !== mode) {
      throw new SamvadError(
        "SCHEMA_INVALID",
        `mode "${env.mode}" sent to ${path} (which takes "${mode}")`,
      );
    }
    // Cheap checks before the signature (spec 7-L2).
    const replay = this.#replay.check(env.nonce, env.timestamp);
    if (replay === "expired") {
      throw new SamvadError(
        "AUTH_FAILED",
        "the envelope timestamp is outside the 5-minute window",
      );
    }
    if (replay === "replay") {
      throw new SamvadError("REPLAY_DETECTED", "nonce already seen");
    }
    const headers = signatureHeadersOf(req.headers);
    if (!headers) {
      throw new SamvadError(
        "AUTH_FAILED",
        "missing signature headers (Content-Digest, Signature-Input, Signature)",
      );
    }
    const input = parseSignatureInput(headers["signature-input"]);
    if (!input) {
      throw new SamvadError(
        "AUTH_FAILED",
        'Signature-Input must be sig1=("@method" "@path" "content-digest");keyid=...',
      );
    }
    const keys = await this.keysOf(env.from);
    const key = keys.get(input.keyid);
    if (!key) {
      throw new SamvadError(
        "AUTH_FAILED",
        `${env.from} has no active key "${input.keyid}"`,
      );
    }
    if (!(await verifyRequest(req.method, path, body, headers, key))) {
      throw new SamvadError("AUTH_FAILED", "invalid message signature");
    }
    // Limits count verified senders only (spec 7-L5).
    const retry = this.#limiter.take(env.from);
    if (retry > 0) {
      throw new RateLimitedError(
        `rate limit exceeded for ${env.from}`,
        retry,
      );
    }
    const skill = this.#card.skills.find((s) => s.id === env.skill);
    if (!skill) {
      throw new SamvadError(
        "SKILL_NOT_FOUND",
        `no skill "${env.skill}" (this agent has ${
          this.#card.skills.map((s) => s.id).join(", ")
        })`,
      );
    }
    if (!skill.modes.includes(mode)) {
      throw new SamvadError(
        "SCHEMA_INVALID",
        `skill "${skill.id}" does not take ${mode} mode`,
      );
    }
    this.#checkTrust(skill, env);
    if (env.delegationToken) await this.#checkDelegation(env);
    const payloadProblem = schemaProblem(
      skill.inputSchema,
      env.payload ?? {},
      "payload",
    );
    if (payloadProblem) throw new SamvadError("SCHEMA_INVALID", payloadProblem);
    if (mode === "async" && typeof env.callbackUrl === "string") {
      this.#checkCallbackUrl(env.callbackUrl);
    }
    return { envelope: env, skill, spanId };
  }

  #checkTrust(skill: SkillDef, env: RequestEnvelope): void {
    if (skill.trust === "authenticated") {
      const token = env.auth?.scheme === "bearer" ? env.auth.token : undefined;
      if (!token || !(this.#config.tokens ?? []).includes(token)) {
        throw new SamvadError(
          "AUTH_FAILED",
          `skill "${skill.id}" needs a valid bearer token`,
        );
      }
    }
    if (
      skill.trust === "trusted-peers" &&
      !(skill.allowedPeers ?? []).includes(env.from)
    ) {
      throw new SamvadError(
        "AUTH_FAILED",
        `${env.from} is not among the allowed peers of "${skill.id}"`,
      );
    }
  }

  async #checkDelegation(env: RequestEnvelope): Promise<void> {
    const token = env.delegationToken!;
    const iss = issuerOf(token);
    if (!iss) {
      throw new SamvadError("AUTH_FAILED", "the delegation token is not a JWT");
    }
    const claims = await verifyDelegationToken(
      token,
      [...(await this.keysOf(iss)).values()],
    );
    if (claims.sub !== env.from) {
      throw new SamvadError(
        "AUTH_FAILED",
        `the delegation token is for ${claims.sub}, not ${env.from}`,
      );
    }
    if (!claims.scope.includes(env.skill)) {
      throw new SamvadError(
        "DELEGATION_EXCEEDED",
        `skill "${env.skill}" is outside the delegated scope (${
          claims.scope.join(" ")
        })`,
      );
    }
  }

  #checkCallbackUrl(callbackUrl: string): void {
    let url: URL;
    try {
      url = new URL(callbackUrl);
    } catch {
      throw new SamvadError("SCHEMA_INVALID", "callbackUrl is not a URL");
    }
    const httpOk = this.#httpLoopback && url.protocol === "http:" &&
      isLoopback(url.hostname);
    if (url.protocol !== "https:" && !httpOk) {
      throw new SamvadError("SCHEMA_INVALID", "callbackUrl must be https");
    }
  }

  /** Active keys of a sender: configured `peers` first, else its card. */
  async keysOf(agent: string): Promise<Map<string, Uint8Array>> {
    const known = this.#config.peers?.[agent];
    if (known) {
      try {
        const bytes = decodeBase64(known);
        // A configured key answers to any kid (the caller names its own).
        return wildcard(bytes);
      } catch {
        throw new SamvadError("AUTH_FAILED", `bad configured key for ${agent}`);
      }
    }
    try {
      return activeKeys(await this.#cards.get(agent));
    } catch (error) {
      throw new SamvadError(
        "AUTH_FAILED",
        `cannot get the keys of ${agent}: ${errorText(error)}`,
      );
    }
  }
}
