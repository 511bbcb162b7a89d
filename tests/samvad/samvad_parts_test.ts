// The SAMVAD pieces on their own: replay window, rate limits, card cache
// (cardTTL, wrong id, bad card), skills.json checks, delegation tokens.
import assert from "node:assert/strict";
import { ReplayGuard } from "../../samvad/replay_guard.ts";
import { SenderRateLimiter } from "../../samvad/rate_limiter.ts";
import { buildCard, CardCache } from "../../samvad/card.ts";
import { parseBridgeConfig } from "../../samvad/bridge_config.ts";
import {
  createDelegationToken,
  verifyDelegationToken,
} from "../../samvad/delegation.ts";
import { SamvadError } from "../../samvad/envelope.ts";
import { Signer } from "../../wire/keys.ts";

Deno.test("samvad replay guard: old, future and repeated envelopes", () => {
  const g = new ReplayGuard(1000);
  const now = Date.parse("2026-04-11T10:00:00Z");
  assert.equal(g.check("a", "2026-04-11T10:00:00Z", now), "fresh");
  assert.equal(g.check("a", "2026-04-11T10:00:00Z", now), "replay");
  assert.equal(g.check("b", "2026-04-11T09:59:58Z", now), "expired");
  assert.equal(g.check("c", "2026-04-11T10:00:02Z", now), "expired");
  assert.equal(g.check("d", "not a date", now), "expired");
  // After the window the nonce is forgotten (its envelope is too old anyway).
  assert.equal(g.check("a", "2026-04-11T10:00:01.500Z", now + 1500), "fresh");
});

Deno.test("samvad rate limiter: per sender, across senders, a minute slides", () => {
  const r = new SenderRateLimiter({
    requestsPerSender: 2,
    requestsPerMinute: 3,
  });
  const t = 1_000_000;
  assert.equal(r.take("agent://a", t), 0);
  assert.equal(r.take("agent://a", t + 1), 0);
  assert.equal(r.take("agent://a", t + 2), 60);
  assert.equal(r.take("agent://b", t + 3), 0);
  assert.ok(r.take("agent://c", t + 4) > 0, "the per-minute total");
  assert.equal(r.take("agent://a", t + 60_001), 0, "a minute later");
});

Deno.test("samvad card cache: keeps a card for cardTTL, refuses a card for another id or a bad one", async () => {
  let hits = 0;
  let card: unknown;
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    () => {
      hits++;
      return Response.json(card);
    },
  );
  try {
    const id = `agent://127.0.0.1:${server.addr.port}`;
    const good = (ttl: number) =>
      buildCard({
        id,
        url: `http://127.0.0.1:${server.addr.port}`,
        name: "n",
        description: "d",
        version: "1",
        publicKey: new Uint8Array(32),
        skills: [],
        rateLimit: {},
        cardTTL: ttl,
      });
    const cache = new CardCache({ httpLoopback: true });
    card = good(300);
    await cache.get(id);
    await cache.get(id);
    assert.equal(hits, 1, "cached");
    card = good(0);
    await cache.get(id, { refresh: true });
    await cache.get(id);
    assert.equal(hits, 3, "cardTTL 0: fetched every time");
    card = { ...good(0), id: "agent://other.example" };
    await assert.rejects(cache.get(id), /is for agent:\/\/other\.example/);
    card = { id };
    await assert.rejects(cache.get(id), /not valid/);
    // Without httpLoopback a loopback agent is still https (and fails).
    await assert.rejects(new CardCache().get(id), /cannot fetch the card/);
  } finally {
    await server.shutdown();
  }
});

Deno.test("samvad skills.json: defaults and one-line errors", () => {
  const c = parseBridgeConfig({
    to: "builder",
    skills: [{ id: "x", inputSchema: {}, outputSchema: {} }],
  }, "s.json");
  assert.equal(c.skills[0].name, "x");
  assert.deepEqual(c.skills[0].modes, ["sync", "async", "stream"]);
  assert.throws(() => parseBridgeConfig({}, "s.json"), /"skills" must be/);
  assert.throws(
    () => parseBridgeConfig([{ id: "x" }], "s.json"),
    /s\.json: skills\[0\]: skill must have required property 'inputSchema'/,
  );
  assert.throws(
    () =>
      parseBridgeConfig({
        id: "https://x",
        skills: [{ id: "x", inputSchema: {}, outputSchema: {} }],
      }, "s.json"),
    /"id" must be agent:\/\//,
  );
  assert.throws(
    () =>
      parseBridgeConfig([
        { id: "x", inputSchema: {}, outputSchema: {} },
        { id: "x", inputSchema: {}, outputSchema: {} },
      ], "s.json"),
    /twice/,
  );
});

Deno.test("samvad delegation: wrong key and expiry are AUTH_FAILED, spent depth DELEGATION_EXCEEDED", async () => {
  const a = await Signer.generate();
  const other = await Signer.generate();
  const make = (maxDepth: number, expiresInSeconds = 60) =>
    createDelegationToken(a.seed, a.publicKey, {
      issuer: "agent://a.example",
      subject: "agent://b.example",
      scope: ["echo", "sum"],
      maxDepth,
      expiresInSeconds,
      actor: "agent://root.example",
    });
  const claims = await verifyDelegationToken(await make(2), [
    other.publicKey,
    a.publicKey,
  ]);
  assert.deepEqual(claims.scope, ["echo", "sum"]);
  assert.equal(claims.act?.sub, "agent://root.example");
  const code = (p: Promise<unknown>) =>
    p.then(() => "ok", (e) => e instanceof SamvadError ? e.code : String(e));
  assert.equal(
    await code(verifyDelegationToken(await make(2), [other.publicKey])),
    "AUTH_FAILED",
  );
  assert.equal(
    await code(verifyDelegationToken(await make(2, -10), [a.publicKey])),
    "AUTH_FAILED",
  );
  assert.equal(
    await code(verifyDelegationToken(await make(0), [a.publicKey])),
    "DELEGATION_EXCEEDED",
  );
});
