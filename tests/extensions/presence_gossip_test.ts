/**
 * extensions/presence_gossip.ts over real Connections on 127.0.0.1: gossip along
 * a chain, forged documents stopped at the first hop, the hop limit, the
 * presence cap, relay switch-off, anti-entropy on connect, cycles; and the
 * table itself: persisted seq across a KvStore reopen, expiry, the timer.
 */

import assert from "node:assert/strict";
import { Connection } from "../../actors/connection.ts";
import type { Transport } from "../../net/transport.ts";
import {
  PresenceGossip,
  type PresenceGossipOptions,
  type PresenceLink,
  presenceLink,
  type PresenceOutcome,
} from "../../extensions/presence_gossip.ts";
import { MemoryStore } from "../../storage/memory_store.ts";
import { KvStore } from "../../storage/kv_store.ts";
import type { Store } from "../../storage/store.ts";
import { Signer } from "../../wire/keys.ts";
import { establishedPair } from "../helpers/connection_pair.ts";
import { signPresence } from "../../wire/presence.ts";
import { timestamp } from "../../wire/time.ts";

type Obj = Record<string, unknown>;

interface Node {
  name: string;
  signer: Signer;
  store: Store;
  gossip: PresenceGossip;
  conns: Connection[];
  /** Raw presence lines received, in order. */
  received: string[];
  /** Every raw line received. */
  all: string[];
  outcomes: PresenceOutcome[];
}

async function makeNode(
  name: string,
  options: Partial<PresenceGossipOptions> & { caps?: string[] } = {},
): Promise<Node> {
  const signer = await Signer.generate();
  const store = new MemoryStore();
  const node = {
    name,
    signer,
    store,
    conns: [],
    received: [],
    all: [],
    outcomes: [],
  } as unknown as Node;
  node.gossip = new PresenceGossip({
    signer,
    store,
    describe: () => ({ name }),
    peers: () =>
      node.conns.map((c) => presenceLink(c)).filter((l): l is PresenceLink =>
        l !== undefined
      ),
    ...options,
  });
  return node;
}

const caps = new Map<Node, string[]>();

function connection(
  node: Node,
  transport: Transport,
  dialed: boolean,
): Connection {
  const conn: Connection = new Connection({
    transport,
    dialed,
    signer: node.signer,
    store: node.store,
    name: node.name,
    caps: caps.get(node) ?? ["chat", "presence"],
    timeouts: { pingInterval: 0 },
    onLine: (_c, dir, raw) => {
      if (dir === "in") node.all.push(raw);
      if (dir === "in" && raw.startsWith('{"t":"presence"')) {
        node.received.push(raw);
      }
    },
    onControl: (c, line) => {
      if (line.message.t !== "presence" || !c.remote) return;
      node.gossip.onPresence(
        c.remote.key,
        line.message as unknown as Obj,
        line.raw,
      )
        .then((o) => node.outcomes.push(o));
    },
    onClosed: (c) => {
      node.conns = node.conns.filter((x) => x !== c);
    },
  });
  return conn;
}

/** Connects a (dialing) to b over TCP and runs presence's on-connect step on both. */
async function link(a: Node, b: Node): Promise<void> {
  const [ca, cb] = await establishedPair(
    (t) => connection(a, t, true),
    (t) => connection(b, t, false),
  );
  a.conns.push(ca);
  b.conns.push(cb);
  a.gossip.onConnected(presenceLink(ca)!);
  b.gossip.onConnected(presenceLink(cb)!);
}

async function shutdown(...nodes: Node[]): Promise<void> {
  const all = nodes.flatMap((n) => n.conns);
  for (const c of all) c.close("test over");
  await Promise.all(all.map((c) => c.closed));
  for (const n of nodes) {
    n.gossip.close();
    n.store.close();
  }
}

async function waitFor(
  check: () => boolean,
  what: string,
  ms = 4000,
): Promise<void> {
  const until = Date.now() + ms;
  while (!check()) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** The presence lines `node` received carrying documents of `origin`. */
function linesOf(node: Node, origin: string): Obj[] {
  return node.received.map((r) => JSON.parse(r) as Obj)
    .filter((m) => (m.doc as Obj).origin === origin);
}

Deno.test("gossip: a document crosses A-B-C-D byte for byte; forged ones stop at B", async () => {
  const [a, b, c, d] = await Promise.all(
    ["a", "b", "c", "d"].map((n) => makeNode(n)),
  );
  try {
    await link(a, b);
    await link(b, c);
    await link(c, d);
    const own = await a.gossip.publish();
    await waitFor(
      () => d.gossip.document(a.signer.key) !== undefined,
      "A's document at D",
    );
    const atD = d.gossip.document(a.signer.key)!;
    // Sent with hops 0 by A, relayed by B (1) and C (2): two relays.
    assert.equal(atD.hops, 2);
    assert.equal(atD.via, c.signer.key);
    assert.equal(atD.seq, own.doc.seq);
    for (const n of [b, c, d]) {
      assert.equal(n.gossip.document(a.signer.key)!.text, own.text);
      const [line] = linesOf(n, a.signer.key);
      assert.ok(
        n.received.some((r) => r.includes(`"doc":${own.text}`)),
        `${n.name} got the exact text`,
      );
      assert.equal(line.hops, { b: 0, c: 1, d: 2 }[n.name]);
    }

    // Forgeries over A's connection: altered content, altered signature byte.
    const aToB = presenceLink(a.conns[0])!;
    const newer = { ...own.doc, seq: own.doc.seq + 10, name: "mallory" };
    aToB.sendLine({ t: "presence", doc: newer, hops: 0 });
    const sig = own.doc.sig;
    aToB.sendLine({
      t: "presence",
      doc: {
        ...own.doc,
        seq: own.doc.seq + 11,
        sig: (sig[0] === "A" ? "B" : "A") + sig.slice(1),
      },
      hops: 0,
    });
    aToB.sendLine({ t: "presence", doc: "not a document", hops: 0 });
    aToB.sendLine({ t: "presence", doc: own.doc, hops: -1 });
    // Schema-invalid ones are dropped by the connection itself, the forged
    // ones by the gossip; neither closes the connection.
    const next = await a.gossip.publish();
    await waitFor(() => b.outcomes.length === 4, "B handles the lines");
    assert.deepEqual(b.outcomes.slice(1), [
      "dropped: bad signature",
      "dropped: bad signature",
      "stored",
    ]);
    assert.equal(a.conns[0].state, "open");
    await waitFor(
      () => d.gossip.document(a.signer.key)?.seq === next.doc.seq,
      "A's next document at D",
    );
    assert.equal(linesOf(d, a.signer.key).length, 2);
    assert.ok(!d.received.some((r) => r.includes("mallory")));
    assert.equal(d.gossip.document(a.signer.key)!.doc.name, "a");
    // Replaying an old document is stale, and goes no further.
    aToB.sendLine({ t: "presence", doc: own.doc, hops: 0 });
    await waitFor(
      () => b.outcomes.at(-1) === "stale",
      "B finds the replay stale",
    );
    await b.gossip.publish();
    await waitFor(
      () => d.gossip.document(b.signer.key) !== undefined,
      "B's document at D",
    );
    assert.equal(linesOf(d, a.signer.key).length, 2);
  } finally {
    await shutdown(a, b, c, d);
  }
});

Deno.test("gossip: the hop limit stops forwarding", async () => {
  const [a, b, c, d] = await Promise.all(
    ["a", "b", "c", "d"].map((n) => makeNode(n, { maxHops: 2 })),
  );
  try {
    await link(a, b);
    await link(b, c);
    await link(c, d);
    await a.gossip.publish();
    await waitFor(
      () => c.gossip.document(a.signer.key) !== undefined,
      "A's document at C",
    );
    assert.equal(c.gossip.document(a.signer.key)!.hops, 1);
    // C's own document follows on the same connection: once D has it, any
    // forward of A's would have arrived before it.
    await c.gossip.publish();
    await waitFor(
      () => d.gossip.document(c.signer.key) !== undefined,
      "C's document at D",
    );
    assert.equal(d.gossip.document(a.signer.key), undefined);
    assert.equal(linesOf(d, a.signer.key).length, 0);
  } finally {
    await shutdown(a, b, c, d);
  }
});

Deno.test("gossip: only peers listing the presence cap get documents", async () => {
  const a = await makeNode("a");
  const plain = await makeNode("plain");
  const watcher = await makeNode("watcher");
  caps.set(plain, ["chat"]);
  try {
    await link(plain, a);
    await link(watcher, a);
    await a.gossip.publish();
    await waitFor(
      () => watcher.gossip.document(a.signer.key) !== undefined,
      "watcher has A",
    );
    // Nor does the on-connect step send to it.
    a.gossip.onConnected(presenceLink(a.conns[0])!);
    // A sentinel on plain's connection is ordered after anything A sent it
    // before: no presence line was among them.
    a.conns[0].sendLine({ t: "x-sentinel" });
    await waitFor(
      () => plain.all.some((r) => r.includes("x-sentinel")),
      "sentinel",
    );
    assert.equal(plain.received.length, 0);
    assert.equal(plain.outcomes.length, 0);
    assert.equal(watcher.gossip.document(plain.signer.key), undefined);
  } finally {
    caps.delete(plain);
    await shutdown(a, plain, watcher);
  }
});

Deno.test("gossip: relaying can be switched off; the relay still stores", async () => {
  const a = await makeNode("a");
  const b = await makeNode("b", { relay: false });
  const c = await makeNode("c");
  try {
    await link(a, b);
    await link(b, c);
    await a.gossip.publish();
    await waitFor(
      () => b.gossip.document(a.signer.key) !== undefined,
      "B stores A",
    );
    await b.gossip.publish();
    await waitFor(
      () => c.gossip.document(b.signer.key) !== undefined,
      "C has B's own",
    );
    assert.equal(c.gossip.document(a.signer.key), undefined);
    // Nor on connect.
    const d = await makeNode("d");
    try {
      await link(d, b);
      await b.gossip.publish();
      await waitFor(
        () => linesOf(d, b.signer.key).length >= 1,
        "D has B's own",
      );
      assert.equal(linesOf(d, a.signer.key).length, 0);
      // Switched back on, the next connection gets it.
      b.gossip.setRelay(true);
      const e = await makeNode("e");
      try {
        await link(e, b);
        await waitFor(
          () => e.gossip.document(a.signer.key) !== undefined,
          "E has A",
        );
        assert.equal(e.gossip.document(a.signer.key)!.hops, 1);
      } finally {
        await shutdown(e);
      }
    } finally {
      await shutdown(d);
    }
  } finally {
    await shutdown(a, b, c);
  }
});

Deno.test("gossip: on connect each side sends what it holds; a cycle forwards each document once", async () => {
  const [a, b, c] = await Promise.all(
    ["a", "b", "c"].map((n) => makeNode(n, { publish: true })),
  );
  try {
    await link(a, b);
    const own = await a.gossip.publish();
    await waitFor(
      () => b.gossip.document(a.signer.key) !== undefined,
      "B has A",
    );
    // C connects to B later: anti-entropy hands it A's document (hops 1).
    await link(c, b);
    await waitFor(
      () => c.gossip.document(a.signer.key) !== undefined,
      "C has A by anti-entropy",
    );
    assert.equal(c.gossip.document(a.signer.key)!.text, own.text);
    assert.equal(c.gossip.document(a.signer.key)!.hops, 1);
    // Close the triangle: on connect A sends C its own document (stale there).
    await link(a, c);
    const next = await a.gossip.publish();
    for (const n of [b, c]) {
      await waitFor(
        () => n.gossip.document(a.signer.key)?.seq === next.doc.seq,
        `${n.name} has A's next`,
      );
    }
    await b.gossip.publish();
    await waitFor(
      () =>
        c.gossip.document(b.signer.key) !== undefined &&
        a.gossip.document(b.signer.key) !== undefined,
      "B's everywhere",
    );
    // A's newest document reached B and C directly and once more via the
    // other: each got it at most twice and forwarded it at most once.
    for (const n of [b, c]) {
      const copies = linesOf(n, a.signer.key).filter((m) =>
        (m.doc as Obj).seq === next.doc.seq
      );
      assert.ok(
        copies.length >= 1 && copies.length <= 2,
        `${n.name}: ${copies.length}`,
      );
    }
    // Nobody sends A its own document back (the origin is skipped).
    assert.equal(linesOf(a, a.signer.key).length, 0);
  } finally {
    await shutdown(a, b, c);
  }
});

Deno.test("gossip: seq is persisted and only increases across a KvStore reopen with the clock stepped back", async () => {
  const dir = await Deno.makeTempDir();
  const path = `${dir}/awp.kv`;
  const signer = await Signer.generate();
  const t0 = Date.parse("2026-12-02T15:00:00Z");
  try {
    let store = await KvStore.open(path);
    let gossip = new PresenceGossip({
      signer,
      store,
      now: () => t0,
      peers: () => [],
    });
    const first = await gossip.publish();
    const second = await gossip.publish();
    assert.equal(first.doc.seq, t0);
    assert.equal(second.doc.seq, t0 + 1);
    gossip.close();
    store.close();

    store = await KvStore.open(path);
    // An hour earlier, after a snapshot restore.
    gossip = new PresenceGossip({
      signer,
      store,
      now: () => t0 - 3_600_000,
      peers: () => [],
    });
    const third = await gossip.publish();
    assert.equal(third.doc.seq, t0 + 2);
    assert.equal(third.doc.ts, timestamp(t0 - 3_600_000));
    gossip.close();

    // A receiver keeps the highest seq, whatever the timestamps say.
    const rxStore = new MemoryStore();
    const rx = new PresenceGossip({
      signer: await Signer.generate(),
      store: rxStore,
      now: () => t0 - 3_600_000,
      peers: () => [],
    });
    assert.equal(
      await rx.onPresence("x", { t: "presence", doc: third.doc, hops: 0 }),
      "stored",
    );
    const lower = await signPresence(signer, {}, {
      seq: t0,
      ts: timestamp(t0 - 3_600_000),
    });
    assert.equal(
      await rx.onPresence("x", { t: "presence", doc: lower.doc, hops: 0 }),
      "stale",
    );
    assert.equal(
      await rx.onPresence("x", { t: "presence", doc: third.doc, hops: 0 }),
      "stale",
    );
    assert.equal(rx.document(signer.key)!.seq, t0 + 2);
    rx.close();
    rxStore.close();
    store.close();
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("gossip: documents older than 10 minutes are refused, stored ones forgotten", async () => {
  let now = Date.parse("2026-12-02T15:00:00Z");
  const events: string[] = [];
  const origin = await Signer.generate();
  const store = new MemoryStore();
  const rx = new PresenceGossip({
    signer: await Signer.generate(),
    store,
    now: () => now,
    peers: () => [],
    onEvent: (e) => events.push(`${e.kind}${e.detail ? `: ${e.detail}` : ""}`),
  });
  try {
    const old = await signPresence(origin, { name: "o" }, {
      seq: 1,
      ts: timestamp(now - 10 * 60_000 - 1),
    });
    assert.equal(
      await rx.onPresence("x", { t: "presence", doc: old.doc, hops: 0 }),
      "dropped: older than the maximum age",
    );
    const future = await signPresence(origin, {}, {
      seq: 2,
      ts: timestamp(now + 6 * 60_000),
    });
    assert.equal(
      await rx.onPresence("x", { t: "presence", doc: future.doc, hops: 0 }),
      "dropped: stamped in the future",
    );
    const fresh = await signPresence(origin, { name: "o" }, {
      seq: 3,
      ts: timestamp(now - 60_000),
    });
    assert.equal(
      await rx.onPresence("x", { t: "presence", doc: fresh.doc, hops: 0 }),
      "stored",
    );
    now += 8 * 60_000; // 9 minutes old
    assert.equal(rx.documents().length, 1);
    now += 2 * 60_000; // 11 minutes old
    assert.deepEqual(rx.documents(), []);
    assert.ok(events.includes("left"));
    // Our own document echoed back is ignored.
    const me = new PresenceGossip({
      signer: origin,
      store: new MemoryStore(),
      now: () => now,
      peers: () => [],
    });
    const mine = await me.publish();
    assert.equal(
      await me.onPresence("x", { t: "presence", doc: mine.doc, hops: 3 }),
      "dropped: our own document",
    );
    me.close();
  } finally {
    rx.close();
    store.close();
  }
});

Deno.test("gossip: at most maxOrigins, the least recent dropped", async () => {
  const now = Date.parse("2026-12-02T15:00:00Z");
  const rx = new PresenceGossip({
    signer: await Signer.generate(),
    store: new MemoryStore(),
    now: () => now,
    peers: () => [],
    maxOrigins: 3,
  });
  try {
    const origins = await Promise.all(
      Array.from({ length: 4 }, () => Signer.generate()),
    );
    for (let i = 0; i < 4; i++) {
      const { doc } = await signPresence(origins[i], {}, {
        seq: 1,
        ts: timestamp(now - (4 - i) * 1000),
      });
      assert.equal(
        await rx.onPresence("x", { t: "presence", doc, hops: 0 }),
        "stored",
      );
    }
    assert.deepEqual(
      rx.documents().map((r) => r.origin),
      [3, 2, 1].map((i) => origins[i].key),
    );
  } finally {
    rx.close();
  }
});

Deno.test("gossip: a burst of changes is one document after the settle delay; heartbeats follow", async () => {
  const published: number[] = [];
  let about = "idle";
  const [a, b] = await Promise.all([
    makeNode("a", {
      describe: () => ({ name: "a", about }),
      publish: true,
      publishDelayMs: 40,
      heartbeatMs: 400,
      onEvent: (e) => e.kind === "published" && published.push(Date.now()),
    }),
    makeNode("b"),
  ]);
  try {
    // Before any presence peer is connected, nothing is published.
    a.gossip.changed();
    await new Promise((r) => setTimeout(r, 80));
    assert.equal(published.length, 0);
    await link(a, b); // on connect: changed() → one document
    await waitFor(() => published.length === 1, "first publish");
    await waitFor(() => a.gossip.state === "idle", "settled");
    // A change with the same description, within the heartbeat: skipped.
    a.gossip.changed();
    await waitFor(() => a.gossip.state === "idle", "settled again");
    await new Promise((r) => setTimeout(r, 20));
    assert.equal(published.length, 1);
    // A burst of real changes: one document.
    for (let i = 0; i < 5; i++) {
      about = `step ${i}`;
      a.gossip.changed();
    }
    assert.equal(a.gossip.state, "pending");
    await waitFor(() => published.length === 2, "the burst's document");
    await waitFor(
      () => b.gossip.document(a.signer.key)?.doc.about === "step 4",
      "B has the last step",
    );
    // The heartbeat publishes with no change.
    const seq = b.gossip.document(a.signer.key)!.seq;
    await waitFor(
      () => (b.gossip.document(a.signer.key)?.seq ?? 0) > seq,
      "a heartbeat",
    );
  } finally {
    await shutdown(a, b);
  }
});
