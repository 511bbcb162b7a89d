/**
 * extensions/mirror.ts: what a sharer queues, how a host stores and withdraws,
 * and end to end over real Connections on 127.0.0.1 with KvStore files: a
 * mirror queued while the host is away arrives on reconnect (resume) and is
 * acked; `private` from the other party makes the host delete the thread.
 */

import assert from "node:assert/strict";
import { Connection } from "../../actors/connection.ts";
import type { Transport } from "../../net/transport.ts";
import {
  type MirroredLine,
  MirrorHost,
  MirrorSharer,
  SHARE_WITH_META,
} from "../../extensions/mirror.ts";
import { MemoryStore } from "../../storage/memory_store.ts";
import { KvStore } from "../../storage/kv_store.ts";
import type { OutboxEntry, Store } from "../../storage/store.ts";
import { Signer } from "../../wire/keys.ts";
import { blobPart, textPart } from "../../wire/messages.ts";
import { establishedPair } from "../helpers/connection_pair.ts";

type Obj = Record<string, unknown> & { t: string };

const keyOf = (c: string) => "ed25519:" + c.repeat(42) + "A";
const HOST = keyOf("H");
const HOST2 = keyOf("I");
const PEER = keyOf("P");
const TS = "2026-12-02T15:53:05.123Z";

function msgLine(id: string, th = "th1"): Obj {
  return {
    t: "msg",
    id,
    ts: TS,
    th,
    subject: "Plan the release",
    parts: [
      textPart("hello"),
      blobPart({
        ref: "b1",
        size: 1234,
        name: "notes.pdf",
        mime: "application/pdf",
      }),
    ],
  };
}

Deno.test("sharer: mirrors msg and state lines to each host but the peer, in order", async () => {
  const store = new MemoryStore();
  try {
    await store.putPeer({
      key: PEER,
      name: "peer@box",
      addresses: [],
      firstSeen: 0,
      lastSeen: 0,
    });
    const delivered: Array<[string, number]> = [];
    const sharer = new MirrorSharer({
      store,
      hosts: [HOST, HOST2, PEER],
      deliver: (peer, entries) => delivered.push([peer, entries.length]),
    });
    const line = msgLine("01J00000000000000000000001");
    const queued = await sharer.onLine(PEER, "in", JSON.stringify(line));
    assert.equal(queued.length, 2); // not to PEER: it has the thread first-hand
    const [toHost] = await store.outbox(HOST);
    assert.deepEqual(toHost.fields, {
      t: "mirror",
      th: "th1",
      of: PEER,
      of_name: "peer@box",
      subject: "Plan the release",
      dir: "in",
      line,
    });
    // Blob parts keep name, type and size; no file bytes travel.
    const part = (toHost.fields.line as Obj).parts as Obj[];
    assert.deepEqual(part[1], {
      k: "blob",
      ref: "b1",
      size: 1234,
      name: "notes.pdf",
      mime: "application/pdf",
    });
    assert.deepEqual(await store.outbox(PEER), []);
    assert.deepEqual(delivered, [[HOST, 1], [HOST2, 1]]);

    const state = {
      t: "state",
      id: "01J00000000000000000000002",
      ts: TS,
      th: "th1",
      state: "working",
    };
    await Promise.all([
      sharer.onLine(PEER, "out", state, {
        peer: PEER,
        th: "th1",
        subject: "From the record",
        created: TS,
        updated: TS,
        unread: 0,
      }),
      sharer.onLine(PEER, "in", msgLine("01J00000000000000000000003")),
    ]);
    const lines = (await store.outbox(HOST)).map((e) => e.fields);
    assert.deepEqual(lines.map((f) => (f.line as Obj).id), [
      "01J00000000000000000000001",
      "01J00000000000000000000002",
      "01J00000000000000000000003",
    ]);
    assert.equal(lines[1].dir, "out");
    assert.equal(lines[1].subject, "From the record");
    // Other line types, unthreaded lines: nothing.
    assert.deepEqual(
      await sharer.onLine(PEER, "in", { t: "chunk", id: "x", th: "th1" }),
      [],
    );
    assert.deepEqual(
      await sharer.onLine(PEER, "in", { t: "msg", id: "y", parts: [] }),
      [],
    );
    await assert.rejects(() => sharer.onLine(PEER, "in", "{nope"), /not JSON/);
  } finally {
    store.close();
  }
});

Deno.test("sharer: hosts are validated and remembered; private threads stay out", async () => {
  const store = new MemoryStore();
  try {
    assert.throws(
      () => new MirrorSharer({ store, hosts: ["bob"] }),
      /share with "bob": not an ed25519 key/,
    );
    assert.throws(
      () => new MirrorSharer({ store, hosts: [HOST], self: HOST }),
      /cannot share .* with itself/,
    );
    const sharer = new MirrorSharer({ store });
    assert.deepEqual(
      await sharer.onLine(PEER, "in", msgLine("01J00000000000000000000001")),
      [],
    );
    await sharer.setHosts([` ${HOST} `, HOST]);
    assert.deepEqual(sharer.hosts, [HOST]);
    assert.deepEqual(await MirrorSharer.savedHosts(store), [HOST]);
    assert.deepEqual(await store.getMeta(SHARE_WITH_META), [HOST]);

    // The other party asks for privacy: one withdraw per host, once.
    const withdraws = await sharer.onPrivate(PEER, "th1");
    assert.equal(withdraws.length, 1);
    assert.deepEqual(withdraws[0].fields, {
      t: "mirror",
      th: "th1",
      of: PEER,
      withdraw: true,
    });
    assert.deepEqual(await sharer.onPrivate(PEER, "th1"), []);
    assert.ok(await sharer.isPrivate(PEER, "th1"));
    assert.deepEqual(
      await sharer.onLine(PEER, "in", msgLine("01J00000000000000000000002")),
      [],
    );
    // Another thread with the same peer is still mirrored.
    assert.equal(
      (await sharer.onLine(
        PEER,
        "in",
        msgLine("01J00000000000000000000003", "th2"),
      )).length,
      1,
    );

    // Our own `private th2`: a withdraw to each host and a private line to the peer.
    const mine = await sharer.markPrivate(PEER, "th2");
    assert.deepEqual(mine.private.fields, { t: "private", th: "th2" });
    assert.equal(mine.private.peer, PEER);
    assert.deepEqual(mine.withdraws.map((e) => [e.peer, e.fields.withdraw]), [[
      HOST,
      true,
    ]]);
    assert.ok(await sharer.isPrivate(PEER, "th2"));
    await assert.rejects(
      () => sharer.markPrivate(PEER, ""),
      /thread id is required/,
    );
  } finally {
    store.close();
  }
});

Deno.test("host: stores apart from its own threads, dedups by the original id, deletes on withdraw", async () => {
  const store = new MemoryStore();
  const sharer = keyOf("S");
  try {
    const host = new MirrorHost({ store, now: () => 1000 });
    const m = (line: Obj, extra: Obj = { t: "mirror" }) => ({
      ...extra,
      th: "th1",
      of: PEER,
      of_name: "p",
      subject: "Plan",
      dir: "in",
      line,
    });
    assert.equal(
      await host.onMirror(sharer, m(msgLine("01J00000000000000000000001"))),
      "stored",
    );
    assert.equal(
      await host.onMirror(sharer, m(msgLine("01J00000000000000000000001"))),
      "duplicate",
    );
    const state = {
      t: "state",
      id: "01J00000000000000000000002",
      ts: TS,
      th: "th1",
      state: "done",
    };
    assert.equal(
      await host.onMirror(sharer, { ...m(state), dir: "out" }),
      "stored",
    );
    assert.match(
      await host.onMirror(sharer, { th: "th1", of: "x", line: state }),
      /^ignored: .*of/,
    );
    assert.match(
      await host.onMirror(sharer, { of: PEER, line: state }),
      /^ignored: .*th/,
    );
    assert.match(
      await host.onMirror(sharer, {
        th: "th1",
        of: PEER,
        line: { t: "chunk", id: "c" },
      }),
      /^ignored/,
    );
    // A different sharer's thread with the same id is its own.
    assert.equal(
      await host.onMirror(keyOf("T"), m(msgLine("01J00000000000000000000001"))),
      "stored",
    );

    const lines = await host.lines("th1", { sharer });
    assert.deepEqual(
      lines.map((l: MirroredLine) => [l.n, l.dir, l.from, l.t]),
      [
        [0, "in", PEER, "msg"],
        [1, "out", sharer, "state"],
      ],
    );
    assert.deepEqual(lines[0].line, msgLine("01J00000000000000000000001"));
    const threads = await host.threads(sharer);
    assert.deepEqual(threads, [{
      sharer,
      of: PEER,
      of_name: "p",
      th: "th1",
      subject: "Plan",
      count: 2,
      next: 2,
      updated: 1000,
    }]);
    assert.equal((await host.threads()).length, 2);
    assert.deepEqual(await store.threads(), []); // not the host's own

    assert.equal(
      await host.onMirror(sharer, {
        t: "mirror",
        th: "th1",
        of: PEER,
        withdraw: true,
      }),
      "withdrawn",
    );
    assert.deepEqual(await host.lines("th1", { sharer }), []);
    assert.deepEqual(await host.threads(sharer), []);
    assert.equal((await host.lines("th1")).length, 1); // the other sharer's copy stays
    // Everything of it is gone, dedup included: the same line stores anew.
    assert.equal(
      await host.onMirror(sharer, m(msgLine("01J00000000000000000000001"))),
      "stored",
    );
    assert.equal((await host.lines("th1", { sharer }))[0].n, 0);
  } finally {
    store.close();
  }
});

// ---------- end to end over real connections ----------

interface Node {
  name: string;
  signer: Signer;
  store: Store;
  conns: Map<string, Connection>;
  pending: Promise<unknown>[];
  onDeliver(from: string, message: Obj): Promise<unknown> | undefined;
}

async function makeNode(name: string, store: Store): Promise<Node> {
  return {
    name,
    signer: await Signer.generate(),
    store,
    conns: new Map(),
    pending: [],
    onDeliver: () => undefined,
  };
}

function connection(
  node: Node,
  transport: Transport,
  dialed: boolean,
): Connection {
  return new Connection({
    transport,
    dialed,
    signer: node.signer,
    store: node.store,
    name: node.name,
    timeouts: { pingInterval: 0 },
    onDeliver: (c, lines) => {
      for (const { message } of lines) {
        const p = node.onDeliver(c.remote!.key, message as unknown as Obj);
        if (p) node.pending.push(p);
      }
    },
    onClosed: (c) => {
      for (const [k, v] of node.conns) if (v === c) node.conns.delete(k);
    },
  });
}

async function link(a: Node, b: Node): Promise<void> {
  const [ca, cb] = await establishedPair(
    (t) => connection(a, t, true),
    (t) => connection(b, t, false),
  );
  a.conns.set(b.signer.key, ca);
  b.conns.set(a.signer.key, cb);
}

async function unlink(a: Node, b: Node): Promise<void> {
  const ca = a.conns.get(b.signer.key)!;
  const cb = b.conns.get(a.signer.key)!;
  ca.close("host goes away");
  await Promise.all([ca.closed, cb.closed]);
}

async function waitFor(
  check: () => boolean | Promise<boolean>,
  what: string,
  ms = 5000,
): Promise<void> {
  const until = Date.now() + ms;
  while (!await check()) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** Enqueues content lines from `from` to `to` and sends them if connected. */
async function send(from: Node, to: Node, fields: Obj): Promise<OutboxEntry> {
  const [entry] = await from.store.enqueue(to.signer.key, [{
    fields: fields as Obj & { th?: string },
  }]);
  from.conns.get(to.signer.key)?.sendEntries([entry]);
  return entry;
}

Deno.test("mirror e2e: queued while the host is away, delivered on resume and acked; private withdraws it", async () => {
  const dir = await Deno.makeTempDir();
  const s = await makeNode("sharer", await KvStore.open(`${dir}/s.kv`));
  const h = await makeNode("host", await KvStore.open(`${dir}/h.kv`));
  const p = await makeNode("peer", new MemoryStore());
  const deliver = (node: Node) => (peer: string, entries: OutboxEntry[]) =>
    node.conns.get(peer)?.sendEntries(entries);
  const sharer = new MirrorSharer({
    store: s.store,
    hosts: [h.signer.key],
    self: s.signer.key,
    deliver: deliver(s),
  });
  const host = new MirrorHost({ store: h.store });
  const peerSharer = new MirrorSharer({ store: p.store, deliver: deliver(p) });
  s.onDeliver = (from, m) => {
    if (m.t === "msg" || m.t === "state") return sharer.onLine(from, "in", m);
    if (m.t === "private") return sharer.onPrivate(from, m.th as string);
  };
  h.onDeliver = (from, m) =>
    m.t === "mirror" ? host.onMirror(from, m) : undefined;
  const th = "thr_release";
  try {
    await link(s, h);
    await link(p, s);
    await unlink(s, h);

    // While the host is away: one line in, one line out.
    const inbound = await send(p, s, {
      t: "msg",
      th,
      subject: "Ship v0.2",
      parts: [
        textPart("build it"),
        blobPart({ ref: "b9", size: 99, name: "spec.md" }),
      ],
    });
    await waitFor(
      async () => (await s.store.outbox(h.signer.key)).length === 1,
      "a mirror queued",
    );
    const outbound = await send(s, p, { t: "state", th, state: "working" });
    await sharer.onLine(p.signer.key, "out", {
      ...outbound.fields,
      id: outbound.id,
      ts: outbound.ts,
    });
    assert.equal((await s.store.outbox(h.signer.key)).length, 2);
    assert.deepEqual(await host.lines(th), []);

    // The host comes back: resume replays both, the host acks them.
    await link(h, s);
    await waitFor(
      async () => (await host.lines(th)).length === 2,
      "both mirrored on the host",
    );
    await waitFor(
      async () => (await s.store.outbox(h.signer.key)).length === 0,
      "mirrors acked",
    );
    const lines = await host.lines(th);
    assert.deepEqual(lines.map((l) => [l.id, l.dir, l.from, l.sharer, l.of]), [
      [inbound.id, "in", p.signer.key, s.signer.key, p.signer.key],
      [outbound.id, "out", s.signer.key, s.signer.key, p.signer.key],
    ]);
    assert.deepEqual(lines[0].line.parts, inbound.fields.parts);
    assert.equal((await host.threads())[0].subject, "Ship v0.2");
    // Kept apart: the host has no thread of its own by that id.
    assert.deepEqual(await h.store.threads(), []);
    assert.deepEqual(await h.store.thread(s.signer.key, th), undefined);

    // The other party makes the thread private: the sharer withdraws it and
    // the host deletes what it has.
    const mine = await peerSharer.markPrivate(s.signer.key, th);
    await waitFor(
      async () => (await host.threads()).length === 0,
      "thread withdrawn on the host",
    );
    assert.deepEqual(await host.lines(th), []);
    const ref = JSON.stringify([s.signer.key, p.signer.key, th]);
    assert.equal(await h.store.getMeta(`mirrored:line:${ref}:0`), undefined);
    assert.equal(await h.store.getMeta(`mirrored:thread:${ref}`), undefined);
    await waitFor(
      async () =>
        (await p.store.outbox(s.signer.key)).every((e) =>
          e.id !== mine.private.id
        ),
      "private acked",
    );
    await waitFor(
      async () => (await s.store.outbox(h.signer.key)).length === 0,
      "withdraw acked",
    );
    assert.ok(await sharer.isPrivate(p.signer.key, th));
    assert.ok(await peerSharer.isPrivate(s.signer.key, th));

    // Later lines of the thread are no longer mirrored.
    s.pending.length = 0;
    await send(p, s, { t: "msg", th, parts: [textPart("secret")] });
    await waitFor(() => s.pending.length === 1, "delivered to the sharer");
    assert.deepEqual(await s.pending[0], []);
    assert.deepEqual(await s.store.outbox(h.signer.key), []);
  } finally {
    for (const n of [s, h, p]) {
      for (const c of n.conns.values()) c.close("test over");
    }
    await Promise.all(
      [s, h, p].flatMap((n) => [...n.conns.values()].map((c) => c.closed)),
    );
    await Promise.allSettled([s, h, p].flatMap((n) => n.pending));
    for (const n of [s, h, p]) n.store.close();
    await Deno.remove(dir, { recursive: true });
  }
});
