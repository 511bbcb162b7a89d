/**
 * Interop with SAMVAD as its published JSON Schemas define it (carried in
 * tests/fixtures/samvad/schema/, see SOURCE.md). SAMVAD's SDK is not on the
 * npm registry, so "agent X" here is a plain HTTP server written from the
 * spec alone (not with our bridge): it serves its own card, checks every
 * request of ours against request-envelope.schema.json and the RFC 9421
 * headers, and calls our bridge the way a SAMVAD agent does; every card,
 * response, task record and callback of ours is checked against the
 * schemas.
 */
import assert from "node:assert/strict";
import { Ajv2020 } from "npm:ajv@^8.20.0/dist/2020.js";
import addFormats from "npm:ajv-formats@^3.0.1";
import requestSchema from "../fixtures/samvad/schema/request-envelope.schema.json" with {
  type: "json",
};
import responseSchema from "../fixtures/samvad/schema/response-envelope.schema.json" with {
  type: "json",
};
import cardSchema from "../fixtures/samvad/schema/agent-card.schema.json" with {
  type: "json",
};
import taskSchema from "../fixtures/samvad/schema/task-status.schema.json" with {
  type: "json",
};
import { Peer } from "../../mod.ts";
import { Signer } from "../../wire/keys.ts";
import { decodeBase64, encodeBase64 } from "../../wire/base64.ts";
import {
  signatureHeadersOf,
  signRequest,
  verifyRequest,
} from "../../samvad/http_signature.ts";
import { parseBridgeConfig } from "../../samvad/bridge_config.ts";
import { ECHO, runWorker } from "../helpers/samvad_worker.ts";

const ajv = new Ajv2020({ strict: false, allErrors: true });
addFormats.default(ajv);
const schemas = {
  request: ajv.compile(requestSchema),
  response: ajv.compile(responseSchema),
  card: ajv.compile(cardSchema),
  task: ajv.compile(taskSchema),
};

function conforms(which: keyof typeof schemas, value: unknown): void {
  const validate = schemas[which];
  assert.ok(
    validate(value),
    `${which} fails SAMVAD's schema: ${ajv.errorsText(validate.errors)}\n${
      JSON.stringify(value)
    }`,
  );
}

const SIGNATURE_INPUT =
  /^sig1=\("@method" "@path" "content-digest"\);keyid="[^"]+";alg="ed25519";created=\d+$/;

/** Agent X: a SAMVAD agent from the spec, on 127.0.0.1. */
async function agentX() {
  const signer = await Signer.generate();
  const seen: Array<{ path: string; headers: Headers; body: unknown }> = [];
  const callbacks: Array<{ headers: Headers; bytes: Uint8Array }> = [];
  const tasks = new Map<string, Record<string, unknown>>();
  let id = "";
  let callerKey: (from: string) => Promise<Uint8Array>;
  const server: Deno.HttpServer<Deno.NetAddr> = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    async (req): Promise<Response> => {
      const path = new URL(req.url).pathname;
      if (req.method === "GET" && path === "/.well-known/agent.json") {
        return Response.json(card());
      }
      const task = /^\/agent\/task\/(.+)$/.exec(path);
      if (req.method === "GET" && task) {
        return Response.json(
          tasks.get(task[1]),
        );
      }
      const bytes = new Uint8Array(await req.arrayBuffer());
      if (path === "/cb") {
        callbacks.push({ headers: req.headers, bytes });
        return Response.json({ status: "ok" });
      }
      const body = JSON.parse(new TextDecoder().decode(bytes));
      seen.push({ path, headers: req.headers, body });
      const headers = signatureHeadersOf(req.headers);
      const ok = headers &&
        await verifyRequest(
          "POST",
          path,
          bytes,
          headers,
          await callerKey(body.from),
        );
      const spanId = crypto.randomUUID();
      if (!ok) {
        return Response.json({
          traceId: body.traceId,
          spanId,
          status: "error",
          error: { code: "AUTH_FAILED", message: "bad signature" },
        }, { status: 401 });
      }
      const result = { text: body.payload.text };
      if (path === "/agent/message") {
        return Response.json({
          traceId: body.traceId,
          spanId,
          status: "ok",
          result,
        });
      }
      if (path === "/agent/task") {
        const taskId = crypto.randomUUID();
        tasks.set(taskId, { taskId, status: "done", result });
        return Response.json({ taskId, status: "accepted" }, { status: 202 });
      }
      return new Response(
        `data: ${JSON.stringify({ chunk: "Reviewing...", done: false })}\n\n` +
          ": keep-alive\n\n" +
          `data: ${JSON.stringify({ done: true, result })}\n\n`,
        { headers: { "content-type": "text/event-stream" } },
      );
    },
  );
  id = `agent://127.0.0.1:${server.addr.port}`;
  const card = (): Record<string, unknown> => ({
    id,
    name: "X",
    version: "1.0.0",
    description: "a SAMVAD agent written from the spec",
    url: `http://127.0.0.1:${server.addr.port}`,
    protocolVersion: "1.2",
    skills: [{ ...ECHO, modes: ["sync", "async", "stream"], trust: "public" }],
    publicKeys: [{
      kid: "x-key-1",
      key: encodeBase64(signer.publicKey),
      active: true,
    }],
    cardTTL: 300,
  });
  return {
    signer,
    id,
    url: `http://127.0.0.1:${server.addr.port}`,
    seen,
    callbacks,
    card,
    setCallerKey(f: (from: string) => Promise<Uint8Array>) {
      callerKey = f;
    },
    close: () => server.shutdown(),
  };
}

async function cardKey(url: string): Promise<Uint8Array> {
  const card = await (await fetch(`${url}/.well-known/agent.json`)).json();
  return decodeBase64(card.publicKeys[0].key);
}

Deno.test("samvad interop: our client, bridge, cards and callbacks conform to SAMVAD's published schemas", async () => {
  const w = await Peer.open({ memory: true, name: "worker" });
  const events = w.events();
  const worker = runWorker(w, events);
  const a = await Peer.open({ memory: true, name: "a" });
  await a.connect(await w.listen("tcp:127.0.0.1:0"));
  const x = await agentX();
  try {
    conforms("card", x.card());
    const samvad = await a.samvad({ httpLoopback: true });
    const bridge = await samvad.serve({
      listen: "127.0.0.1:0",
      config: parseBridgeConfig({ to: w.key, skills: [ECHO] }, "test"),
    });
    const ourCard = await (await fetch(`${bridge.url}/.well-known/agent.json`))
      .json();
    conforms("card", ourCard);
    x.setCallerKey(() => cardKey(bridge.url));

    // Outbound: every request of ours is what X's schema and headers expect.
    assert.deepEqual(await samvad.call(x.id, "echo", { text: "hi" }), {
      text: "hi",
    });
    const { taskId } = await samvad.task(x.id, "echo", { text: "t" });
    assert.deepEqual(await samvad.waitTask(x.id, "echo", taskId), {
      text: "t",
    });
    const streamed = [];
    for await (const ev of samvad.stream(x.id, "echo", { text: "s" })) {
      streamed.push(ev);
    }
    assert.deepEqual(streamed, [
      { done: false, chunk: "Reviewing..." },
      { done: true, result: { text: "s" } },
    ]);
    assert.deepEqual(x.seen.map((s) => s.path), [
      "/agent/message",
      "/agent/task",
      "/agent/stream",
    ]);
    for (const s of x.seen) {
      conforms("request", s.body);
      assert.equal(s.headers.get("content-type"), "application/json");
      assert.match(s.headers.get("signature-input")!, SIGNATURE_INPUT);
      assert.match(s.headers.get("signature")!, /^sig1=:[A-Za-z0-9+/]+=*:$/);
      assert.match(
        s.headers.get("content-digest")!,
        /^sha-256=:[A-Za-z0-9+/]+=*:$/,
      );
      assert.equal((s.body as { from: string }).from, bridge.card.id);
      assert.equal((s.body as { to: string }).to, x.id);
    }

    // Inbound: X calls our bridge as a SAMVAD agent does.
    const send = async (path: string, over: Record<string, unknown>) => {
      const body = JSON.stringify({
        from: x.id,
        to: bridge.card.id,
        skill: "echo",
        mode: "sync",
        nonce: crypto.randomUUID(),
        timestamp: new Date().toISOString(),
        traceId: crypto.randomUUID(),
        spanId: crypto.randomUUID(),
        parentSpanId: null,
        delegationToken: null,
        payload: { text: "from x" },
        ...over,
      });
      conforms("request", JSON.parse(body));
      const headers = await signRequest(
        (d) => x.signer.sign(d),
        "x-key-1",
        "POST",
        path,
        new TextEncoder().encode(body),
      );
      const res = await fetch(`${bridge.url}${path}`, {
        method: "POST",
        headers: { "content-type": "application/json", ...headers },
        body,
      });
      return { status: res.status, body: await res.json() };
    };
    let r = await send("/agent/message", {});
    assert.equal(r.status, 200);
    conforms("response", r.body);
    assert.deepEqual(r.body.result, { text: "from x" });
    r = await send("/agent/message", { skill: "nope" });
    assert.equal(r.status, 404);
    conforms("response", r.body);
    const broken = await fetch(`${bridge.url}/agent/message`, {
      method: "POST",
      body: "not json",
    });
    assert.equal(broken.status, 400);
    conforms("response", await broken.json());

    r = await send("/agent/task", {
      mode: "async",
      callbackUrl: `${x.url}/cb`,
    });
    assert.equal(r.status, 202);
    assert.equal(r.body.status, "accepted");
    let status;
    do {
      await new Promise((ok) => setTimeout(ok, 20));
      status = await (await fetch(`${bridge.url}/agent/task/${r.body.taskId}`))
        .json();
      conforms("task", status);
    } while (status.status !== "done");
    assert.deepEqual(status.result, { text: "from x" });
    while (x.callbacks.length === 0) {
      await new Promise((ok) => setTimeout(ok, 20));
    }
    const [cb] = x.callbacks;
    conforms("response", JSON.parse(new TextDecoder().decode(cb.bytes)));
    assert.equal(
      await verifyRequest(
        "POST",
        "/cb",
        cb.bytes,
        signatureHeadersOf(cb.headers)!,
        await cardKey(bridge.url),
      ),
      true,
      "the callback is signed with the key of our card",
    );
  } finally {
    await x.close();
    await a.close();
    await events.return?.();
    await w.close();
    await worker;
  }
});
