/**
 * A Peer's local trust: which grants it honors, which keys it admits, what
 * capabilities a remote holds, and which of our held grants to present when
 * we authenticate to a remote. Built on {@link GrantPolicy} and
 * {@link Admission} (peer/policy.ts); this file only wires them to the
 * store: grants presented to us are kept as `presented` records, so they
 * keep counting (and supporting delegations) after the connection ends.
 *
 * @module
 */

import {
  Admission,
  type AdmissionDecision,
  type AdmissionMode,
  GrantPolicy,
} from "./policy.ts";
import type { RemoteHello } from "../actors/connection.ts";
import type { GrantKind, GrantRecord, Store } from "../storage/store.ts";
import { grantHash, verifyGrant } from "../wire/grant.ts";
import type { Grant } from "../wire/types.ts";

/** Most grants of one auth line that are checked and kept. */
const MAX_PRESENTED = 32;

/** Options of {@link PeerTrust}. */
export interface PeerTrustOptions {
  /** Our key. */
  ownKey: string;
  /** Keys whose grants we honor as our own (`--trust KEY`). */
  trust?: readonly string[];
  /** Admission mode: any (default) or allowlist (`--accept`). */
  accept?: AdmissionMode;
  /** Keys admitted under the allowlist (`--allow KEY`). */
  allow?: readonly string[];
  /** Every admission decision (a new key under `any` included). */
  onDecision?(decision: AdmissionDecision): void;
}

/**
 * Trust decisions of one Peer, over its store.
 *
 * @example
 * ```ts
 * import { PeerTrust } from "./peer_trust.ts";
 * import { MemoryStore } from "../storage/memory_store.ts";
 * import { Signer } from "../wire/keys.ts";
 * const me = await Signer.generate();
 * const them = await Signer.generate();
 * const trust = new PeerTrust(new MemoryStore(), { ownKey: me.key, accept: "allowlist" });
 * const refusal = await trust.admit({ key: them.key, caps: [], nonce: "n", grants: [] }, { dialed: false });
 * console.log(typeof refusal); // "string"
 * ```
 */
export class PeerTrust {
  #store: Store;
  #policy: GrantPolicy;
  #admission: Admission;
  #own: string;

  /** Throws a one-line TypeError on an unknown admission mode. */
  constructor(store: Store, options: PeerTrustOptions) {
    this.#store = store;
    this.#own = options.ownKey;
    this.#policy = GrantPolicy.forStore(store, {
      ownKey: options.ownKey,
      trusted: options.trust ?? [],
    });
    this.#admission = new Admission({
      mode: options.accept ?? "any",
      allow: options.allow ?? [],
      policy: this.#policy,
      dialedBefore: Admission.dialedFromStore(store),
      onDecision: options.onDecision,
    });
  }

  /** The grant policy (honoring, delegation, revocation). */
  get policy(): GrantPolicy {
    return this.#policy;
  }

  /** The admission mode. */
  get mode(): AdmissionMode {
    return this.#admission.mode;
  }

  /** Trusts `key`'s grants from now on (not persisted: configuration). */
  trust(key: string): void {
    this.#policy.trust(key);
  }

  /** Admits `key` under the allowlist from now on (not persisted). */
  allow(key: string): void {
    this.#admission.allow(key);
  }

  /**
   * Runs the admission decision and the choice of grants to present once,
   * for our own key, with nothing reported or stored, so that a peer's
   * first handshake runs that code compiled: cold, each side's admission
   * held its answer back ~0.4 ms (traced). Never rejects.
   */
  async warm(): Promise<void> {
    try {
      await this.#admission.decide({ key: this.#own, grants: [] }, {
        dialed: true,
      });
      await this.toPresent(this.#own);
    } catch { /* a failed warm-up only leaves the first handshake slower */ }
  }

  /**
   * The Connection `admit` hook: keeps the grants `remote` presented that
   * verify, then decides. Resolves with a refusal detail or undefined.
   */
  async admit(
    remote: RemoteHello,
    context: { dialed: boolean },
  ): Promise<string | undefined> {
    await this.keepPresented(remote.key, remote.grants);
    return await this.#admission.admit(remote, context);
  }

  /**
   * Stores the grants `from` presented that verify (signature, shape,
   * expiry) as `presented` records, skipping those already stored. Judging
   * them is the policy's job, each time they are used.
   */
  async keepPresented(from: string, grants: readonly unknown[]): Promise<void> {
    if (!Array.isArray(grants) || grants.length === 0) return;
    const stored = new Set(
      (await this.#store.grants()).map((r) => r.hash),
    );
    for (const g of grants.slice(0, MAX_PRESENTED)) {
      const v = await verifyGrant(g);
      if (!v.ok) continue;
      const hash = await grantHash(v.grant);
      if (stored.has(hash)) continue;
      stored.add(hash);
      await this.#store.putGrant({
        kind: "presented",
        hash,
        grant: v.grant,
        from,
        storedAt: Date.now(),
      });
    }
  }

  /**
   * The capabilities `key` holds here: the union over every grant naming it
   * that we honor, from `presented` (this connection's auth) and the store.
   */
  capsOf(
    key: string,
    presented: readonly unknown[] = [],
  ): Promise<Set<string>> {
    return this.#policy.capsOf(key, presented);
  }

  /**
   * Which of our held grants to present to `remote` in auth: unexpired,
   * unrevoked, naming us as `sub`, and meant for it (its `aud` is that key,
   * or it has no `aud` and `remote` issued it). Also the introducer grants
   * that support a delegated one we present.
   */
  async toPresent(remote: string): Promise<Grant[]> {
    const now = Date.now();
    const held = (await this.#store.grants("held")).filter((r) =>
      r.grant.sub === this.#own && Date.parse(r.grant.exp) > now
    );
    const out: Grant[] = [];
    for (const r of held) {
      const g = r.grant;
      const fits = g.aud === remote ||
        (g.aud === undefined && g.iss === remote);
      if (!fits || await this.#store.isRevoked(r.hash)) continue;
      out.push(g);
    }
    return out;
  }

  /** Stored grants, optionally of one kind, with whether each is revoked. */
  async grants(
    kind?: GrantKind,
  ): Promise<Array<GrantRecord & { revoked: boolean }>> {
    const out = [];
    for (const r of await this.#store.grants(kind)) {
      out.push({ ...r, revoked: await this.#store.isRevoked(r.hash) });
    }
    return out;
  }

  /**
   * Stops honoring the grant whose hash is `hash` (or a unique prefix of 8+
   * characters). Resolves with the full hash; throws one line if unknown.
   */
  async revoke(hash: string): Promise<string> {
    if (typeof hash !== "string" || hash.length < 8) {
      throw new TypeError(
        "revoke: give a grant hash (or a unique prefix of 8+ characters)",
      );
    }
    const hits = [
      ...new Set(
        (await this.#store.grants()).map((r) => r.hash).filter((h) =>
          h.startsWith(hash)
        ),
      ),
    ];
    if (hits.length > 1) {
      throw new Error(`revoke: ${hits.length} grants start with ${hash}`);
    }
    // An unknown full hash is still revoked: the grant may come later.
    const full = hits[0] ?? hash;
    await this.#store.revoke(full);
    return full;
  }
}
