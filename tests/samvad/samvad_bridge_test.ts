/**
 * The SAMVAD bridge against itself over real HTTP and real AWP
 * connections: peer A calls peer B's bridge (sync, async with polling and
 * with a signed callback, stream); B turns each call into an AWP thread
 * to worker W; W also asks A, over AWP, to call B (the forwarder). Bad
 * input gets SAMVAD's codes. http is allowed for loopback hosts only
 * through the explicit `httpLoopback` option.
 */
import assert from "node:assert/strict";
import { Peer } from "../../mod.ts";
import { Signer } from "../../wire/keys.ts";
import { decodeBase64, encodeBase64 } from "../../wire/base64.ts";
import { signRequest } from "../../samvad/http_signature.ts";
import { createDelegationToken } from "../../samvad/delegation.ts";
import type { BridgeConfig } from "../../samvad/bridge_config.ts";
import { parseBridgeConfig } from "../../samvad/bridge_config.ts";
import { SAMVAD_MIME } from "../../samvad/samvad_agent.ts";
import { ECHO, runWorker, SKILLS } from "../helpers/samvad_worker.ts";
import type { SamvadError } from "../../samvad/envelope.ts";

const TESTER = "agent://tester.example";
const FLOOD = "agent://flood.example";

async function setUp() {
  const release = Promise.withResolvers<void>();
  const tester = await Signer.generate();
  const flood = await Signer.generate();
  const w = await Peer.open({ memory: true, name: "worker" });
  const workerEvents = w.events();
  const worker = runWorker(w, workerEvents, release.promise);
  const addr = await w.listen("tcp:127.0.0.1:0");
  const a = await Peer.open({ memory: true, name: "a" });
  const b = await Peer.open({ memory: true, name: "b" });
  await a.connect(addr);
  await b.connect(addr);
  const samvadA = await a.samvad({ httpLoopback: true });
  const samvadB = await b.samvad({ httpLoopback: true });
  const configB: BridgeConfig = parseBridgeConfig({
    to: w.key,
    rateLimit: { requestsPerMinute: 1000, requestsPerSender: 20 },
    peers: {
      [TESTER]: encodeBase64(tester.publicKey),
      [FLOOD]: encodeBase64(flood.publicKey),
    },
    tokens: ["open-sesame"],
    skills: [
      ...SKILLS,
      { ...ECHO, id: "paid", trust: "authenticated" },
      { ...ECHO, id: "inner", trust: "trusted-peers", allowedPeers: [TESTER] },
    ],
  }, "test");
  const bridgeB = await samvadB.serve({
    listen: "127.0.0.1:0",
    config: configB,
  });
  const bridgeA = await samvadA.serve({
    listen: "127.0.0.1:0",
    config: parseBridgeConfig({ to: w.key, skills: [ECHO] }, "test"),
  });
  return {
    release: () => release.resolve(),
    tester,
    flood,
    w,
    a,
    b,
    samvadA,
    samvadB,
    bridgeA,
    bridgeB,
    async close() {
      await a.close();
      await b.close();
      await workerEvents.return?.();
      await w.close();
      await worker;
    },
  };
}

type Env = Awaited<ReturnType<typeof setUp>>;

function envelope(env: Env, over: Record<string, unknown> = {}) {
  return {
    from: TESTER,
    to: env.bridgeB.card.id,
    skill: "echo",
    mode: "sync",
    nonce: crypto.randomUUID(),
    timestamp: new Date().toISOString(),
    traceId: crypto.randomUUID(),
    spanId: crypto.randomUUID(),
    payload: { text: "hi" },
    ...over,
  };
}

async function post(
  env: Env,
  body: Record<string, unknown>,
  options: {
    signer?: Signer;
    path?: string;
    tamper?: (text: string) => string;
  } = {},
): Promise<{ status: number; body: Record<string, unknown>; res: Response }> {
  const path = options.path ?? "/agent/message";
  const text = JSON.stringify(body);
  const signed = await signRequest(
    (d) => (options.signer ?? env.tester).sign(d),
    "t1",
    "POST",
    path,
    new TextEncoder().encode(text),
  );
  const res = await fetch(`${env.bridgeB.url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...signed },
    body: options.tamper ? options.tamper(text) : text,
  });
  return { status: res.status, body: await res.json(), res };
}

function codeOf(r: { body: Record<string, unknown> }): unknown {
  return (r.body.error as { code?: string } | undefined)?.code;
}

Deno.test("samvad bridge: card, health, intro; A calls B sync, async (poll and callback), stream", async () => {
  const env = await setUp();
  try {
    const card =
      await (await fetch(`${env.bridgeB.url}/.well-known/agent.json`))
        .json();
    assert.equal(card.id, env.bridgeB.card.id);
    assert.equal(card.protocolVersion, "1.2");
    assert.deepEqual(card.skills.map((s: { id: string }) => s.id), [
      "echo",
      "bad-output",
      "fail",
      "hold",
      "paid",
      "inner",
    ]);
    const [key] = card.publicKeys;
    assert.equal(key.active, true);
    assert.equal(
      `ed25519:${
        encodeBase64(decodeBase64(key.key)).replace(/\+/g, "-").replace(
          /\//g,
          "_",
        ).replace(/=+$/, "")
      }`,
      env.b.key,
    );
    const health = await (await fetch(`${env.bridgeB.url}/agent/health`))
      .json();
    assert.equal(health.status, "ok");
    const intro = await fetch(`${env.bridgeB.url}/agent/intro`);
    assert.match(intro.headers.get("content-type")!, /text\/markdown/);
    assert.match(await intro.text(), /`echo`/);

    const B = env.bridgeB.card.id;
    assert.deepEqual(
      await env.samvadA.call(B, "echo", { text: "sync" }),
      { text: "sync" },
    );

    const { taskId } = await env.samvadA.task(B, "echo", { text: "later" });
    assert.deepEqual(
      await env.samvadA.waitTask(B, "echo", taskId, { intervalMs: 20 }),
      { text: "later" },
    );
    assert.equal((await env.samvadA.taskStatus(B, taskId)).status, "done");

    // The thread's states drive the task: pending, running on "working",
    // done once the data reply comes.
    const held = await env.samvadA.task(B, "hold", { text: "held" });
    let status = (await env.samvadA.taskStatus(B, held.taskId)).status;
    assert.ok(status === "pending" || status === "running", status);
    while (status !== "running") {
      await new Promise((r) => setTimeout(r, 10));
      status = (await env.samvadA.taskStatus(B, held.taskId)).status;
      assert.notEqual(status, "done");
    }
    env.release();
    assert.deepEqual(
      await env.samvadA.waitTask(B, "hold", held.taskId, { intervalMs: 20 }),
      { text: "held" },
    );
    await assert.rejects(
      env.samvadA.call(B, "hold", { text: "x" }),
      (e: SamvadError) =>
        e.code === "SCHEMA_INVALID" && /async/.test(e.message),
    );

    const cb = await env.samvadA.taskWithCallback(B, "echo", { text: "cb" });
    const response = await cb.result;
    assert.equal(response.status, "ok");
    assert.deepEqual(response.result, { text: "cb" });

    const events = [];
    for await (const ev of env.samvadA.stream(B, "echo", { text: "flow" })) {
      events.push(ev);
    }
    assert.deepEqual(events, [
      { done: false, chunk: "echoing flow" },
      { done: true, result: { text: "flow" } },
    ]);
  } finally {
    await env.close();
  }
});

Deno.test("samvad bridge: an AWP msg with a samvad data part is forwarded and answered on the thread", async () => {
  const env = await setUp();
  try {
    const events = env.w.events();
    const { id, th } = await env.w.send(env.a.key, "please call B", {
      parts: [{
        k: "data",
        mime: SAMVAD_MIME,
        data: {
          agent: env.bridgeB.card.id,
          skill: "echo",
          payload: { text: "via awp" },
        },
      }],
    });
    const states: string[] = [];
    for await (const e of events) {
      if (e.type === "state" && e.th === th) states.push(e.state);
      if (e.type === "message" && e.th === th && e.re === id) {
        const data = e.parts.find((p) => p.k === "data");
        assert.deepEqual(data && data.k === "data" && data.data, {
          text: "via awp",
        });
        break;
      }
    }
    assert.deepEqual(states, ["working"]);

    // A failing call is answered with {error} and the thread fails.
    const more = env.w.events(); // the break above ended the first subscription
    const bad = await env.w.send(env.a.key, "please call B", {
      parts: [{
        k: "data",
        mime: SAMVAD_MIME,
        data: { agent: env.bridgeB.card.id, skill: "nope" },
      }],
    });
    let failedNote: string | undefined;
    let errorReply: unknown;
    for await (const e of more) {
      if (e.type === "message" && e.th === bad.th && e.re === bad.id) {
        const data = e.parts.find((p) => p.k === "data");
        errorReply = data && data.k === "data" ? data.data : undefined;
      }
      if (e.type === "state" && e.th === bad.th && e.state === "failed") {
        failedNote = e.note;
        break;
      }
    }
    assert.equal(
      (errorReply as { error: { code: string } }).error.code,
      "SKILL_NOT_FOUND",
    );
    assert.match(failedNote!, /^SKILL_NOT_FOUND: /);
    await events.return?.();
  } finally {
    await env.close();
  }
});

Deno.test("samvad bridge: bad input gets SAMVAD's codes", async () => {
  const env = await setUp();
  try {
    // Tampered body: the digest no longer matches.
    let r = await post(env, envelope(env), {
      tamper: (t) => t.replace('"hi"', '"ho"'),
    });
    assert.equal(r.status, 401);
    assert.equal(codeOf(r), "AUTH_FAILED");

    // Signed with a key the sender does not have.
    r = await post(env, envelope(env), { signer: await Signer.generate() });
    assert.equal(r.status, 401);
    assert.equal(codeOf(r), "AUTH_FAILED");

    // Older than 5 minutes.
    r = await post(
      env,
      envelope(env, {
        timestamp: new Date(Date.now() - 6 * 60_000).toISOString(),
      }),
    );
    assert.equal(r.status, 401);
    assert.equal(codeOf(r), "AUTH_FAILED");
    assert.match((r.body.error as { message: string }).message, /5-minute/);

    // The same nonce twice: the first is answered, the second refused.
    const once = envelope(env);
    r = await post(env, once);
    assert.equal(r.status, 200);
    assert.deepEqual(r.body.result, { text: "hi" });
    assert.equal(r.body.traceId, once.traceId);
    r = await post(env, once);
    assert.equal(r.status, 401);
    assert.equal(codeOf(r), "REPLAY_DETECTED");

    r = await post(env, envelope(env, { skill: "nope" }));
    assert.equal(r.status, 404);
    assert.equal(codeOf(r), "SKILL_NOT_FOUND");

    r = await post(env, envelope(env, { payload: { text: 5 } }));
    assert.equal(r.status, 400);
    assert.equal(codeOf(r), "SCHEMA_INVALID");

    r = await post(
      env,
      envelope(env, { payload: { text: "x".repeat(1 << 20) } }),
    );
    assert.equal(r.status, 400);
    assert.match((r.body.error as { message: string }).message, /1 MiB/);

    r = await post(env, { hello: "world" });
    assert.equal(r.status, 400);
    assert.equal(codeOf(r), "SCHEMA_INVALID");

    // Delegation: spent depth and out-of-scope are DELEGATION_EXCEEDED.
    const token = (maxDepth: number, scope = ["echo"]) =>
      createDelegationToken(env.tester.seed, env.tester.publicKey, {
        issuer: TESTER,
        subject: TESTER,
        scope,
        maxDepth,
      });
    r = await post(env, envelope(env, { delegationToken: await token(0) }));
    assert.equal(r.status, 400);
    assert.equal(codeOf(r), "DELEGATION_EXCEEDED");
    r = await post(
      env,
      envelope(env, { delegationToken: await token(2, ["other"]) }),
    );
    assert.equal(r.status, 400);
    assert.equal(codeOf(r), "DELEGATION_EXCEEDED");
    r = await post(env, envelope(env, { delegationToken: await token(1) }));
    assert.equal(r.status, 200);

    // Mode and endpoint must agree; an http callback to a public host is refused.
    r = await post(env, envelope(env, { mode: "async" }));
    assert.equal(codeOf(r), "SCHEMA_INVALID");
    r = await post(
      env,
      envelope(env, { mode: "async", callbackUrl: "http://example.com/cb" }),
      { path: "/agent/task" },
    );
    assert.equal(r.status, 400);
    assert.equal(codeOf(r), "SCHEMA_INVALID");

    // Trust tiers: a bearer token from "tokens"; a peer in allowedPeers.
    r = await post(env, envelope(env, { skill: "paid" }));
    assert.equal(r.status, 401);
    assert.equal(codeOf(r), "AUTH_FAILED");
    r = await post(
      env,
      envelope(env, {
        skill: "paid",
        auth: { scheme: "bearer", token: "wrong" },
      }),
    );
    assert.equal(codeOf(r), "AUTH_FAILED");
    r = await post(
      env,
      envelope(env, {
        skill: "paid",
        auth: { scheme: "bearer", token: "open-sesame" },
      }),
    );
    assert.equal(r.status, 200);
    r = await post(env, envelope(env, { skill: "inner" }));
    assert.equal(r.status, 200);
    r = await post(env, envelope(env, { from: FLOOD, skill: "inner" }), {
      signer: env.flood,
    });
    assert.equal(r.status, 401);
    assert.equal(codeOf(r), "AUTH_FAILED");

    // A callback nobody awaits, or unsigned, is refused.
    const stray = await fetch(`${env.bridgeB.url}/agent/callback`, {
      method: "POST",
      body: JSON.stringify({ traceId: "x", status: "ok", result: {} }),
    });
    assert.equal(stray.status, 400);
    assert.equal((await stray.json()).error.code, "SCHEMA_INVALID");

    // Rate limit: 20 per sender per minute.
    let last;
    for (let i = 0; i < 21; i++) {
      last = await post(env, envelope(env, { from: FLOOD, skill: "nope" }), {
        signer: env.flood,
      });
    }
    assert.equal(last!.status, 429);
    assert.equal(codeOf(last!), "RATE_LIMITED");
    assert.ok(Number(last!.res.headers.get("retry-after")) >= 1);

    // The AWP side: a reply that fails outputSchema, a failed thread.
    const B = env.bridgeB.card.id;
    const seenByWorker = env.w.events();
    await assert.rejects(
      env.samvadA.call(B, "bad-output", { text: "x" }),
      (e: SamvadError) =>
        e.code === "AGENT_UNAVAILABLE" && /outputSchema/.test(e.message),
    );
    // The worker is told its reply was refused.
    for await (const e of seenByWorker) {
      if (e.type === "state" && e.state === "failed") {
        assert.match(e.note!, /outputSchema/);
        break;
      }
    }
    const { taskId } = await env.samvadA.task(B, "fail", { text: "x" });
    await assert.rejects(
      env.samvadA.waitTask(B, "fail", taskId, { intervalMs: 20 }),
      (e: SamvadError) =>
        e.code === "AGENT_UNAVAILABLE" && /boom/.test(e.message),
    );
    assert.equal((await env.samvadA.taskStatus(B, taskId)).status, "failed");

    // Outbound checks the payload against the card before sending.
    await assert.rejects(
      env.samvadA.call(B, "echo", { text: 7 }),
      (e: SamvadError) => e.code === "SCHEMA_INVALID",
    );
    await assert.rejects(
      env.samvadA.call(B, "missing", {}),
      (e: SamvadError) => e.code === "SKILL_NOT_FOUND",
    );
  } finally {
    await env.close();
  }
});
