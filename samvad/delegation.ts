/**
 * SAMVAD delegation tokens (spec 7-L7): EdDSA JWTs (`iss`, `sub`, `scope`,
 * `maxDepth`, `iat`, `exp`, `act`) signed with the delegator's Ed25519 key,
 * made and checked with `jose`.
 *
 * @module
 */

import { importJWK, jwtVerify, SignJWT } from "npm:jose@^6.2.0";
import { encodeBase64Url } from "../wire/base64.ts";
import { SamvadError } from "./envelope.ts";
import { errorText } from "../wire/error_text.ts";

/** The claims SAMVAD reads. */
export interface DelegationClaims {
  iss: string;
  sub: string;
  scope: string[];
  maxDepth: number;
  exp?: number;
  act?: { sub: string };
}

/** What {@link createDelegationToken} signs. */
export interface DelegationOptions {
  /** The delegator, `agent://…` (whose key signs). */
  issuer: string;
  /** The delegate, `agent://…`, who presents the token. */
  subject: string;
  /** Skill ids the delegate may invoke. */
  scope: string[];
  /** Hops left; a receiver refuses 0 or less. */
  maxDepth: number;
  /** Lifetime, seconds (300 by default). */
  expiresInSeconds?: number;
  /** The previous actor, for chained delegation (RFC 8693 `act`). */
  actor?: string;
}

/**
 * Signs a delegation token with a 32-byte Ed25519 seed and its public key.
 *
 * @example
 * ```ts
 * import { createDelegationToken, verifyDelegationToken } from "./delegation.ts";
 * import { Signer } from "../wire/keys.ts";
 * const s = await Signer.generate();
 * const token = await createDelegationToken(s.seed, s.publicKey, {
 *   issuer: "agent://a", subject: "agent://b", scope: ["echo"], maxDepth: 1 });
 * const claims = await verifyDelegationToken(token, [s.publicKey]);
 * console.log(claims.maxDepth); // 1
 * ```
 */
export async function createDelegationToken(
  seed: Uint8Array,
  publicKey: Uint8Array,
  o: DelegationOptions,
): Promise<string> {
  const key = await importJWK({
    kty: "OKP",
    crv: "Ed25519",
    d: encodeBase64Url(seed),
    x: encodeBase64Url(publicKey),
  }, "EdDSA");
  return await new SignJWT({
    scope: o.scope,
    maxDepth: o.maxDepth,
    ...(o.actor ? { act: { sub: o.actor } } : {}),
  })
    .setProtectedHeader({ alg: "EdDSA" })
    .setIssuer(o.issuer)
    .setSubject(o.subject)
    .setIssuedAt()
    .setExpirationTime(`${o.expiresInSeconds ?? 300}s`)
    .sign(key);
}

/**
 * Verifies a token against the issuer's keys (any may have signed) and
 * reads its claims. Throws {@link SamvadError}: AUTH_FAILED when no key
 * verifies it or it expired, DELEGATION_EXCEEDED when `maxDepth` is spent.
 *
 * @example
 * ```ts
 * import { verifyDelegationToken } from "./delegation.ts";
 * await verifyDelegationToken("x.y.z", []).catch((e) => console.log(e.code)); // AUTH_FAILED
 * ```
 */
export async function verifyDelegationToken(
  token: string,
  issuerKeys: Uint8Array[],
): Promise<DelegationClaims> {
  let payload: Record<string, unknown> | undefined;
  let why = "no key of the issuer";
  for (const publicKey of issuerKeys) {
    try {
      const key = await importJWK(
        { kty: "OKP", crv: "Ed25519", x: encodeBase64Url(publicKey) },
        "EdDSA",
      );
      ({ payload } = await jwtVerify(token, key, { algorithms: ["EdDSA"] }));
      break;
    } catch (error) {
      why = errorText(error);
    }
  }
  if (!payload) {
    throw new SamvadError(
      "AUTH_FAILED",
      `invalid delegation token: ${why}`,
    );
  }
  const scope = typeof payload.scope === "string"
    ? payload.scope.split(" ").filter(Boolean)
    : payload.scope;
  if (
    typeof payload.iss !== "string" || typeof payload.sub !== "string" ||
    !Array.isArray(scope) || typeof payload.maxDepth !== "number"
  ) {
    throw new SamvadError(
      "AUTH_FAILED",
      "invalid delegation token: iss, sub, scope and maxDepth are required",
    );
  }
  if (!(payload.maxDepth > 0)) {
    throw new SamvadError(
      "DELEGATION_EXCEEDED",
      `delegation depth limit reached (maxDepth ${payload.maxDepth})`,
    );
  }
  const act = payload.act as { sub?: unknown } | undefined;
  return {
    iss: payload.iss,
    sub: payload.sub,
    scope: scope.map(String),
    maxDepth: payload.maxDepth,
    ...(typeof payload.exp === "number" ? { exp: payload.exp } : {}),
    ...(act && typeof act.sub === "string" ? { act: { sub: act.sub } } : {}),
  };
}

/**
 * Reads the unverified `iss` of a token (to find whose keys to verify it
 * with); undefined when it is not a JWT.
 *
 * @example
 * ```ts
 * import { issuerOf } from "./delegation.ts";
 * console.log(issuerOf("nope")); // undefined
 * ```
 */
export function issuerOf(token: string): string | undefined {
  try {
    const part = token.split(".")[1];
    const json = atob(part.replace(/-/g, "+").replace(/_/g, "/"));
    const iss = JSON.parse(json).iss;
    return typeof iss === "string" ? iss : undefined;
  } catch {
    return undefined;
  }
}
