import assert from "node:assert/strict";
import {
  type Grant,
  grantHash,
  mintGrant,
  verifyGrant,
} from "../../wire/grant.ts";
import { Signer } from "../../wire/keys.ts";
import { canonicalJson } from "../../wire/canonical_json.ts";
import { encodeBase64Url } from "../../wire/base64.ts";

// The grant printed in the reference SPEC.md (draft 2, section 13.2; the
// grant object is unchanged from draft 1's 10.2), stated there to carry a
// real signature. Draft 1's 10.2 example has only placeholders.
const SPEC_GRANT = {
  iss: "ed25519:RiIietSaPS1BIwoDjJtq_H5OiJO7FzmNRWH62dVzAy4",
  sub: "ed25519:LPiUZUt7_kzIUKm5LX4v4RUEXwocMKv1uJ4_sTmx6Zc",
  caps: ["exec", "fs:read"],
  exp: "2026-09-29T20:00:00Z",
  nonce: "4DPq1B3vUqbyDAyBYcxtgQ",
  sig:
    "PJeBIOQupnrNvAHrpIQiCeS2Ptrbwvm_yRn8XlYyuU2T4iQU30eUuk1Fp4h_AFDxl8iOkHpRvYCRm4r_A5OOAQ",
};
const BEFORE_SPEC_EXP = Date.parse("2026-09-29T19:59:59Z");

const alice = await Signer.generate();
const bob = await Signer.generate();
const carol = await Signer.generate();

function reason(v: Awaited<ReturnType<typeof verifyGrant>>): string {
  return v.ok ? "ok" : v.reason;
}

Deno.test("grant: the specification's real grant verifies, and fails once altered", async () => {
  assert.deepEqual(await verifyGrant(SPEC_GRANT, { now: BEFORE_SPEC_EXP }), {
    ok: true,
    grant: SPEC_GRANT,
  });
  // As it arrives on the wire, in another key order and with whitespace.
  const reparsed = JSON.parse(
    JSON.stringify(
      Object.fromEntries(Object.entries(SPEC_GRANT).reverse()),
      null,
      1,
    ),
  );
  assert.equal(
    (await verifyGrant(reparsed, { now: BEFORE_SPEC_EXP })).ok,
    true,
  );
  assert.equal(
    reason(
      await verifyGrant({ ...SPEC_GRANT, caps: ["exec"] }, {
        now: BEFORE_SPEC_EXP,
      }),
    ),
    "grant signature does not verify with iss",
  );
  assert.equal(
    reason(await verifyGrant(SPEC_GRANT, { now: Date.parse(SPEC_GRANT.exp) })),
    "grant expired at 2026-09-29T20:00:00Z",
  );
});

Deno.test("grant: mint then verify; the shape is what the schema says", async () => {
  const now = Date.UTC(2026, 0, 1);
  const grant = await mintGrant(alice, {
    sub: bob.key,
    caps: ["exec", "fs:read"],
    ttlMs: 3_600_000,
    now,
  });
  assert.equal(grant.iss, alice.key);
  assert.equal(grant.sub, bob.key);
  assert.deepEqual(grant.caps, ["exec", "fs:read"]);
  assert.equal(grant.exp, "2026-01-01T01:00:00Z");
  assert.match(grant.nonce, /^[A-Za-z0-9_-]{22}$/);
  assert.match(grant.sig, /^[A-Za-z0-9_-]{86}$/);
  assert.equal("aud" in grant, false);
  assert.deepEqual(await verifyGrant(grant, { now }), { ok: true, grant });
  // Each mint is distinct.
  const again = await mintGrant(alice, {
    sub: bob.key,
    caps: ["exec", "fs:read"],
    ttlMs: 3_600_000,
    now,
  });
  assert.notEqual(again.nonce, grant.nonce);
  // Default expiry is in the future; explicit exp is kept verbatim.
  assert.equal(
    (await verifyGrant(await mintGrant(alice, { sub: bob.key, caps: [] }))).ok,
    true,
  );
  const fixed = await mintGrant(alice, {
    sub: bob.key,
    caps: [],
    exp: "2030-01-01T00:00:00.5+02:00",
  });
  assert.equal(fixed.exp, "2030-01-01T00:00:00.5+02:00");
  assert.equal((await verifyGrant(fixed, { now })).ok, true);
  for (
    const exp of [
      "2028-02-29T00:00:00Z",
      "2030-12-31T23:59:60Z",
      "2030-01-01t00:00:00z",
    ]
  ) {
    const g = await mintGrant(alice, { sub: bob.key, caps: [], exp });
    assert.equal((await verifyGrant(g, { now })).ok, true, exp);
  }
});

Deno.test("grant: tampered caps, wrong signer, expiry", async () => {
  const now = Date.UTC(2026, 0, 1);
  const grant = await mintGrant(alice, {
    sub: bob.key,
    caps: ["fs:read"],
    ttlMs: 60_000,
    now,
  });
  assert.equal(
    reason(
      await verifyGrant({ ...grant, caps: ["fs:read", "admin"] }, { now }),
    ),
    "grant signature does not verify with iss",
  );
  assert.equal(
    reason(await verifyGrant({ ...grant, sub: carol.key }, { now })),
    "grant signature does not verify with iss",
  );
  // Claimed by carol but signed by alice.
  assert.equal(
    reason(await verifyGrant({ ...grant, iss: carol.key }, { now })),
    "grant signature does not verify with iss",
  );
  // Signed by carol over a body naming alice as issuer.
  const { sig: _sig, ...body } = grant;
  const forged = {
    ...body,
    sig: encodeBase64Url(
      await carol.sign(new TextEncoder().encode(canonicalJson(body))),
    ),
  };
  assert.equal(
    reason(await verifyGrant(forged, { now })),
    "grant signature does not verify with iss",
  );
  // Expiry: valid just before, expired at and after exp.
  assert.equal((await verifyGrant(grant, { now: now + 59_999 })).ok, true);
  assert.equal(
    reason(await verifyGrant(grant, { now: now + 60_000 })),
    `grant expired at ${grant.exp}`,
  );
  assert.equal(
    reason(await verifyGrant(grant, { now: now + 86_400_000 })),
    `grant expired at ${grant.exp}`,
  );
});

Deno.test("grant: aud is part of the signed bytes", async () => {
  const grant = await mintGrant(alice, {
    sub: bob.key,
    caps: ["exec"],
    aud: carol.key,
  });
  assert.equal(grant.aud, carol.key);
  assert.equal((await verifyGrant(grant)).ok, true);
  assert.equal(
    reason(await verifyGrant({ ...grant, aud: bob.key })),
    "grant signature does not verify with iss",
  );
  const { aud: _aud, ...withoutAud } = grant;
  assert.equal(
    reason(await verifyGrant(withoutAud)),
    "grant signature does not verify with iss",
  );
});

Deno.test("grant: unknown fields are signed and kept", async () => {
  const { sig: _sig, ...base } = await mintGrant(alice, {
    sub: bob.key,
    caps: ["exec"],
  });
  const body = { ...base, ext: { why: "ci", "ü": [1, 2] } };
  const grant = {
    ...body,
    sig: encodeBase64Url(
      await alice.sign(new TextEncoder().encode(canonicalJson(body))),
    ),
  };
  const verdict = await verifyGrant(grant);
  assert.equal(verdict.ok, true);
  assert.deepEqual(
    verdict.ok && (verdict.grant as unknown as Record<string, unknown>).ext,
    { why: "ci", "ü": [1, 2] },
  );
  assert.equal(
    reason(await verifyGrant({ ...grant, ext: { why: "prod", "ü": [1, 2] } })),
    "grant signature does not verify with iss",
  );
});

Deno.test("grant: malformed shapes get one-line reasons, never a throw", async () => {
  const good = await mintGrant(alice, { sub: bob.key, caps: ["exec"] });
  const cases: Array<[unknown, string]> = [
    [null, "grant is not an object"],
    [[good], "grant is not an object"],
    ["grant", "grant is not an object"],
    [{ ...good, iss: "ed25519:short" }, "grant iss is not an ed25519 key"],
    [{ ...good, iss: alice.key + "=" }, "grant iss is not an ed25519 key"],
    [{ ...good, sub: undefined }, "grant sub is not an ed25519 key"],
    [{ ...good, aud: 7 }, "grant aud is not an ed25519 key"],
    [{ ...good, caps: "exec" }, "grant caps is not an array of strings"],
    [{ ...good, caps: ["exec", 1] }, "grant caps is not an array of strings"],
    [{ ...good, exp: "tomorrow" }, "grant exp is not an RFC 3339 date-time"],
    [
      { ...good, exp: "2026-02-30T00:00:00" },
      "grant exp is not an RFC 3339 date-time",
    ],
    [{ ...good, exp: 1893456000000 }, "grant exp is not an RFC 3339 date-time"],
    [{ ...good, nonce: "" }, "grant nonce is not base64url"],
    [{ ...good, nonce: "a+b" }, "grant nonce is not base64url"],
    [{ ...good, sig: undefined }, "grant sig is not base64url"],
    [{ ...good, sig: "AAAA" }, "grant signature does not verify with iss"],
    [
      { ...good, sig: "A" },
      "grant cannot be checked: base64: impossible length 1",
    ],
    [
      { ...good, extra: NaN },
      "grant cannot be checked: canonical JSON: non-finite number NaN at $.extra",
    ],
  ];
  for (const [value, want] of cases) {
    const verdict = await verifyGrant(value);
    assert.equal(reason(verdict), want, JSON.stringify(value));
    assert.ok(!reason(verdict).includes("\n"));
  }
});

Deno.test("grant: mint refuses bad input with a clear error", async () => {
  await assert.rejects(
    mintGrant(alice, { sub: "bob", caps: [] }),
    /sub is not an ed25519 key/,
  );
  await assert.rejects(
    mintGrant(alice, { sub: bob.key, caps: [], aud: "carol" }),
    /aud is not an ed25519 key/,
  );
  await assert.rejects(
    mintGrant(alice, { sub: bob.key, caps: [1] as unknown as string[] }),
    /caps must be an array of strings/,
  );
  await assert.rejects(
    mintGrant(alice, { sub: bob.key, caps: [], exp: "soon" }),
    /exp is not an RFC 3339 date-time/,
  );
  await assert.rejects(
    mintGrant(alice, { sub: bob.key, caps: [], ttlMs: -1 }),
    /invalid ttlMs/,
  );
});

Deno.test("grant: the hash covers the whole grant, sig included, in canonical form", async () => {
  const h = await grantHash(SPEC_GRANT as Grant);
  assert.match(h, /^[0-9a-f]{64}$/);
  const reordered = JSON.parse(
    JSON.stringify(Object.fromEntries(Object.entries(SPEC_GRANT).reverse())),
  );
  assert.equal(await grantHash(reordered), h, "key order does not matter");
  assert.notEqual(
    await grantHash({ ...SPEC_GRANT, sig: SPEC_GRANT.sig.replace("P", "Q") }),
    h,
  );
  // Independent check: sha256 of the canonical bytes via node:crypto.
  const { createHash } = await import("node:crypto");
  assert.equal(
    h,
    createHash("sha256").update(canonicalJson(SPEC_GRANT)).digest("hex"),
  );
});
