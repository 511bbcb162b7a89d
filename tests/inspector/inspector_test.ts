/**
 * The inspector without a browser: the hub against real xstate actors, the
 * DOT drawing (rendered by real Graphviz/WASM), and the server over real
 * sockets (Host/Origin refusal, both WebSocket formats, JSON and SVG).
 */
import assert from "node:assert/strict";
import {
  assign,
  createActor,
  emit,
  setup,
  spawnChild,
} from "npm:xstate@^5.33.3";
import { instance } from "npm:@viz-js/viz@^3.31.0";
import {
  type HubEvent,
  InspectionHub,
} from "../../inspector/inspection_hub.ts";
import {
  machineToDot,
  stateElementId,
} from "../../inspector/machine_to_dot.ts";
import { serveInspector } from "../../inspector/server.ts";
import { toJsonSafe } from "../../inspector/to_json_safe.ts";

const child = setup({
  types: { emitted: {} as { type: "progress"; bytes: number; total: number } },
  actions: {
    report: emit({ type: "progress" as const, bytes: 5, total: 10 }),
  },
}).createMachine({
  id: "kid",
  initial: "idle",
  states: {
    idle: { on: { go: { target: "busy", actions: "report" } } },
    busy: {},
  },
});

const parent = setup({
  types: {
    context: {} as { n: number; data: Uint8Array },
    events: {} as { type: "inc" } | { type: "park" } | { type: "poke" },
  },
  actors: { kid: child },
  delays: { T: 60_000 },
  guards: { big: ({ context }) => context.n > 2 },
}).createMachine({
  id: "par",
  context: { n: 0, data: new Uint8Array(1024) },
  entry: spawnChild("kid", { id: "kid-1" }),
  initial: "a",
  states: {
    a: {
      on: {
        inc: { actions: assign({ n: ({ context }) => context.n + 1 }) },
        park: "p",
      },
      always: { guard: "big", target: "done" },
      after: { T: "p" },
    },
    p: {
      type: "parallel",
      states: {
        left: {
          initial: "l1",
          states: { l1: { after: { 100: "l2" } }, l2: {} },
        },
        right: {
          initial: "r1",
          states: { r1: { on: { poke: "r2" } }, r2: {} },
        },
      },
    },
    done: { type: "final" },
  },
});

Deno.test("hub records actors, events, snapshots and the tree from real actors", () => {
  const hub = new InspectionHub({ maxLog: 5 });
  const seen: HubEvent[] = [];
  const stop = hub.subscribe((e) => seen.push(e));
  const actor = createActor(parent, { inspect: hub.observer }).start();
  actor.send({ type: "park" });
  actor.send({ type: "poke" });

  const root = hub.actor(actor.sessionId);
  assert.ok(root);
  assert.equal(root.kind, "par");
  assert.equal(root.machine, "par");
  assert.equal(root.status, "active");
  assert.deepEqual(root.value, { p: { left: "l1", right: "r2" } });
  assert.deepEqual(
    [...root.active].sort(),
    [
      "par",
      "par.p",
      "par.p.left",
      "par.p.left.l1",
      "par.p.right",
      "par.p.right.r2",
    ],
  );

  const kid = hub.actors().find((a) => a.name === "kid-1");
  assert.ok(kid, "spawned child recorded");
  assert.equal(kid.parentId, actor.sessionId);
  assert.equal(kid.rootId, actor.sessionId);

  const log = hub.log(actor.sessionId);
  assert.ok(log.length <= 5, "log is a bounded ring");
  assert.deepEqual(
    log.map((e) => e.seq),
    [...log.map((e) => e.seq)].sort((a, b) => a - b),
  );
  const last = log.at(-1)!;
  assert.equal(last.type, "snapshot");
  if (last.type === "snapshot") {
    assert.deepEqual(last.event, { type: "poke" });
    assert.deepEqual((last.context as { data: unknown }).data, { bytes: 1024 });
  }
  assert.ok(
    log.some((e) =>
      e.type === "event" && (e.event as { type: string }).type === "poke"
    ),
  );

  // Subscribers saw the same events as they happened.
  assert.ok(seen.some((e) => e.type === "actor" && e.actor.id === kid.id));
  assert.ok(
    seen.some((e) => e.type === "snapshot" && e.id === actor.sessionId),
  );

  // Emitted progress events land on the actor.
  actor.getSnapshot().children["kid-1"]!.send({ type: "go" });
  assert.deepEqual(hub.actor(kid.id)?.progress, { bytes: 5, total: 10 });
  assert.ok(hub.log(kid.id).some((e) => e.type === "emitted"));

  // The definition is exported once per machine, with `always` added.
  assert.deepEqual(hub.machines().sort(), ["kid", "par"]);
  const def = hub.machine("par") as { states: { a: { always: unknown } } };
  assert.deepEqual(def.states.a.always, [{
    target: ["#par.done"],
    guard: "big",
  }]);
  assert.equal(JSON.parse(hub.machineConfig("par")!).id, "par");

  actor.stop();
  assert.equal(hub.actor(actor.sessionId)?.status, "stopped");
  stop();
  const before = seen.length;
  createActor(parent, { inspect: hub.observer }).start().stop();
  assert.equal(seen.length, before, "unsubscribed listener hears nothing");
});

Deno.test("hub.register adds separately created actors under a logical parent", () => {
  const hub = new InspectionHub({ maxFinished: 1 });
  const sup = createActor(child, { inspect: hub.observer }).start();
  hub.register(sup, { kind: "supervisor", label: "sup" });
  // Not created with the observer: followed through its snapshots.
  const loose = createActor(child);
  hub.register(loose, {
    kind: "connection",
    label: "peer bob",
    parentId: sup.sessionId,
  });
  loose.start();
  loose.send({ type: "go" });
  const info = hub.actor(loose.sessionId);
  assert.ok(info);
  assert.equal(info.kind, "connection");
  assert.equal(info.label, "peer bob");
  assert.equal(info.parentId, sup.sessionId);
  assert.equal(info.value, "busy");
  assert.deepEqual(info.progress, { bytes: 5, total: 10 });
  assert.equal(hub.actor(sup.sessionId)?.kind, "supervisor");

  // Finished actors are kept up to maxFinished, then dropped oldest first.
  loose.stop();
  assert.equal(hub.actor(loose.sessionId)?.status, "stopped");
  sup.stop();
  assert.equal(hub.actor(loose.sessionId), undefined);
  assert.equal(hub.actor(sup.sessionId)?.status, "stopped");
});

Deno.test("toJsonSafe bounds bytes, cycles, functions and long strings", () => {
  const a: Record<string, unknown> = {
    b: new Uint8Array(7),
    f() {},
    s: "x".repeat(500),
  };
  a.self = a;
  const out = toJsonSafe(a, { maxString: 10 }) as Record<string, unknown>;
  assert.deepEqual(out.b, { bytes: 7 });
  assert.equal(out.self, "[cycle]");
  assert.equal("f" in out, false);
  assert.equal(out.s, "xxxxxxxxxx…(500)");
});

Deno.test("machineToDot draws nested, parallel, after, always and guards; Graphviz renders it", async () => {
  const hub = new InspectionHub();
  createActor(parent, { inspect: hub.observer }).start().stop();
  const dot = machineToDot(hub.machine("par"));
  assert.match(dot, /^digraph "par" \{/);
  assert.match(dot, /bgcolor="transparent"/);
  assert.match(
    machineToDot(hub.machine("par"), { background: "white" }),
    /bgcolor="white"/,
  );
  assert.match(
    dot,
    /subgraph "cluster_par\.p" \{\s*id="state:par\.p"; label="p \(parallel\)"/,
  );
  assert.match(
    dot,
    /subgraph "cluster_par\.p\.left" \{[^}]*style="rounded,dashed"/,
  );
  assert.match(
    dot,
    /"par\.a" -> "par\.p::anchor" \[lhead="cluster_par\.p", label="park\\nafter T"\]/,
  );
  assert.match(
    dot,
    /"par\.p\.left\.l1" -> "par\.p\.left\.l2" \[label="after 100ms"\]/,
  );
  assert.match(dot, /"par\.a" -> "par\.done" \[label="always \[big\]"\]/);
  assert.match(dot, /"par\.a" -> "par\.a" \[label="inc", style=dashed\]/);
  assert.match(
    dot,
    /"par\.done" \[id="state:par\.done", label="done", peripheries=2\]/,
  );

  const viz = await instance();
  const result = viz.render(dot, { format: "svg" });
  assert.equal(result.status, "success", JSON.stringify(result.errors));
  assert.deepEqual(result.errors, []);
  for (
    const id of [
      "par.a",
      "par.p",
      "par.p.left.l1",
      "par.p.right.r2",
      "par.done",
    ]
  ) {
    assert.ok(
      result.output!.includes(`id="${stateElementId(id)}"`),
      `svg has ${id}`,
    );
  }

  assert.throws(
    () => machineToDot({ hello: 1 }),
    /^TypeError: machineToDot: machine definition is not an xstate state definition/,
  );
});

/** Sends a raw HTTP request (fetch will not forge Host) and returns the status. */
async function rawStatus(
  url: string,
  headers: Record<string, string>,
  path = "/",
) {
  const u = new URL(url);
  const conn = await Deno.connect({
    hostname: u.hostname,
    port: Number(u.port),
  });
  try {
    const lines = [
      `GET ${path} HTTP/1.1`,
      ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`),
    ];
    await conn.write(
      new TextEncoder().encode(
        lines.join("\r\n") + "\r\nConnection: close\r\n\r\n",
      ),
    );
    const buf = new Uint8Array(256);
    const n = await conn.read(buf);
    return Number(
      new TextDecoder().decode(buf.subarray(0, n ?? 0)).split(" ")[1],
    );
  } finally {
    conn.close();
  }
}

Deno.test("server refuses non-loopback Host and foreign-origin WebSockets", async () => {
  const hub = new InspectionHub();
  const server = await serveInspector(hub, { allowHosts: ["inspector.lan"] });
  try {
    const host = new URL(server.url).host;
    assert.equal(await rawStatus(server.url, { Host: host }), 200);
    assert.equal(await rawStatus(server.url, { Host: "localhost:9" }), 200);
    assert.equal(await rawStatus(server.url, { Host: "evil.example:80" }), 403);
    assert.equal(
      await rawStatus(server.url, { Host: "127.0.0.1.evil.example" }),
      403,
    );
    assert.equal(await rawStatus(server.url, {}), 403);
    assert.equal(
      await rawStatus(server.url, { Host: "inspector.lan:8080" }),
      200,
    );
    const ws = {
      Upgrade: "websocket",
      "Sec-WebSocket-Version": "13",
      "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==",
      Connection: "Upgrade",
    };
    assert.equal(
      await rawStatus(server.url, {
        Host: host,
        ...ws,
        Origin: "https://evil.example",
      }, "/ws"),
      403,
    );
    assert.equal(
      await rawStatus(server.url, {
        Host: host,
        ...ws,
        Origin: `http://${host}`,
      }, "/ws"),
      101,
    );
    const missing = await fetch(new URL("/api/log?id=nope", server.url));
    assert.equal(missing.status, 404);
    assert.equal(await missing.text(), "no actor nope\n");
  } finally {
    await server.close();
  }
});

/** Opens a WebSocket and collects its JSON messages. */
async function collect(url: string) {
  const messages: Array<Record<string, unknown>> = [];
  const ws = new WebSocket(url);
  const waiters: Array<() => void> = [];
  ws.onmessage = (e) => {
    messages.push(JSON.parse(e.data));
    waiters.splice(0).forEach((w) => w());
  };
  await new Promise((resolve, reject) => {
    ws.onopen = resolve;
    ws.onerror = reject;
  });
  const until = async (pred: (m: Record<string, unknown>) => boolean) => {
    const deadline = Date.now() + 5000;
    while (!messages.some(pred)) {
      if (Date.now() > deadline) {
        throw new Error("timed out waiting for a message");
      }
      await new Promise<void>((r) => {
        waiters.push(r);
        setTimeout(r, 100);
      });
    }
    return messages.find(pred)!;
  };
  const close = () =>
    new Promise<void>((resolve) => {
      ws.onclose = () => resolve();
      ws.close();
    });
  return { messages, until, close };
}

Deno.test("WebSocket streams live events in our format and Stately's", async () => {
  const hub = new InspectionHub();
  const early = createActor(child, { inspect: hub.observer }).start();
  const server = await serveInspector(hub);
  const wsUrl = server.url.replace("http://", "ws://");
  const ours = await collect(wsUrl + "ws");
  const stately = await collect(wsUrl + "ws/stately");
  try {
    const hello = await ours.until((m) => m.type === "hello");
    assert.deepEqual((hello.actors as Array<{ id: string }>).map((a) => a.id), [
      early.sessionId,
    ]);
    // Stately clients get the current actors replayed.
    const replay = await stately.until((m) => m.type === "@xstate.actor");
    assert.equal(replay.sessionId, early.sessionId);
    assert.equal(JSON.parse(replay.definition as string).id, "kid");

    const actor = createActor(parent, { inspect: hub.observer }).start();
    actor.send({ type: "park" });

    const ev = await ours.until((m) =>
      m.type === "event" && (m.event as { type: string }).type === "park"
    );
    assert.equal(ev.id, actor.sessionId);
    const snap = await ours.until((m) =>
      m.type === "snapshot" && m.id === actor.sessionId &&
      (m.event as { type: string }).type === "park"
    );
    assert.deepEqual(snap.value, { p: { left: "l1", right: "r1" } });
    assert.ok((snap.active as string[]).includes("par.p.right.r1"));

    const sActor = await stately.until((m) =>
      m.type === "@xstate.actor" && m.sessionId === actor.sessionId
    );
    assert.equal(typeof sActor._version, "string");
    assert.equal(sActor.parentId, undefined);
    const sKid = await stately.until((m) =>
      m.type === "@xstate.actor" && m.name === "kid-1"
    );
    assert.equal(sKid.parentId, actor.sessionId);
    assert.equal(sKid.rootId, actor.sessionId);
    const sEvent = await stately.until((m) =>
      m.type === "@xstate.event" &&
      (m.event as { type: string }).type === "park"
    );
    assert.equal(sEvent.sessionId, actor.sessionId);
    assert.match(sEvent.createdAt as string, /^\d+$/);
    const sSnap = await stately.until((m) =>
      m.type === "@xstate.snapshot" &&
      (m.event as { type: string }).type === "park"
    );
    assert.deepEqual((sSnap.snapshot as { value: unknown }).value, {
      p: { left: "l1", right: "r1" },
    });

    // The page's HTTP side: log and server-rendered diagram.
    const log =
      await (await fetch(`${server.url}api/log?id=${actor.sessionId}`)).json();
    assert.ok(log.length > 0);
    const svg = await fetch(`${server.url}api/diagram?key=par`);
    assert.equal(
      svg.headers.get("content-type"),
      "image/svg+xml; charset=utf-8",
    );
    assert.match(await svg.text(), /^<svg[\s\S]*id="state:par\.p\.left\.l1"/);
    actor.stop();
  } finally {
    await ours.close();
    await stately.close();
    early.stop();
    await server.close();
  }
});

Deno.test("server answers /favicon.ico with an icon, not a 404", async () => {
  const hub = new InspectionHub();
  const server = await serveInspector(hub, {});
  try {
    const r = await fetch(new URL("/favicon.ico", server.url));
    assert.equal(r.status, 200);
    assert.equal(r.headers.get("content-type"), "image/svg+xml");
    assert.match(await r.text(), /^<svg /);
  } finally {
    await server.close();
  }
});
