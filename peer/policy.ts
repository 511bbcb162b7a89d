/**
 * Local trust: which grants this peer honors (SPEC 10.2, NOTES items 7 and
 * 16 Q5) and which keys it admits after auth (SPEC 7.3, NOTES item 8).
 *
 * A grant is honored when its signature verifies, it has not expired, its
 * `sub` is the key presenting it, its `aud` (when set) is our key, it is not
 * revoked, and `iss` is our own key, a trusted key, or a key holding an
 * `introduce` grant (itself honored directly: from us or a trusted key, for
 * us) — one level. A delegated grant is attenuated: it confers at most what
 * the introducer's grants hold, minus `introduce`, so delegation cannot
 * chain. Nothing here throws on malformed input.
 *
 * @module
 */

import { type Grant, grantHash, verifyGrant } from "../wire/grant.ts";
import type { GrantRecord, PeerRecord } from "../storage/store.ts";
import type { RemoteHello } from "../actors/connection.ts";
import { errorText } from "../wire/error_text.ts";

/** The capability that lets a key delegate (SPEC 10.1).
 *
 * @example
 * ```ts
 * import { INTRODUCE } from "./policy.ts";
 * console.log(INTRODUCE); // "introduce"
 * ```
 */
export const INTRODUCE = "introduce";

/** A grant this peer honors, and what it confers. */
export interface HonoredGrant {
  ok: true;
  /** Capabilities conferred (attenuated for a delegated grant). */
  caps: string[];
  /** {@linkcode grantHash} of the grant. */
  hash: string;
  grant: Grant;
  /** Set for a delegated grant: the introducer (`iss`). */
  via?: string;
}

/** A grant this peer does not honor; `reason` is one line. */
export interface RefusedGrant {
  ok: false;
  reason: string;
}

/** The outcome of {@linkcode GrantPolicy.honor}. */
export type GrantDecision = HonoredGrant | RefusedGrant;

/** Options of {@linkcode GrantPolicy}. */
export interface GrantPolicyOptions {
  /** Our own key. */
  ownKey: string;
  /** Keys whose grants we honor as our own (`--trust KEY`). */
  trusted?: Iterable<string>;
  /** Local revocation (`revoke HASH`). */
  isRevoked?(hash: string): Promise<boolean> | boolean;
  /**
   * Grants known from storage (issued by us, presented earlier): they count
   * for the peer they name as `sub` and as introducer grants.
   */
  known?(): Promise<readonly Grant[]> | readonly Grant[];
  /** Clock, ms since the epoch. */
  now?: () => number;
}

/**
 * Decides which grants this peer honors.
 *
 * @example
 * ```ts
 * import { GrantPolicy } from "./policy.ts";
 * import { Signer } from "../wire/keys.ts";
 * import { mintGrant } from "../wire/grant.ts";
 * const me = await Signer.generate();
 * const bob = await Signer.generate();
 * const policy = new GrantPolicy({ ownKey: me.key });
 * const grant = await mintGrant(me, { sub: bob.key, caps: ["exec"] });
 * const d = await policy.honor(grant, bob.key);
 * console.log(d.ok && d.caps); // ["exec"]
 * ```
 */
export class GrantPolicy {
  #own: string;
  #trusted: Set<string>;
  #isRevoked: (hash: string) => Promise<boolean> | boolean;
  #known: () => Promise<readonly Grant[]> | readonly Grant[];
  #now: () => number;

  /** @param options our key, trusted keys, revocation, known grants, clock */
  constructor(options: GrantPolicyOptions) {
    this.#own = options.ownKey;
    this.#trusted = new Set(options.trusted ?? []);
    this.#isRevoked = options.isRevoked ?? (() => false);
    this.#known = options.known ?? (() => []);
    this.#now = options.now ?? Date.now;
  }

  /**
   * A policy reading revocations and known grants (issued and presented,
   * not those we hold) from a store.
   *
   * @example
   * ```ts
   * import { GrantPolicy } from "./policy.ts";
   * import { MemoryStore } from "../storage/memory_store.ts";
   * import { Signer } from "../wire/keys.ts";
   * const me = await Signer.generate();
   * const policy = GrantPolicy.forStore(new MemoryStore(), { ownKey: me.key });
   * console.log(policy.ownKey === me.key); // true
   * ```
   */
  static forStore(
    store: {
      grants(): Promise<GrantRecord[]>;
      isRevoked(hash: string): Promise<boolean>;
    },
    options: Omit<GrantPolicyOptions, "isRevoked" | "known">,
  ): GrantPolicy {
    return new GrantPolicy({
      ...options,
      isRevoked: (hash) => store.isRevoked(hash),
      known: async () =>
        (await store.grants())
          .filter((r) => r.kind !== "held")
          .map((r) => r.grant),
    });
  }

  /** Our own key. */
  get ownKey(): string {
    return this.#own;
  }

  /** Whether `key` is configured as trusted (our own key counts). */
  isTrusted(key: string): boolean {
    return key === this.#own || this.#trusted.has(key);
  }

  /** Adds a trusted key at run time (`trust KEY`). */
  trust(key: string): void {
    this.#trusted.add(key);
  }

  /**
   * Decides whether to honor `grant`, presented by `presentedBy`.
   * `supporting` are other grants seen with it (auth grants, an introduce
   * message's grant); the known grants are added to them. Never throws.
   */
  async honor(
    grant: unknown,
    presentedBy: string,
    supporting: readonly unknown[] = [],
  ): Promise<GrantDecision> {
    try {
      const known = await this.#known();
      return await this.#honor(grant, presentedBy, [...supporting, ...known]);
    } catch (e) {
      return { ok: false, reason: `grant check failed: ${errorText(e)}` };
    }
  }

  /**
   * The capabilities `peerKey` holds beyond the defaults: the union over
   * every honored grant naming it as `sub`, from `presented` and the known
   * grants. Malformed or unhonored grants are skipped.
   */
  async capsOf(
    peerKey: string,
    presented: readonly unknown[] = [],
  ): Promise<Set<string>> {
    const caps = new Set<string>();
    for (const d of await this.honoredFor(peerKey, presented)) {
      if (d.ok) { for (const c of d.caps) caps.add(c); }
    }
    return caps;
  }

  /**
   * Every decision about grants that name `peerKey` as `sub` (presented
   * first, then known ones not presented), for logs and admission.
   */
  async honoredFor(
    peerKey: string,
    presented: readonly unknown[] = [],
  ): Promise<GrantDecision[]> {
    let known: readonly Grant[] = [];
    try {
      known = await this.#known();
    } catch { /* storage trouble: judge the presented grants alone */ }
    const pool = [...presented, ...known];
    const seen = new Set<string>();
    const out: GrantDecision[] = [];
    for (const g of pool) {
      if (!isObject(g)) {
        out.push({ ok: false, reason: "grant is not an object" });
        continue;
      }
      if (g.sub !== peerKey) {
        if (presented.includes(g)) {
          // Say what is wrong with it first, if anything.
          const d = await this.#direct(g).catch((e) => ({
            ok: false as const,
            reason: `grant check failed: ${errorText(e)}`,
          }));
          out.push(
            d.ok
              ? { ok: false, reason: "grant sub is not the presenting key" }
              : d,
          );
        }
        continue;
      }
      const sig = typeof g.sig === "string" ? g.sig : "";
      if (sig !== "" && seen.has(sig)) continue;
      seen.add(sig);
      try {
        out.push(await this.#honor(g, peerKey, pool));
      } catch (e) {
        out.push({ ok: false, reason: `grant check failed: ${errorText(e)}` });
      }
    }
    return out;
  }

  async #direct(
    value: unknown,
  ): Promise<{ ok: true; grant: Grant; hash: string } | RefusedGrant> {
    const now = this.#now();
    const v = await verifyGrant(value, { now });
    if (!v.ok) return v;
    const grant = v.grant;
    if (grant.aud !== undefined && grant.aud !== this.#own) {
      return { ok: false, reason: "grant aud is another key" };
    }
    const hash = await grantHash(grant);
    if (await this.#isRevoked(hash)) {
      return { ok: false, reason: `grant ${hash.slice(0, 12)} is revoked` };
    }
    return { ok: true, grant, hash };
  }

  async #honor(
    value: unknown,
    presentedBy: string,
    pool: readonly unknown[],
  ): Promise<GrantDecision> {
    const d = await this.#direct(value);
    if (!d.ok) return d;
    const { grant, hash } = d;
    if (grant.sub !== presentedBy) {
      return { ok: false, reason: "grant sub is not the presenting key" };
    }
    if (this.isTrusted(grant.iss)) {
      return { ok: true, caps: unique(grant.caps), hash, grant };
    }
    // One level: the issuer must hold introduce from us or a trusted key.
    const allowed = new Set<string>();
    let introducer = false;
    for (const p of pool) {
      if (!isObject(p) || p.sub !== grant.iss || p === value) continue;
      if (!Array.isArray(p.caps) || !p.caps.includes(INTRODUCE)) continue;
      const pd = await this.#direct(p);
      if (!pd.ok || !this.isTrusted(pd.grant.iss)) continue;
      introducer = true;
      for (const c of pd.grant.caps) if (c !== INTRODUCE) allowed.add(c);
    }
    if (!introducer) {
      return {
        ok: false,
        reason:
          "grant iss is not us, not trusted, and holds no introduce grant we honor",
      };
    }
    return {
      ok: true,
      caps: unique(grant.caps.filter((c) => allowed.has(c))),
      hash,
      grant,
      via: grant.iss,
    };
  }
}

/** Admission policies (SPEC 7.3): `any` admits every key and logs it. */
export type AdmissionMode = "any" | "allowlist";

/** Why a key was admitted or refused. */
export interface AdmissionDecision {
  key: string;
  admitted: boolean;
  /** any, allowed, trusted, dialed, grant, or refused. */
  why: "any" | "allowed" | "trusted" | "dialed" | "grant" | "refused";
  /** The refusal detail (sent in `err auth`). */
  detail?: string;
  /** Capabilities the key holds from the grants it presented. */
  caps: string[];
}

/** Options of {@linkcode Admission}. */
export interface AdmissionOptions {
  /** Default "any". */
  mode?: AdmissionMode;
  /** Keys admitted under the allowlist (`allow KEY`). */
  allow?: Iterable<string>;
  /** Grant honoring (also says which keys are trusted). */
  policy: GrantPolicy;
  /** Whether we dialed this key before (e.g. `store.peer(key)?.dialed`). */
  dialedBefore?(key: string): Promise<boolean> | boolean;
  /** Called with every decision (the Peer logs new keys here). */
  onDecision?(decision: AdmissionDecision): void;
}

/**
 * Decides whether to admit a key after its auth verified.
 *
 * @example
 * ```ts
 * import { Admission, GrantPolicy } from "./policy.ts";
 * import { Signer } from "../wire/keys.ts";
 * const me = await Signer.generate();
 * const them = await Signer.generate();
 * const admission = new Admission({ mode: "allowlist", policy: new GrantPolicy({ ownKey: me.key }) });
 * console.log(await admission.admit({ key: them.key, grants: [] }, { dialed: false }));
 * // "key ed25519:… is not on this peer's allow list and presented no grant it honors"
 * ```
 */
export class Admission {
  #mode: AdmissionMode;
  #allow: Set<string>;
  #policy: GrantPolicy;
  #dialedBefore: (key: string) => Promise<boolean> | boolean;
  #dialedKeys = new Set<string>();
  #onDecision: ((d: AdmissionDecision) => void) | undefined;

  /** @param options mode, allowlist, policy, dialed-before lookup, logger */
  constructor(options: AdmissionOptions) {
    this.#mode = options.mode ?? "any";
    if (this.#mode !== "any" && this.#mode !== "allowlist") {
      throw new TypeError(
        `unknown admission mode ${
          JSON.stringify(this.#mode)
        }: use any or allowlist`,
      );
    }
    this.#allow = new Set(options.allow ?? []);
    this.#policy = options.policy;
    this.#dialedBefore = options.dialedBefore ?? (() => false);
    this.#onDecision = options.onDecision;
  }

  /**
   * Builds the `dialedBefore` lookup from a store's peer records.
   *
   * @example
   * ```ts
   * import { Admission } from "./policy.ts";
   * import { MemoryStore } from "../storage/memory_store.ts";
   * const dialed = Admission.dialedFromStore(new MemoryStore());
   * console.log(await dialed("ed25519:x")); // false
   * ```
   */
  static dialedFromStore(
    store: { peer(key: string): Promise<PeerRecord | undefined> },
  ): (key: string) => Promise<boolean> {
    return async (key) => (await store.peer(key))?.dialed === true;
  }

  /** The admission mode. */
  get mode(): AdmissionMode {
    return this.#mode;
  }

  /** Adds a key to the allowlist. */
  allow(key: string): void {
    this.#allow.add(key);
  }

  /** Remembers that we dialed `key`, for {@linkcode Admission.admitSync}. */
  noteDialed(key: string): void {
    this.#dialedKeys.add(key);
  }

  /**
   * A synchronous subset of {@linkcode Admission.admit}, for a hook that
   * cannot await (Connection's `admit` is synchronous today). It admits by
   * mode, allowlist, trust, this connection being dialed, or a key passed to
   * {@linkcode Admission.noteDialed}. Grant signatures cannot be checked
   * synchronously, so under the allowlist a key relying on a grant alone is
   * refused (safe, but stricter than `admit`). Never throws.
   *
   * @example
   * ```ts
   * import { Admission, GrantPolicy } from "./policy.ts";
   * import { Signer } from "../wire/keys.ts";
   * const me = await Signer.generate();
   * const a = new Admission({ mode: "allowlist", policy: new GrantPolicy({ ownKey: me.key }) });
   * a.noteDialed("ed25519:k");
   * console.log(a.admitSync({ key: "ed25519:k", grants: [] }, { dialed: false })); // undefined
   * ```
   */
  admitSync(
    remote: Pick<RemoteHello, "key" | "grants">,
    context: { dialed: boolean },
  ): string | undefined {
    const key = remote.key;
    const base = { key, caps: [] as string[] };
    let decision: AdmissionDecision;
    if (this.#mode === "any") {
      decision = { ...base, admitted: true, why: "any" };
    } else if (this.#allow.has(key)) {
      decision = { ...base, admitted: true, why: "allowed" };
    } else if (this.#policy.isTrusted(key)) {
      decision = { ...base, admitted: true, why: "trusted" };
    } else if (context.dialed || this.#dialedKeys.has(key)) {
      decision = { ...base, admitted: true, why: "dialed" };
    } else {
      let detail = `key ${key} is not on this peer's allow list`;
      if (Array.isArray(remote.grants) && remote.grants.length > 0) {
        detail +=
          " (its grants were not checked: admission needs the async hook)";
      }
      decision = { ...base, admitted: false, why: "refused", detail };
    }
    try {
      this.#onDecision?.(decision);
    } catch { /* a logger must not change the decision */ }
    return decision.admitted ? undefined : decision.detail;
  }

  /**
   * Returns undefined to admit `remote`, or a one-line refusal detail (the
   * connection sends `err auth` with it and closes). `dialed` is true when
   * we dialed this connection. Never throws.
   */
  async admit(
    remote: Pick<RemoteHello, "key" | "grants">,
    context: { dialed: boolean },
  ): Promise<string | undefined> {
    const decision = await this.decide(remote, context);
    try {
      this.#onDecision?.(decision);
    } catch { /* a logger must not change the decision */ }
    return decision.admitted ? undefined : decision.detail;
  }

  /** The full decision behind {@linkcode Admission.admit}. Never throws. */
  async decide(
    remote: Pick<RemoteHello, "key" | "grants">,
    context: { dialed: boolean },
  ): Promise<AdmissionDecision> {
    const key = remote.key;
    const presented = Array.isArray(remote.grants) ? remote.grants : [];
    const decisions = await this.#policy.honoredFor(key, presented);
    const caps = new Set<string>();
    for (const d of decisions) if (d.ok) d.caps.forEach((c) => caps.add(c));
    const base = { key, caps: [...caps].sort() };
    if (this.#mode === "any") return { ...base, admitted: true, why: "any" };
    if (this.#allow.has(key)) {
      return { ...base, admitted: true, why: "allowed" };
    }
    if (this.#policy.isTrusted(key)) {
      return { ...base, admitted: true, why: "trusted" };
    }
    let dialed = context.dialed;
    if (!dialed) {
      try {
        dialed = await this.#dialedBefore(key);
      } catch { /* unknown: not dialed */ }
    }
    dialed ||= this.#dialedKeys.has(key);
    if (dialed) return { ...base, admitted: true, why: "dialed" };
    if (decisions.some((d) => d.ok)) {
      return { ...base, admitted: true, why: "grant" };
    }
    const reasons = decisions.filter((d): d is RefusedGrant => !d.ok)
      .map((d) => d.reason);
    let detail =
      `key ${key} is not on this peer's allow list and presented no grant it honors`;
    if (reasons.length > 0) detail += ` (${unique(reasons).join("; ")})`;
    return { ...base, admitted: false, why: "refused", detail };
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

function unique(items: readonly string[]): string[] {
  return [...new Set(items)];
}
