/**
 * SAMVAD agent cards (spec 3.2): the card our bridge serves for this peer,
 * and a cache of remote cards fetched from `/.well-known/agent.json` and
 * kept `cardTTL` seconds.
 *
 * @module
 */

import { Ajv, type ValidateFunction } from "npm:ajv@^8.20.0";
import { decodeBase64, encodeBase64, encodeBase64Url } from "../wire/base64.ts";
import type { RateLimit } from "./rate_limiter.ts";
import type { SamvadMode } from "./envelope.ts";
import { errorText } from "../wire/error_text.ts";

/** A skill as the card declares it. */
export interface SkillDef {
  /** The skill id callers name. */
  id: string;
  /** A human-readable name. */
  name: string;
  /** What the skill does. */
  description: string;
  /** JSON Schema of the payload. */
  inputSchema: Record<string, unknown>;
  /** JSON Schema of the result. */
  outputSchema: Record<string, unknown>;
  /** The modes the skill may be called in. */
  modes: SamvadMode[];
  /** Who may call it: anyone, holders of a bearer token, or the listed peers. */
  trust: "public" | "authenticated" | "trusted-peers";
  /** For `trusted-peers`: the `agent://` ids allowed. */
  allowedPeers?: string[];
}

/** A public key of the card. */
export interface CardKey {
  /** The key id. */
  kid: string;
  /** Base64 (standard) of the 32-byte Ed25519 public key. */
  key: string;
  /** Whether the key is in use. */
  active: boolean;
}

/** An agent card. */
export interface AgentCard {
  /** The agent's `agent://` id. */
  id: string;
  /** A human-readable name. */
  name: string;
  /** The agent's version. */
  version: string;
  /** What the agent does. */
  description: string;
  /** The agent's base URL. */
  url: string;
  /** The SAMVAD protocol version. */
  protocolVersion: string;
  /** The skills offered. */
  skills: SkillDef[];
  /** The keys that sign the agent's requests. */
  publicKeys: CardKey[];
  /** The auth schemes accepted. */
  auth: { schemes: string[] };
  /** The rate limits the agent enforces. */
  rateLimit: RateLimit;
  /** How long callers may cache the card, seconds. */
  cardTTL: number;
  /** The endpoint paths by name. */
  endpoints: Record<string, string>;
  /** Other fields, kept as given. */
  [extra: string]: unknown;
}

/** The endpoints every SAMVAD agent exposes (spec 4). */
export const ENDPOINTS = {
  intro: "/agent/intro",
  message: "/agent/message",
  task: "/agent/task",
  taskStatus: "/agent/task/:taskId",
  stream: "/agent/stream",
  health: "/agent/health",
} as const;

/** The default card lifetime, seconds. */
export const DEFAULT_CARD_TTL = 300;

/**
 * The `kid` of a peer's key: stable for the key, so a card re-read after a
 * restart names the same key.
 *
 * @example
 * ```ts
 * import { kidOf } from "./card.ts";
 * console.log(kidOf(new Uint8Array(32))); // awp-AAAAAAAAAAA
 * ```
 */
export function kidOf(publicKey: Uint8Array): string {
  return `awp-${encodeBase64Url(publicKey).slice(0, 11)}`;
}

/**
 * The base URL of an `agent://host[:port]` id: https, or http for a
 * loopback host when `httpLoopback` (tests and local setups only).
 *
 * @example
 * ```ts
 * import { agentBaseUrl } from "./card.ts";
 * console.log(agentBaseUrl("agent://example.com")); // https://example.com
 * console.log(agentBaseUrl("agent://127.0.0.1:8788", true)); // http://127.0.0.1:8788
 * ```
 */
export function agentBaseUrl(agentId: string, httpLoopback = false): string {
  const m = /^agent:\/\/([^/\s?#]+)\/?$/.exec(agentId);
  if (!m) throw new TypeError(`not an agent:// id: ${agentId}`);
  const url = new URL(`https://${m[1]}`);
  if (httpLoopback && isLoopback(url.hostname)) url.protocol = "http:";
  return url.origin;
}

/**
 * True for 127.0.0.0/8, ::1 and localhost.
 *
 * @example
 * ```ts
 * import { isLoopback } from "./card.ts";
 * console.log(isLoopback("[::1]"), isLoopback("example.com")); // true false
 * ```
 */
export function isLoopback(hostname: string): boolean {
  const h = hostname.replace(/^\[|\]$/g, "");
  return h === "localhost" || h === "::1" || /^127\.\d+\.\d+\.\d+$/.test(h);
}

/** What {@link buildCard} needs. */
export interface CardOptions {
  id: string;
  url: string;
  name: string;
  description: string;
  version: string;
  publicKey: Uint8Array;
  skills: SkillDef[];
  rateLimit: RateLimit;
  cardTTL?: number;
  /** Bearer tokens are accepted (some skill is `authenticated`). */
  bearer?: boolean;
}

/**
 * Builds this peer's card: its Ed25519 key as the one active SAMVAD key.
 *
 * @example
 * ```ts
 * import { buildCard } from "./card.ts";
 * const card = buildCard({ id: "agent://h", url: "https://h", name: "n", description: "d",
 *   version: "1", publicKey: new Uint8Array(32), skills: [], rateLimit: {} });
 * console.log(card.publicKeys[0].active, card.protocolVersion); // true 1.2
 * ```
 */
export function buildCard(o: CardOptions): AgentCard {
  return {
    id: o.id,
    name: o.name,
    version: o.version,
    description: o.description,
    url: o.url,
    protocolVersion: "1.2",
    skills: o.skills,
    publicKeys: [{
      kid: kidOf(o.publicKey),
      key: encodeBase64(o.publicKey),
      active: true,
    }],
    auth: { schemes: o.bearer ? ["bearer", "none"] : ["none"] },
    rateLimit: o.rateLimit,
    cardTTL: o.cardTTL ?? DEFAULT_CARD_TTL,
    endpoints: { ...ENDPOINTS },
  };
}

const SKILL_SCHEMA = {
  type: "object",
  required: ["id", "inputSchema", "outputSchema"],
  properties: {
    id: { type: "string", minLength: 1, maxLength: 64 },
    name: { type: "string", maxLength: 100 },
    description: { type: "string", maxLength: 500 },
    inputSchema: { type: "object" },
    outputSchema: { type: "object" },
    modes: {
      type: "array",
      items: { enum: ["sync", "async", "stream"] },
    },
    trust: { enum: ["public", "authenticated", "trusted-peers"] },
    allowedPeers: { type: "array", items: { type: "string" } },
  },
};

const CARD_SCHEMA = {
  type: "object",
  required: ["id", "url", "skills", "publicKeys"],
  properties: {
    id: { type: "string", pattern: "^agent://" },
    url: { type: "string" },
    skills: { type: "array", items: SKILL_SCHEMA },
    publicKeys: {
      type: "array",
      items: {
        type: "object",
        required: ["kid", "key", "active"],
        properties: {
          kid: { type: "string" },
          key: { type: "string" },
          active: { type: "boolean" },
        },
      },
    },
    cardTTL: { type: "number", minimum: 0 },
  },
};

let cardCheck: ValidateFunction | undefined;
let skillCheck: ValidateFunction | undefined;

function checker(which: "card" | "skill"): ValidateFunction {
  const ajv = new Ajv({ strict: false });
  if (which === "card") return cardCheck ??= ajv.compile(CARD_SCHEMA);
  return skillCheck ??= ajv.compile(SKILL_SCHEMA);
}

/**
 * Checks a skill declaration (as skills.json gives it); one line or undefined.
 *
 * @example
 * ```ts
 * import { checkSkill } from "./card.ts";
 * console.log(checkSkill({ id: "x" })); // skill must have required property 'inputSchema'
 * ```
 */
export function checkSkill(value: unknown): string | undefined {
  const check = checker("skill");
  if (check(value)) return undefined;
  const e = check.errors?.[0];
  return `skill${e?.instancePath ?? ""} ${e?.message ?? "is not valid"}`;
}

/**
 * The active public keys of a card, by kid, decoded.
 *
 * @example
 * ```ts
 * import { activeKeys } from "./card.ts";
 * const keys = activeKeys({ publicKeys: [{ kid: "a", key: "AAAA", active: false }] });
 * console.log(keys.size); // 0
 * ```
 */
export function activeKeys(
  card: Pick<AgentCard, "publicKeys">,
): Map<string, Uint8Array> {
  const keys = new Map<string, Uint8Array>();
  for (const k of card.publicKeys) {
    if (!k.active) continue;
    try {
      const bytes = decodeBase64(k.key);
      if (bytes.length === 32) keys.set(k.kid, bytes);
    } catch { /* a malformed key is no key */ }
  }
  return keys;
}

/** How {@link CardCache} fetches. */
export interface CardCacheOptions {
  /** Use http for loopback agent ids (tests and local setups only). */
  httpLoopback?: boolean;
  /** Per-fetch timeout, ms (8 s by default). */
  timeoutMs?: number;
}

/**
 * Fetches agent cards and keeps each for its `cardTTL` seconds.
 *
 * @example
 * ```ts ignore
 * import { CardCache } from "./card.ts";
 * const card = await new CardCache().get("agent://example.com");
 * console.log(card.skills.map((s) => s.id));
 * ```
 */
export class CardCache {
  readonly #o: CardCacheOptions;
  #cards = new Map<string, { card: AgentCard; until: number }>();

  constructor(options: CardCacheOptions = {}) {
    this.#o = options;
  }

  /** The card of `agentId`, from the cache while fresh; throws one line. */
  async get(
    agentId: string,
    options: { refresh?: boolean } = {},
  ): Promise<AgentCard> {
    const cached = this.#cards.get(agentId);
    if (cached && !options.refresh && cached.until > Date.now()) {
      return cached.card;
    }
    const base = agentBaseUrl(agentId, this.#o.httpLoopback);
    let res: Response;
    try {
      res = await fetch(`${base}/.well-known/agent.json`, {
        headers: { accept: "application/json" },
        signal: AbortSignal.timeout(this.#o.timeoutMs ?? 8000),
      });
    } catch (error) {
      throw new Error(
        `cannot fetch the card of ${agentId}: ${errorText(error)}`,
      );
    }
    if (!res.ok) {
      await res.body?.cancel();
      throw new Error(
        `cannot fetch the card of ${agentId}: HTTP ${res.status}`,
      );
    }
    const card = await res.json().catch(() => undefined) as AgentCard;
    const check = checker("card");
    if (!check(card)) {
      const e = check.errors?.[0];
      throw new Error(
        `the card of ${agentId} is not valid: card${
          e?.instancePath ?? ""
        } ${e?.message}`,
      );
    }
    if (card.id !== agentId) {
      throw new Error(`the card at ${base} is for ${card.id}, not ${agentId}`);
    }
    const ttl = typeof card.cardTTL === "number"
      ? card.cardTTL
      : DEFAULT_CARD_TTL;
    this.#cards.set(agentId, { card, until: Date.now() + ttl * 1000 });
    return card;
  }
}
