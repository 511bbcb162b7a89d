import assert from "node:assert/strict";
import {
  type Delivery,
  Supervisor,
  type SupervisorEvent,
  type SupervisorOptions,
} from "../../actors/supervisor.ts";
import { MemoryStore } from "../../storage/memory_store.ts";
import { queueLines } from "../../peer/peer_sender.ts";
import { Signer } from "../../wire/keys.ts";

interface TestPeer {
  sup: Supervisor;
  signer: Signer;
  key: string;
  store: MemoryStore;
  events: SupervisorEvent[];
  got: Delivery[];
}

async function peer(
  name: string,
  extra: Partial<SupervisorOptions> = {},
): Promise<TestPeer> {
  const signer = extra.signer ?? await Signer.generate();
  const store = new MemoryStore();
  const events: SupervisorEvent[] = [];
  const got: Delivery[] = [];
  const sup = new Supervisor({
    signer,
    store,
    name,
    timeouts: { pingInterval: 0 },
    dialer: { timing: { baseMs: 20, capMs: 100, graceMs: 50 } },
    routes: { thread: () => (d) => void got.push(d) },
    onEvent: (e) => events.push(e),
    ...extra,
  });
  sup.start();
  return { sup, signer, key: signer.key, store, events, got };
}

async function until(check: () => boolean, what: string, ms = 5000) {
  const start = Date.now();
  while (!check()) {
    if (Date.now() - start > ms) throw new Error(`timed out waiting: ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

function msg(th: string, text: string) {
  return {
    fields: {
      t: "msg",
      th,
      parts: [{ k: "text", text }],
    } as { t: string; th: string; [k: string]: unknown },
  };
}

function texts(p: TestPeer): string[] {
  return p.got.map((d) =>
    (d.message as { parts: Array<{ text: string }> }).parts[0].text
  );
}

async function stopAll(...peers: TestPeer[]) {
  await Promise.all(peers.map((p) => p.sup.stop()));
  for (const p of peers) p.store.close();
}

Deno.test("two supervisors exchange messages over a real socket; acks empty the outbox", async () => {
  const a = await peer("a");
  const b = await peer("b");
  try {
    const listener = await a.sup.listen("tcp:127.0.0.1:0");
    const remote = await b.sup.connect(listener.addr);
    assert.equal(remote.key, a.key);
    assert.equal(remote.name, "a");
    assert.equal(remote.addr, listener.addr, "hello.addr advertised");
    await until(() => a.sup.connection(b.key)?.state === "open", "a open");
    await queueLines(b.store, b.sup, a.key, [
      msg("t1", "hello a"),
      msg("t1", "again"),
    ]);
    await queueLines(a.store, a.sup, b.key, [msg("t2", "hello b")]);
    await until(() => a.got.length === 2 && b.got.length === 1, "delivery");
    assert.deepEqual(texts(a), ["hello a", "again"]);
    assert.deepEqual(texts(b), ["hello b"]);
    assert.equal(a.got[0].peer, b.key);
    assert.equal(a.got[0].message.th, "t1");
    await until(async_ok(b, a.key), "b's outbox acked");
    assert.equal(a.sup.counts.active, 1);
    assert.equal(b.sup.counts.connections, 1);
    assert.ok(a.events.some((e) => e.type === "connected" && !e.dialed));
    assert.ok(b.events.some((e) => e.type === "connected" && e.dialed));
  } finally {
    await stopAll(a, b);
  }
  assert.equal(a.sup.state, "stopped");
});

/** A sync check over the async outbox: polls it in the background. */
function async_ok(p: TestPeer, remote: string): () => boolean {
  let empty = false;
  let inFlight = false;
  return () => {
    if (!inFlight) {
      inFlight = true;
      p.store.outbox(remote).then((o) => {
        empty = o.length === 0;
        inFlight = false;
      });
    }
    return empty;
  };
}

Deno.test("a newer connection to the same key replaces the older one", async () => {
  const a = await peer("a", { simultaneousWindowMs: 0 });
  // b1 is the peer before a sleep: its connection stays half open. b2 is the
  // same key coming back.
  const b1 = await peer("b1");
  const b2 = await peer("b2", { signer: b1.signer });
  try {
    const listener = await a.sup.listen("tcp:127.0.0.1:0");
    await b1.sup.connect(listener.addr);
    await until(() => a.sup.connection(b1.key)?.state === "open", "first");
    const first = a.sup.connection(b1.key)!;
    await b2.sup.connect(listener.addr);
    assert.equal(await first.closed, "replaced by a newer connection");
    assert.ok(
      a.events.some((e) => e.type === "replaced" && e.peer === b1.key),
    );
    await until(() => a.sup.counts.connections === 1, "old one gone on a");
    const second = a.sup.connection(b1.key)!;
    assert.notEqual(second, first);
    assert.equal(a.sup.counts.active, 1);
    await queueLines(b2.store, b2.sup, a.key, [msg("t", "over the new one")]);
    await until(() => a.got.length === 1, "delivery on the new connection");
    assert.equal(a.got[0].connection, second);
  } finally {
    await stopAll(a, b1, b2);
  }
});

Deno.test("simultaneous open: both sides keep the connection dialed by the smaller key", async () => {
  const a = await peer("a");
  const b = await peer("b");
  try {
    const la = await a.sup.listen("tcp:127.0.0.1:0");
    const lb = await b.sup.listen("tcp:127.0.0.1:0");
    const results = await Promise.allSettled([
      a.sup.connect(lb.addr),
      b.sup.connect(la.addr),
    ]);
    assert.ok(results.some((r) => r.status === "fulfilled"));
    await until(
      () => a.sup.counts.connections === 1 && b.sup.counts.connections === 1,
      "one connection each",
    );
    const smallerIsA = a.key < b.key;
    const ca = a.sup.connection(b.key)!;
    const cb = b.sup.connection(a.key)!;
    assert.equal(ca.dialed, smallerIsA, "a kept the smaller key's dial");
    assert.equal(cb.dialed, !smallerIsA, "b kept the smaller key's dial");
    await until(() => ca.state === "open" && cb.state === "open", "open");
    await queueLines(a.store, a.sup, b.key, [
      msg("s", "ping over the survivor"),
    ]);
    await until(() => b.got.length === 1, "delivery");
    assert.equal(b.got[0].connection, cb);
  } finally {
    await stopAll(a, b);
  }
});

Deno.test("a throwing handler or a garbage client does not take the supervisor down", async () => {
  const a = await peer("a", {
    routes: {
      thread: (_peer, th) => {
        if (th === "sync") {
          return (d) => {
            const text = (d.message as { parts: Array<{ text: string }> })
              .parts[0].text;
            if (text === "boom") throw new Error("handler exploded");
            got.push(d);
          };
        }
        if (th === "async") {
          return () => Promise.reject(new Error("async handler exploded"));
        }
        throw new Error("no handler for this thread");
      },
    },
  });
  const got: Delivery[] = [];
  const b = await peer("b");
  try {
    const listener = await a.sup.listen("tcp:127.0.0.1:0");
    await b.sup.connect(listener.addr);
    await queueLines(b.store, b.sup, a.key, [
      msg("sync", "boom"),
      msg("async", "x"),
      msg("nobody", "y"),
      msg("sync", "fine"),
    ]);
    await until(() => got.length === 1, "later delivery still works");
    await until(() => a.sup.counts.failures === 3, "three failures counted");
    const errors = a.events.filter((e) => e.type === "handler_error");
    assert.deepEqual(
      errors.map((e) => e.type === "handler_error" && e.error).sort(),
      [
        "async handler exploded",
        "handler exploded",
        "no handler for this thread",
      ],
    );
    // A client speaking garbage is closed; nothing else is affected.
    const port = Number(listener.addr.split(":").at(-1));
    const raw = await Deno.connect({ hostname: "127.0.0.1", port });
    await raw.write(new TextEncoder().encode("this is not json\n"));
    const buf = new Uint8Array(4096);
    let text = "";
    for (;;) {
      const n = await raw.read(buf);
      if (n === null) break;
      text += new TextDecoder().decode(buf.subarray(0, n));
    }
    raw.close();
    assert.match(text, /"code":"bad_frame"/);
    await until(() => a.sup.counts.connections === 1, "garbage conn gone");
    assert.equal(a.sup.state, "running");
    assert.equal(a.sup.connection(b.key)?.state, "open");
    await queueLines(b.store, b.sup, a.key, [msg("sync", "still here")]);
    await until(() => got.length === 2, "delivery after all that");
  } finally {
    await stopAll(a, b);
  }
});

Deno.test("the dialer reconnects with backoff and resume delivers what was queued", async () => {
  const a = await peer("a");
  const b = await peer("b");
  const got2: Delivery[] = [];
  let a2: Supervisor | undefined;
  try {
    const listener = await a.sup.listen("tcp:127.0.0.1:0");
    const address = listener.addr;
    b.sup.reach(a.key, [address]);
    await queueLines(b.store, b.sup, a.key, [msg("t", "first")]);
    await until(() => a.got.length === 1, "first delivery");
    // a goes away; b queues while it is down and keeps retrying.
    await a.sup.stop();
    await until(() => b.sup.connection(a.key) === undefined, "b sees it");
    await queueLines(b.store, b.sup, a.key, [msg("t", "queued while down")]);
    await until(
      () => b.events.some((e) => e.type === "dial_failed"),
      "b retries and fails while a is down",
    );
    // a comes back on the same address with the same key and store.
    a2 = new Supervisor({
      signer: a.signer,
      store: a.store,
      name: "a",
      timeouts: { pingInterval: 0 },
      routes: { thread: () => (d) => void got2.push(d) },
    });
    a2.start();
    await a2.listen(address);
    await until(() => got2.length === 1, "queued message delivered on resume");
    assert.equal(
      (got2[0].message as { parts: Array<{ text: string }> }).parts[0].text,
      "queued while down",
    );
    await until(() => b.sup.dialer(a.key)?.state === "connected", "dialer");
  } finally {
    await b.sup.stop();
    await a2?.stop();
    a.store.close();
    b.store.close();
  }
});
