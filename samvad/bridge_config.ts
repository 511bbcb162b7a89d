/**
 * The bridge's `skills.json`: the skills this peer offers to SAMVAD agents
 * and how they reach AWP.
 *
 * @module
 */

import { checkSkill, type SkillDef } from "./card.ts";
import type { RateLimit } from "./rate_limiter.ts";
import { errorText } from "../wire/error_text.ts";

/**
 * What `skills.json` holds. Only `skills` is required; a bare array is
 * taken as the skills.
 */
export interface BridgeConfig {
  /** Our `agent://` id (default `agent://HOST:PORT` of the listen address). */
  id?: string;
  /** The public base URL (default from the id). */
  url?: string;
  /** The card's name (default "AWP bridge"). */
  name?: string;
  /** The card's description. */
  description?: string;
  /** The card's version (default 0.1.0). */
  version?: string;
  /** The AWP peer (name, alias, key or key prefix) that handles the skills. */
  to?: string;
  /** The rate limits the card declares and the bridge enforces. */
  rateLimit?: RateLimit;
  /** How long callers may cache the card, seconds. */
  cardTTL?: number;
  /** Markdown served at /agent/intro. */
  intro?: string;
  /** Bearer tokens accepted for `authenticated` skills. */
  tokens?: string[];
  /** Senders whose keys we know without fetching their card: id -> base64 key. */
  peers?: Record<string, string>;
  /** How long a sync or stream request waits for the AWP reply, ms (2 min). */
  replyTimeoutMs?: number;
  /** How long an async task may take, ms (1 h). */
  taskTimeoutMs?: number;
  /** The skills offered. */
  skills: SkillDef[];
}

/** The default `rateLimit` (the spec's example values). */
export const DEFAULT_RATE_LIMIT: RateLimit = {
  requestsPerMinute: 60,
  requestsPerSender: 10,
};

/**
 * Checks a parsed skills.json; throws one line naming the field.
 *
 * @example
 * ```ts
 * import { parseBridgeConfig } from "./bridge_config.ts";
 * const c = parseBridgeConfig([{ id: "echo", inputSchema: {}, outputSchema: {} }], "skills.json");
 * console.log(c.skills[0].modes, c.skills[0].trust); // [ "sync", "async", "stream" ] public
 * ```
 */
export function parseBridgeConfig(value: unknown, where: string): BridgeConfig {
  const raw = Array.isArray(value) ? { skills: value } : value;
  if (!raw || typeof raw !== "object") {
    throw new Error(
      `${where}: must be an object with "skills" or a list of skills`,
    );
  }
  const c = raw as Record<string, unknown>;
  if (!Array.isArray(c.skills) || c.skills.length === 0) {
    throw new Error(`${where}: "skills" must be a non-empty list`);
  }
  const ids = new Set<string>();
  const skills = c.skills.map((s, i) => {
    const problem = checkSkill(s);
    if (problem) throw new Error(`${where}: skills[${i}]: ${problem}`);
    const def = s as SkillDef;
    if (ids.has(def.id)) throw new Error(`${where}: skill "${def.id}" twice`);
    ids.add(def.id);
    // Only the card's fields: SAMVAD's card schema allows no others.
    return {
      id: def.id,
      name: def.name ?? def.id,
      description: def.description ?? "",
      inputSchema: def.inputSchema,
      outputSchema: def.outputSchema,
      modes: def.modes ?? ["sync", "async", "stream"],
      trust: def.trust ?? "public",
      ...(def.allowedPeers ? { allowedPeers: def.allowedPeers } : {}),
    } satisfies SkillDef;
  });
  for (
    const f of ["id", "url", "name", "description", "version", "to", "intro"]
  ) {
    if (c[f] !== undefined && typeof c[f] !== "string") {
      throw new Error(`${where}: "${f}" must be a string`);
    }
  }
  if (c.id !== undefined && !/^agent:\/\/[^/\s]+$/.test(c.id as string)) {
    throw new Error(`${where}: "id" must be agent://HOST[:PORT]`);
  }
  if (
    c.cardTTL !== undefined &&
    !(Number.isInteger(c.cardTTL) && (c.cardTTL as number) >= 0)
  ) {
    throw new Error(`${where}: "cardTTL" must be a whole number of seconds`);
  }
  const limits = (c.rateLimit ?? {}) as Record<string, unknown>;
  for (const [k, v] of Object.entries(limits)) {
    if (
      !["requestsPerMinute", "requestsPerSender", "tokensPerSenderPerDay"]
        .includes(k) || !(Number.isInteger(v) && (v as number) >= 1)
    ) {
      throw new Error(
        `${where}: "rateLimit.${k}" is not a SAMVAD limit (a whole number >= 1)`,
      );
    }
  }
  if (
    c.tokens !== undefined &&
    (!Array.isArray(c.tokens) || c.tokens.some((t) => typeof t !== "string"))
  ) {
    throw new Error(`${where}: "tokens" must be a list of strings`);
  }
  if (
    c.peers !== undefined &&
    (typeof c.peers !== "object" || c.peers === null ||
      Object.values(c.peers).some((k) => typeof k !== "string"))
  ) {
    throw new Error(`${where}: "peers" must map agent ids to base64 keys`);
  }
  return { ...(c as Partial<BridgeConfig>), skills } as BridgeConfig;
}

/**
 * Reads and checks a skills.json file; throws one line.
 *
 * @example
 * ```ts ignore
 * import { readBridgeConfig } from "./bridge_config.ts";
 * const config = await readBridgeConfig("skills.json");
 * ```
 */
export async function readBridgeConfig(path: string): Promise<BridgeConfig> {
  let text: string;
  try {
    text = await Deno.readTextFile(path);
  } catch (error) {
    throw new Error(
      `cannot read ${path}: ${errorText(error)}`,
    );
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new Error(
      `${path}: not JSON: ${errorText(error)}`,
    );
  }
  return parseBridgeConfig(value, path);
}
