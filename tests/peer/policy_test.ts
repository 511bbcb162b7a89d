import assert from "node:assert/strict";
import {
  Admission,
  type AdmissionDecision,
  type GrantDecision,
  GrantPolicy,
} from "../../peer/policy.ts";
import { type Grant, grantHash, mintGrant } from "../../wire/grant.ts";
import { Signer } from "../../wire/keys.ts";
import { KvStore } from "../../storage/kv_store.ts";

const HOUR = 3_600_000;

async function keys() {
  const [me, trusted, stranger, introducer, sub, other] = await Promise.all(
    Array.from({ length: 6 }, () => Signer.generate()),
  );
  return { me, trusted, stranger, introducer, sub, other };
}

function capsOf(d: GrantDecision): string[] {
  assert.ok(d.ok, d.ok ? "" : d.reason);
  return d.caps;
}

function reasonOf(d: GrantDecision): string {
  assert.equal(d.ok, false, "expected the grant not to be honored");
  return (d as { reason: string }).reason;
}

Deno.test("grants from us and from trusted keys are honored; others are not", async () => {
  const k = await keys();
  const policy = new GrantPolicy({
    ownKey: k.me.key,
    trusted: [k.trusted.key],
  });
  const own = await mintGrant(k.me, {
    sub: k.sub.key,
    caps: ["exec", "fs:read", "exec"],
  });
  const d = await policy.honor(own, k.sub.key);
  assert.deepEqual(capsOf(d), ["exec", "fs:read"]);
  assert.equal(d.ok && d.hash, await grantHash(own));
  assert.equal(d.ok && d.via, undefined);
  const fromTrusted = await mintGrant(k.trusted, {
    sub: k.sub.key,
    caps: ["fs:write"],
  });
  assert.deepEqual(capsOf(await policy.honor(fromTrusted, k.sub.key)), [
    "fs:write",
  ]);
  const fromStranger = await mintGrant(k.stranger, {
    sub: k.sub.key,
    caps: ["exec"],
  });
  assert.match(
    reasonOf(await policy.honor(fromStranger, k.sub.key)),
    /not trusted/,
  );
  // A grant for someone else, presented by sub, confers nothing on sub.
  const forOther = await mintGrant(k.me, { sub: k.other.key, caps: ["exec"] });
  assert.match(
    reasonOf(await policy.honor(forOther, k.sub.key)),
    /sub is not the presenting key/,
  );
  // Trust added at run time.
  policy.trust(k.stranger.key);
  assert.deepEqual(capsOf(await policy.honor(fromStranger, k.sub.key)), [
    "exec",
  ]);
});

Deno.test("forged, expired, wrong-audience and revoked grants are not honored", async () => {
  const k = await keys();
  const revoked = new Set<string>();
  let now = Date.now();
  const policy = new GrantPolicy({
    ownKey: k.me.key,
    trusted: [k.trusted.key],
    isRevoked: (h) => revoked.has(h),
    now: () => now,
  });
  const good = await mintGrant(k.trusted, {
    sub: k.sub.key,
    caps: ["exec"],
    ttlMs: HOUR,
  });
  assert.ok((await policy.honor(good, k.sub.key)).ok);

  // Forged: caps widened after signing; or signed by a stranger claiming iss.
  const widened = { ...good, caps: ["exec", "fs:write"] };
  assert.match(reasonOf(await policy.honor(widened, k.sub.key)), /signature/);
  const byStranger = await mintGrant(k.stranger, {
    sub: k.sub.key,
    caps: ["exec"],
  });
  const claimed = { ...byStranger, iss: k.trusted.key };
  assert.match(reasonOf(await policy.honor(claimed, k.sub.key)), /signature/);

  // Expired: by the policy's clock, and minted with a past exp.
  now += 2 * HOUR;
  assert.match(reasonOf(await policy.honor(good, k.sub.key)), /expired/);
  now = Date.now();
  const past = await mintGrant(k.trusted, {
    sub: k.sub.key,
    caps: ["exec"],
    exp: "2020-01-01T00:00:00Z",
  });
  assert.match(reasonOf(await policy.honor(past, k.sub.key)), /expired/);

  // Audience: ours is fine, another key's is not (even when we issued it).
  const forUs = await mintGrant(k.trusted, {
    sub: k.sub.key,
    caps: ["exec"],
    aud: k.me.key,
  });
  assert.ok((await policy.honor(forUs, k.sub.key)).ok);
  const forThem = await mintGrant(k.me, {
    sub: k.sub.key,
    caps: ["exec"],
    aud: k.other.key,
  });
  assert.match(reasonOf(await policy.honor(forThem, k.sub.key)), /aud/);

  // Revoked locally by hash.
  revoked.add(await grantHash(good));
  assert.match(reasonOf(await policy.honor(good, k.sub.key)), /revoked/);
});

Deno.test("malformed grants are refused with a reason, never thrown", async () => {
  const k = await keys();
  const policy = new GrantPolicy({ ownKey: k.me.key });
  for (
    const junk of [null, undefined, 42, "grant", [], {}, { iss: "x" }, {
      caps: {},
    }]
  ) {
    const d = await policy.honor(junk, k.sub.key, [junk, null, 7]);
    assert.equal(d.ok, false);
    assert.ok(!reasonOf(d).includes("\n"));
  }
  const caps = await policy.capsOf(
    k.sub.key,
    [null, "x", { sub: k.sub.key }] as unknown[],
  );
  assert.equal(caps.size, 0);
  // A throwing revocation check is a refusal, not an exception.
  const broken = new GrantPolicy({
    ownKey: k.me.key,
    isRevoked: () => {
      throw new Error("disk on fire\nsecond line");
    },
  });
  const g = await mintGrant(k.me, { sub: k.sub.key, caps: ["exec"] });
  assert.equal(
    reasonOf(await broken.honor(g, k.sub.key)),
    "grant check failed: disk on fire",
  );
});

Deno.test("one level of delegation is honored and attenuated", async () => {
  const k = await keys();
  const policy = new GrantPolicy({
    ownKey: k.me.key,
    trusted: [k.trusted.key],
  });
  // trusted → introducer: introduce + exec + fs:read.
  const intro = await mintGrant(k.trusted, {
    sub: k.introducer.key,
    caps: ["introduce", "exec", "fs:read"],
  });
  // introducer → sub, for us: asks for more than the introducer holds.
  const delegated = await mintGrant(k.introducer, {
    sub: k.sub.key,
    caps: ["exec", "fs:write", "introduce"],
    aud: k.me.key,
  });
  const d = await policy.honor(delegated, k.sub.key, [intro]);
  assert.deepEqual(capsOf(d), ["exec"]); // minus fs:write (not held), minus introduce
  assert.equal(d.ok && d.via, k.introducer.key);
  assert.deepEqual([...await policy.capsOf(k.sub.key, [delegated, intro])], [
    "exec",
  ]);

  // Without the supporting introduce grant, nothing.
  assert.match(reasonOf(await policy.honor(delegated, k.sub.key)), /introduce/);
  // A supporting grant without introduce does not make an introducer.
  const noIntro = await mintGrant(k.trusted, {
    sub: k.introducer.key,
    caps: ["exec"],
  });
  assert.equal((await policy.honor(delegated, k.sub.key, [noIntro])).ok, false);
  // Nor does one from an untrusted key, or one bound to another audience.
  const untrusted = await mintGrant(k.stranger, {
    sub: k.introducer.key,
    caps: ["introduce", "exec"],
  });
  assert.equal(
    (await policy.honor(delegated, k.sub.key, [untrusted])).ok,
    false,
  );
  const elsewhere = await mintGrant(k.trusted, {
    sub: k.introducer.key,
    caps: ["introduce", "exec"],
    aud: k.other.key,
  });
  assert.equal(
    (await policy.honor(delegated, k.sub.key, [elsewhere])).ok,
    false,
  );
  // An expired introduce grant supports nothing.
  const stale = await mintGrant(k.trusted, {
    sub: k.introducer.key,
    caps: ["introduce", "exec"],
    exp: "2021-01-01T00:00:00Z",
  });
  assert.equal((await policy.honor(delegated, k.sub.key, [stale])).ok, false);
  // Our own introduce grant counts too.
  const ours = await mintGrant(k.me, {
    sub: k.introducer.key,
    caps: ["introduce", "fs:write"],
  });
  assert.deepEqual(capsOf(await policy.honor(delegated, k.sub.key, [ours])), [
    "fs:write",
  ]);
});

Deno.test("two-level delegation is not honored", async () => {
  const k = await keys();
  const policy = new GrantPolicy({
    ownKey: k.me.key,
    trusted: [k.trusted.key],
  });
  // trusted → introducer → other → sub.
  const first = await mintGrant(k.trusted, {
    sub: k.introducer.key,
    caps: ["introduce", "exec"],
  });
  const second = await mintGrant(k.introducer, {
    sub: k.other.key,
    caps: ["introduce", "exec"],
    aud: k.me.key,
  });
  const third = await mintGrant(k.other, {
    sub: k.sub.key,
    caps: ["exec"],
    aud: k.me.key,
  });
  const d = await policy.honor(third, k.sub.key, [first, second]);
  assert.match(reasonOf(d), /introduce/);
  assert.equal(
    (await policy.capsOf(k.sub.key, [third, second, first])).size,
    0,
  );
  // The middle key itself got exec (one level), but not introduce.
  assert.deepEqual([...await policy.capsOf(k.other.key, [second, first])], [
    "exec",
  ]);
});

Deno.test("a store-backed policy uses issued grants and revocations from Deno KV", async () => {
  const dir = await Deno.makeTempDir({ prefix: "awp-policy-" });
  const store = await KvStore.open(`${dir}/awp.kv`);
  try {
    const k = await keys();
    const policy = GrantPolicy.forStore(store, { ownKey: k.me.key });
    // We issued the introducer an introduce grant; it was stored, not presented.
    const intro = await mintGrant(k.me, {
      sub: k.introducer.key,
      caps: ["introduce", "exec"],
    });
    await store.putGrant({
      kind: "issued",
      hash: await grantHash(intro),
      grant: intro,
      storedAt: Date.now(),
    });
    const delegated = await mintGrant(k.introducer, {
      sub: k.sub.key,
      caps: ["exec"],
      aud: k.me.key,
    });
    assert.deepEqual([...await policy.capsOf(k.sub.key, [delegated])], [
      "exec",
    ]);
    // A grant we issued directly counts without being presented.
    const direct = await mintGrant(k.me, {
      sub: k.other.key,
      caps: ["fs:read"],
    });
    await store.putGrant({
      kind: "issued",
      hash: await grantHash(direct),
      grant: direct,
      storedAt: Date.now(),
    });
    assert.deepEqual([...await policy.capsOf(k.other.key)], ["fs:read"]);
    // Revoking the introduce grant revokes what was delegated through it.
    await store.revoke(await grantHash(intro));
    assert.equal((await policy.capsOf(k.sub.key, [delegated])).size, 0);
    await store.revoke(await grantHash(direct));
    assert.equal((await policy.capsOf(k.other.key)).size, 0);
  } finally {
    store.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("admission: accept any admits every key and reports it", async () => {
  const k = await keys();
  const seen: AdmissionDecision[] = [];
  const admission = new Admission({
    policy: new GrantPolicy({ ownKey: k.me.key }),
    onDecision: (d) => seen.push(d),
  });
  assert.equal(admission.mode, "any");
  assert.equal(
    await admission.admit({ key: k.stranger.key, grants: [] }, {
      dialed: false,
    }),
    undefined,
  );
  assert.deepEqual(seen.map((d) => [d.key, d.why]), [[k.stranger.key, "any"]]);
  assert.throws(
    () =>
      new Admission({
        mode: "open" as "any",
        policy: new GrantPolicy({ ownKey: k.me.key }),
      }),
    /any or allowlist/,
  );
});

Deno.test("admission: the allowlist admits allowed, trusted, dialed and granted keys and refuses others", async () => {
  const k = await keys();
  const dir = await Deno.makeTempDir({ prefix: "awp-admit-" });
  const store = await KvStore.open(`${dir}/awp.kv`);
  try {
    const policy = new GrantPolicy({
      ownKey: k.me.key,
      trusted: [k.trusted.key],
    });
    const decisions: AdmissionDecision[] = [];
    const admission = new Admission({
      mode: "allowlist",
      allow: [k.other.key],
      policy,
      dialedBefore: Admission.dialedFromStore(store),
      onDecision: (d) => decisions.push(d),
    });
    const admit = (key: string, grants: Grant[] = [], dialed = false) =>
      admission.admit({ key, grants }, { dialed });

    assert.equal(await admit(k.other.key), undefined);
    assert.equal(await admit(k.trusted.key), undefined);
    assert.equal(await admit(k.stranger.key, [], true), undefined); // this connection: we dialed
    await store.putPeer({
      key: k.introducer.key,
      addresses: ["tcp:127.0.0.1:1"],
      dialed: true,
      firstSeen: 1,
      lastSeen: 1,
    });
    assert.equal(await admit(k.introducer.key), undefined); // we dialed it before
    const grant = await mintGrant(k.me, { sub: k.sub.key, caps: ["exec"] });
    assert.equal(await admit(k.sub.key, [grant]), undefined);
    assert.deepEqual(decisions.map((d) => d.why), [
      "allowed",
      "trusted",
      "dialed",
      "dialed",
      "grant",
    ]);
    assert.deepEqual(decisions.at(-1)!.caps, ["exec"]);

    // Refusals name the key and say why each presented grant failed.
    const bare = await admit(k.stranger.key);
    assert.equal(
      bare,
      `key ${k.stranger.key} is not on this peer's allow list and presented no grant it honors`,
    );
    const expired = await mintGrant(k.me, {
      sub: k.stranger.key,
      caps: ["exec"],
      exp: "2020-01-01T00:00:00Z",
    });
    const foreign = await mintGrant(k.other, {
      sub: k.stranger.key,
      caps: ["exec"],
    });
    const detail = await admit(k.stranger.key, [
      expired,
      foreign,
      { junk: true } as unknown as Grant,
    ]);
    assert.ok(detail !== undefined);
    assert.ok(!detail.includes("\n"));
    assert.match(detail, /grant expired at 2020-01-01T00:00:00Z/);
    assert.match(detail, /not trusted/);
    assert.match(detail, /is not an ed25519 key|not an object/);
    assert.equal(decisions.at(-1)!.why, "refused");
    assert.equal(decisions.at(-1)!.admitted, false);
    // Adding the key to the allowlist admits it.
    admission.allow(k.stranger.key);
    assert.equal(await admit(k.stranger.key), undefined);
  } finally {
    store.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("admitSync: the synchronous subset for a hook that cannot await", async () => {
  const k = await keys();
  const policy = new GrantPolicy({
    ownKey: k.me.key,
    trusted: [k.trusted.key],
  });
  const any = new Admission({ policy });
  assert.equal(
    any.admitSync({ key: k.stranger.key, grants: [] }, { dialed: false }),
    undefined,
  );
  const whys: string[] = [];
  const strict = new Admission({
    mode: "allowlist",
    allow: [k.other.key],
    policy,
    onDecision: (d) => whys.push(d.why),
  });
  assert.equal(
    strict.admitSync({ key: k.other.key, grants: [] }, { dialed: false }),
    undefined,
  );
  assert.equal(
    strict.admitSync({ key: k.trusted.key, grants: [] }, { dialed: false }),
    undefined,
  );
  assert.equal(
    strict.admitSync({ key: k.sub.key, grants: [] }, { dialed: true }),
    undefined,
  );
  assert.equal(
    strict.admitSync({ key: k.stranger.key, grants: [] }, { dialed: false }),
    `key ${k.stranger.key} is not on this peer's allow list`,
  );
  // A grant cannot be verified synchronously: refused, and said so.
  const grant = await mintGrant(k.me, { sub: k.stranger.key, caps: ["exec"] });
  assert.match(
    strict.admitSync({ key: k.stranger.key, grants: [grant] }, {
      dialed: false,
    })!,
    /grants were not checked/,
  );
  // The async admit accepts the same grant.
  assert.equal(
    await strict.admit({ key: k.stranger.key, grants: [grant] }, {
      dialed: false,
    }),
    undefined,
  );
  strict.noteDialed(k.stranger.key);
  assert.equal(
    strict.admitSync({ key: k.stranger.key, grants: [] }, { dialed: false }),
    undefined,
  );
  assert.deepEqual(whys, [
    "allowed",
    "trusted",
    "dialed",
    "refused",
    "refused",
    "grant",
    "dialed",
  ]);
});
