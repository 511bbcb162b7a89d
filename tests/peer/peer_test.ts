import assert from "node:assert/strict";
import { Peer, type PeerOptions } from "../../peer/peer.ts";
import type { Part } from "../../wire/types.ts";
import { EventLog } from "../helpers/event_log.ts";
import { FAST_PEER } from "../helpers/peer_pair.ts";

async function open(
  home: string,
  name: string,
  extra: Partial<PeerOptions> = {},
) {
  const peer = await Peer.open({ home, name, ...FAST_PEER, ...extra });
  return { peer, events: new EventLog(peer) };
}

Deno.test("Peer.open: bad options are one-line errors", async () => {
  await assert.rejects(
    () => Peer.open({}),
    (e: Error) => /home/.test(e.message) && !e.message.includes("\n"),
  );
  await assert.rejects(
    () => Peer.open({ memory: true, maxBlobBytes: -1 }),
    /maxBlobBytes must be a non-negative integer/,
  );
});

Deno.test("two peers exchange messages in several threads both ways, with acks, events and states", async () => {
  const root = await Deno.makeTempDir();
  const a = await open(`${root}/a`, "alice");
  const b = await open(`${root}/b`, "bob");
  try {
    const addr = await a.peer.listen("tcp:127.0.0.1:0");
    assert.match(addr, /^tcp:127\.0\.0\.1:\d+$/);
    assert.equal(await b.peer.connect(addr), a.peer.key);
    await a.events.until(
      () => a.events.of("connected").length === 1,
      "a connected",
    );
    assert.equal(a.events.of("connected")[0].peer, b.peer.key);
    assert.equal(b.events.of("connected")[0].name, "alice");

    // b starts three threads; "alice" resolves by name, a key prefix works too.
    const sent: { id: string; th: string }[] = [];
    sent.push(
      await b.peer.send("alice", "t1 first", { subject: "Thread one" }),
    );
    sent.push(
      await b.peer.send(a.peer.key.slice(8, 20), "t2 first", {
        subject: "Thread two",
      }),
    );
    sent.push(
      await b.peer.send(a.peer.key, "t3 first", { subject: "Thread three" }),
    );
    const [t1, t2, t3] = sent.map((s) => s.th);
    assert.equal(new Set([t1, t2, t3]).size, 3);
    sent.push(
      await b.peer.send("alice", "t1 second", {
        thread: t1,
        subject: "ignored later",
      }),
    );
    sent.push(await b.peer.send("alice", "t2 second", { thread: t2 }));
    for (const s of sent) await b.peer.waitAck(s.id, { timeoutMs: 5000 });
    await b.events.until(() => b.events.of("acked").length >= 5, "5 acks");
    assert.deepEqual(
      new Set(b.events.of("acked").map((e) => e.id)),
      new Set(sent.map((s) => s.id)),
    );

    await a.events.until(
      () => a.events.messages().length === 5,
      "5 messages at a",
    );
    const got = a.events.messages();
    assert.deepEqual(got.map((m) => m.text), [
      "t1 first",
      "t2 first",
      "t3 first",
      "t1 second",
      "t2 second",
    ]);
    assert.ok(got.every((m) => m.peer === b.peer.key && m.ts.endsWith("Z")));
    assert.equal(got[0].subject, "Thread one");
    assert.deepEqual(got.map((m) => m.th), [t1, t2, t3, t1, t2]);

    // a answers in each thread, with re.
    const replies = [];
    for (const [i, th] of [t1, t2, t3].entries()) {
      replies.push(
        await a.peer.send(b.peer.key, `reply ${i + 1}`, {
          thread: th,
          re: got[i].id,
        }),
      );
    }
    for (const r of replies) await a.peer.waitAck(r.id, { timeoutMs: 5000 });
    await b.events.until(
      () => b.events.messages().length === 3,
      "3 replies at b",
    );
    assert.deepEqual(b.events.messages().map((m) => [m.th, m.text, m.re]), [
      [t1, "reply 1", got[0].id],
      [t2, "reply 2", got[1].id],
      [t3, "reply 3", got[2].id],
    ]);

    // Soft states both ways.
    const st = await a.peer.setState(b.peer.key, t1, "working", "on it");
    await a.peer.waitAck(st.id, { timeoutMs: 5000 });
    await b.peer.setState("alice", t2, "done");
    await b.events.until(() => b.events.of("state").length === 1, "state at b");
    await a.events.until(() => a.events.of("state").length === 1, "state at a");
    const sb = b.events.of("state")[0];
    assert.deepEqual([sb.th, sb.state, sb.note], [t1, "working", "on it"]);
    assert.deepEqual([
      a.events.of("state")[0].th,
      a.events.of("state")[0].state,
    ], [t2, "done"]);

    // Thread records on both sides.
    const ta = new Map((await a.peer.threads()).map((t) => [t.th, t]));
    assert.equal(ta.size, 3);
    assert.equal(ta.get(t1)!.subject, "Thread one");
    assert.equal(ta.get(t1)!.unread, 2);
    assert.equal(ta.get(t1)!.mine?.state, "working");
    assert.equal(ta.get(t2)!.theirs?.state, "done");
    const tb = new Map((await b.peer.threads()).map((t) => [t.th, t]));
    assert.equal(tb.get(t1)!.subject, "Thread one");
    assert.equal(tb.get(t1)!.theirs?.state, "working");
    assert.equal(tb.get(t1)!.theirs?.note, "on it");
    assert.equal(tb.get(t2)!.mine?.state, "done");
    assert.equal(tb.get(t3)!.unread, 1);

    const peersA = await a.peer.peers();
    assert.equal(peersA.length, 1);
    assert.equal(peersA[0].name, "bob");
    assert.equal(peersA[0].connected, true);
    const peersB = await b.peer.peers();
    assert.equal(peersB[0].dialed, true);
    assert.deepEqual(peersB[0].addresses, [addr]);

    // Unknown and too-short names are one-line errors; nothing is queued.
    await assert.rejects(
      () => b.peer.send("nobody", "x"),
      /unknown peer "nobody"/,
    );
    await assert.rejects(() => b.peer.send("ab", "x"), /unknown peer/);
    await assert.rejects(() => b.peer.send("alice", ""), /nothing to send/);
    await assert.rejects(
      () =>
        b.peer.send("alice", "x", {
          parts: [{ k: "blob", ref: "r" } as unknown as Part],
        }),
      /^TypeError: send: invalid msg: [^\n]+$/,
    );
    // The size limit counts UTF-8 bytes: 600,000 "é" are 1.2 MB (over 1 MiB).
    await assert.rejects(
      () => b.peer.send("alice", "é".repeat(600_000)),
      /the msg line would exceed 1048576 bytes/,
    );

    // bye: a sees the bye and both see the disconnect.
    await b.peer.bye("alice", "see you");
    await a.events.until(
      () => a.events.of("disconnected").length === 1,
      "a disconnected",
    );
    assert.equal(a.events.of("bye").length, 1);
  } finally {
    await b.peer.close();
    await a.peer.close();
    await Promise.all([a.events.done, b.events.done]);
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("a peer reopened from its home keeps its key and gets what was sent while away, in order, once", async () => {
  const root = await Deno.makeTempDir();
  const sock = `unix:${root}/a.sock`;
  let a = await open(`${root}/a`, "alice");
  let b = await open(`${root}/b`, "bob");
  try {
    await a.peer.listen(sock);
    await b.peer.connect(sock);
    const first = await b.peer.send("alice", "hello", { subject: "Work" });
    await b.peer.waitAck(first.id, { timeoutMs: 5000 });
    const th = first.th;
    const bKey = b.peer.key;

    // b goes away; a's sends still resolve (durable in the outbox).
    await b.peer.close();
    await b.events.done;
    await a.events.until(
      () => a.events.of("disconnected").length === 1,
      "a sees b leave",
    );
    const away = [];
    for (const text of ["one", "two", "three"]) {
      away.push(await a.peer.send("bob", text, { thread: th }));
    }
    const other = await a.peer.send("bob", "elsewhere", { subject: "Other" });

    // b comes back from the same home: same key, redials a by itself.
    b = await open(`${root}/b`, "bob");
    assert.equal(b.peer.key, bKey);
    for (const s of [...away, other]) {
      await a.peer.waitAck(s.id, { timeoutMs: 10_000 });
    }
    await b.events.until(
      () => b.events.messages().length >= 4,
      "replayed messages",
    );
    // Give any duplicate a chance to show up.
    await new Promise((r) => setTimeout(r, 200));
    const inThread = b.events.messages().filter((m) => m.th === th);
    assert.deepEqual(inThread.map((m) => m.text), ["one", "two", "three"]);
    assert.deepEqual(inThread.map((m) => m.id), away.map((s) => s.id));
    assert.equal(b.events.messages().length, 4);

    // Now a goes away and comes back on the same address: b's send queues
    // meanwhile and is delivered once a is back.
    await a.peer.close();
    await a.events.done;
    await b.events.until(
      () => b.events.of("disconnected").length === 1,
      "b sees a leave",
    );
    const queued = await b.peer.send("alice", "while you were out", {
      thread: th,
    });
    assert.equal((await b.peer.peers())[0].connected, false);
    a = await open(`${root}/a`, "alice");
    await a.peer.listen(sock);
    await b.peer.waitAck(queued.id, { timeoutMs: 10_000 });
    await a.events.until(
      () => a.events.messages().length === 1,
      "queued message at a",
    );
    assert.equal(a.events.messages()[0].text, "while you were out");
    const record = (await a.peer.threads()).find((t) => t.th === th)!;
    assert.equal(record.subject, "Work");
  } finally {
    await b.peer.close();
    await a.peer.close();
    await Promise.all([a.events.done, b.events.done]);
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("grants and introductions arrive as events and are stored", async () => {
  const a = await Peer.open({ memory: true, name: "alice", ...FAST_PEER });
  const b = await Peer.open({ memory: true, name: "bob", ...FAST_PEER });
  const c = await Peer.open({ memory: true, name: "carol", ...FAST_PEER });
  const eb = new EventLog(b);
  try {
    const addrA = await a.listen("tcp:127.0.0.1:0");
    const addrC = await c.listen("tcp:127.0.0.1:0");
    await b.connect(addrA);
    await a.connect(addrC);
    const grant = await a.grant("bob", ["exec"], { ttlMs: 60_000 });
    assert.equal(grant.sub, b.key);
    await eb.until(() => eb.of("grant").length === 1, "grant at b");
    assert.equal(eb.of("grant")[0].valid, true);
    assert.equal((await b.store.grants("held")).length, 1);
    assert.equal((await a.store.grants("issued")).length, 1);

    const intro = await a.introduce("bob", "carol", {
      grantCaps: ["chat"],
      ttlMs: 60_000,
    });
    assert.equal(intro.grant?.aud, c.key);
    await eb.until(() => eb.of("introduced").length === 1, "introduced at b");
    const ev = eb.of("introduced")[0];
    assert.deepEqual([ev.key, ev.name, ev.address], [c.key, "carol", addrC]);
    assert.equal(ev.grant?.sub, b.key);
    const known = await b.peers();
    assert.ok(known.some((p) => p.key === c.key && p.addresses[0] === addrC));
    await assert.rejects(
      () => a.introduce("bob", "nobody-here"),
      /unknown peer/,
    );
  } finally {
    await b.close();
    await a.close();
    await c.close();
    await eb.done;
  }
});
