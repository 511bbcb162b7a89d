/**
 * Grants: signed statements that a key may use capabilities until a time
 * (SPEC section 10.2, NOTES.md item 7 for `aud`).
 *
 * @module
 */

import { decodeBase64, encodeBase64Url } from "./base64.ts";
import { canonicalJson } from "./canonical_json.ts";
import { parseKey, randomNonce, type Signer, verify } from "./keys.ts";

/**
 * The wire form of a grant. Unknown extra fields may be present on a
 * received grant; they are covered by the signature and kept.
 */
export interface Grant {
  /** The granting key. */
  iss: string;
  /** The receiving key. */
  sub: string;
  /** Capability strings granted. */
  caps: string[];
  /** Expiry, RFC 3339. */
  exp: string;
  /** Makes each grant distinct, base64url. */
  nonce: string;
  /** `iss`'s Ed25519 signature over the canonical JSON without `sig`, base64url. */
  sig: string;
  /** Extension: when set, only this key should honor the grant. */
  aud?: string;
}

/** The outcome of {@linkcode verifyGrant}; `reason` is one line. */
export type GrantVerdict = { ok: true; grant: Grant } | {
  ok: false;
  reason: string;
};

const KEY = /^ed25519:[A-Za-z0-9_-]{43}$/;
const B64URL = /^[A-Za-z0-9_-]+$/;
// RFC 3339 date-time, as JSON Schema's "date-time" format means it.
const DATE_TIME =
  /^(\d{4})-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])[Tt]([01]\d|2[0-3]):[0-5]\d:([0-5]\d|60)(\.\d+)?([Zz]|[+-]([01]\d|2[0-3]):[0-5]\d)$/;
const DEFAULT_TTL_MS = 24 * 60 * 60 * 1000;
const encoder = new TextEncoder();

function signedBytes(grant: Record<string, unknown>): Uint8Array {
  const { sig: _sig, ...body } = grant;
  return encoder.encode(canonicalJson(body));
}

function parseTime(text: string): number | undefined {
  const m = DATE_TIME.exec(text);
  if (!m) return undefined;
  // Date.parse rolls Feb 30 over into March; refuse it as the schema does.
  const daysInMonth = new Date(Date.UTC(Number(m[1]), Number(m[2]), 0))
    .getUTCDate();
  if (Number(m[3]) > daysInMonth) return undefined;
  // A leap second is valid RFC 3339 that Date.parse refuses: count it as :59.
  const ms = Date.parse(text.replace(/(:\d\d:)60/, "$159"));
  return Number.isNaN(ms) ? undefined : ms;
}

/**
 * Mints a grant signed by `signer` for `sub`. The expiry is `exp` if
 * given, else `now + ttlMs` (default 24 hours), printed to the second. The
 * nonce is 16 random bytes, as in the specification's example.
 * Throws a TypeError with one line on a bad key, cap or time.
 *
 * @example
 * ```ts
 * import { Signer } from "./keys.ts";
 * import { mintGrant, verifyGrant } from "./grant.ts";
 * const alice = await Signer.generate();
 * const bob = await Signer.generate();
 * const grant = await mintGrant(alice, { sub: bob.key, caps: ["exec"], ttlMs: 3_600_000 });
 * console.log((await verifyGrant(grant)).ok); // true
 * ```
 */
export async function mintGrant(
  signer: Signer,
  options: {
    sub: string;
    caps: string[];
    ttlMs?: number;
    exp?: string;
    aud?: string;
    now?: number;
  },
): Promise<Grant> {
  const { sub, caps, aud } = options;
  if (!KEY.test(sub)) {
    throw new TypeError(
      `mintGrant: sub is not an ed25519 key: ${JSON.stringify(sub)}`,
    );
  }
  if (aud !== undefined && !KEY.test(aud)) {
    throw new TypeError(
      `mintGrant: aud is not an ed25519 key: ${JSON.stringify(aud)}`,
    );
  }
  if (!Array.isArray(caps) || !caps.every((c) => typeof c === "string")) {
    throw new TypeError("mintGrant: caps must be an array of strings");
  }
  let exp: string;
  if (options.exp !== undefined) {
    if (parseTime(options.exp) === undefined) {
      throw new TypeError(
        `mintGrant: exp is not an RFC 3339 date-time: ${
          JSON.stringify(options.exp)
        }`,
      );
    }
    exp = options.exp;
  } else {
    const ttl = options.ttlMs ?? DEFAULT_TTL_MS;
    const at = (options.now ?? Date.now()) + ttl;
    if (!Number.isFinite(ttl) || ttl <= 0 || !Number.isFinite(at)) {
      throw new TypeError(`mintGrant: invalid ttlMs ${ttl}`);
    }
    exp = new Date(at).toISOString().replace(/\.\d{3}Z$/, "Z");
  }
  const body: Omit<Grant, "sig"> = {
    iss: signer.key,
    sub,
    ...(aud !== undefined ? { aud } : {}),
    caps: [...caps],
    exp,
    nonce: randomNonce(16),
  };
  const sig = await signer.sign(encoder.encode(canonicalJson(body)));
  return { ...body, sig: encodeBase64Url(sig) };
}

/** Checks the schema shape of a grant; returns a one-line reason or undefined. */
function shapeProblem(value: unknown): string | undefined {
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    return "grant is not an object";
  }
  const g = value as Record<string, unknown>;
  for (const field of ["iss", "sub"] as const) {
    if (typeof g[field] !== "string" || !KEY.test(g[field] as string)) {
      return `grant ${field} is not an ed25519 key`;
    }
  }
  if ("aud" in g && (typeof g.aud !== "string" || !KEY.test(g.aud))) {
    return "grant aud is not an ed25519 key";
  }
  if (!Array.isArray(g.caps) || !g.caps.every((c) => typeof c === "string")) {
    return "grant caps is not an array of strings";
  }
  if (typeof g.exp !== "string" || parseTime(g.exp) === undefined) {
    return "grant exp is not an RFC 3339 date-time";
  }
  if (typeof g.nonce !== "string" || !B64URL.test(g.nonce)) {
    return "grant nonce is not base64url";
  }
  if (typeof g.sig !== "string" || !B64URL.test(g.sig)) {
    return "grant sig is not base64url";
  }
  return undefined;
}

/**
 * Verifies a received grant: its shape (as the schema states it), `iss`'s
 * signature over the canonical JSON of everything but `sig` (unknown
 * fields and `aud` included), and that `now` (default: the current time)
 * is before `exp`. Never throws. Whether the grant should be honored
 * (trust in `iss`, `aud`, delegation) is the caller's policy.
 *
 * @example
 * ```ts
 * import { verifyGrant } from "./grant.ts";
 * const verdict = await verifyGrant({ iss: "nope" });
 * console.log(verdict.ok ? "ok" : verdict.reason); // grant iss is not an ed25519 key
 * ```
 */
export async function verifyGrant(
  value: unknown,
  options: { now?: number } = {},
): Promise<GrantVerdict> {
  const problem = shapeProblem(value);
  if (problem) return { ok: false, reason: problem };
  const grant = value as Grant & Record<string, unknown>;
  let data: Uint8Array;
  let sig: Uint8Array;
  try {
    data = signedBytes(grant);
    sig = decodeBase64(grant.sig);
  } catch (e) {
    return {
      ok: false,
      reason: `grant cannot be checked: ${(e as Error).message}`,
    };
  }
  let issuer: Uint8Array;
  try {
    issuer = parseKey(grant.iss);
  } catch {
    return { ok: false, reason: "grant iss is not an ed25519 key" };
  }
  if (!(await verify(issuer, data, sig))) {
    return { ok: false, reason: "grant signature does not verify with iss" };
  }
  const now = options.now ?? Date.now();
  if (now >= parseTime(grant.exp)!) {
    return { ok: false, reason: `grant expired at ${grant.exp}` };
  }
  return { ok: true, grant };
}

/**
 * Identifies a grant: lowercase hex SHA-256 of the canonical JSON of the
 * whole grant, `sig` included.
 *
 * @example
 * ```ts
 * import { grantHash } from "./grant.ts";
 * import { Signer } from "./keys.ts";
 * import { mintGrant } from "./grant.ts";
 * const s = await Signer.generate();
 * console.log(await grantHash(await mintGrant(s, { sub: s.key, caps: [] }))); // 64 hex digits
 * ```
 */
export async function grantHash(grant: Grant): Promise<string> {
  const digest = await crypto.subtle.digest(
    "SHA-256",
    encoder.encode(canonicalJson(grant)),
  );
  return Array.from(
    new Uint8Array(digest),
    (b) => b.toString(16).padStart(2, "0"),
  ).join("");
}
