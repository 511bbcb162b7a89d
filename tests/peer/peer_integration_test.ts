/**
 * The Peer's integration of durability, actors and inspection, over real
 * unix sockets and Deno KV files in temp dirs: reliable grant lines, the
 * traffic log and mark-read, thread and blob actors with progress events,
 * refused blobs leaving the outbox, and the inspection hub's actor tree.
 */
import assert from "node:assert/strict";
import { Peer, type PeerOptions } from "../../peer/peer.ts";
import { InspectionHub } from "../../inspector/inspection_hub.ts";
import { EventLog } from "../helpers/event_log.ts";

const FAST: Partial<PeerOptions> = {
  timeouts: { pingInterval: 0, bye: 1000 },
  dialer: { timing: { baseMs: 50, capMs: 200 }, random: () => 0.5 },
};

async function pair(dir: string, extra: Partial<PeerOptions> = {}) {
  const a = await Peer.open({ home: `${dir}/a`, name: "alice", ...FAST });
  const b = await Peer.open({
    home: `${dir}/b`,
    name: "bob",
    ...FAST,
    ...extra,
  });
  const ae = new EventLog(a);
  const be = new EventLog(b);
  const addr = await b.listen(`unix:${dir}/b.sock`);
  await a.connect(addr);
  return { a, b, ae, be, addr };
}

Deno.test("a grant to an away peer is outboxed, replayed on reconnect, and dropped after a later ack", async () => {
  const dir = await Deno.makeTempDir({ prefix: "awp-int-" });
  let { a, b, be } = await pair(dir);
  const bKey = b.key;
  try {
    await b.close();
    // b is away: the grant waits in a's outbox.
    const grant = await a.grant(bKey, ["chat"], { ttlMs: 60_000 });
    assert.deepEqual(
      (await a.store.outbox(bKey)).map((e) => e.t),
      ["grant"],
    );
    b = await Peer.open({ home: `${dir}/b`, name: "bob", ...FAST });
    be = new EventLog(b);
    await b.listen(`unix:${dir}/b.sock`);
    await be.until(() => be.of("grant").length === 1, "the replayed grant");
    const got = be.of("grant")[0];
    assert.equal(got.valid, true, got.reason);
    assert.deepEqual(got.grant, grant);
    // Never acked: still outboxed until a later line is acked.
    assert.equal((await a.store.outbox(bKey)).length, 1);
    const { id } = await a.send(bKey, "after the grant");
    await a.waitAck(id, { timeoutMs: 5000 });
    assert.deepEqual(await a.store.outbox(bKey), []);
    assert.equal(be.of("grant").length, 1, "no second grant event");
  } finally {
    await a.close();
    await b.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("the traffic log pages through lines in and out; markRead clears unread; bye carries its reason", async () => {
  const dir = await Deno.makeTempDir({ prefix: "awp-int-" });
  const { a, b, ae, be } = await pair(dir);
  try {
    const { id, th } = await a.send(b.key, "hello bob", { subject: "Hi" });
    await a.waitAck(id, { timeoutMs: 5000 });
    await be.until(() => be.of("message").length === 1, "the msg");
    const aLog = await a.log({ peer: b.key, th });
    // Acks have no log rows of their own (the acked event says it).
    assert.deepEqual(aLog.map((e) => `${e.dir} ${e.t}`), ["out msg"]);
    assert.equal(aLog[0].id, id);
    const bLog = await b.log({ peer: a.key });
    assert.ok(bLog.some((e) => e.dir === "in" && e.t === "msg" && e.id === id));
    assert.ok(!bLog.some((e) => e.t === "ack"));
    const after = await b.log({ after: bLog[bLog.length - 1].seq });
    assert.deepEqual(after, []);

    assert.equal((await b.store.thread(a.key, th))?.unread, 1);
    await b.markRead(a.key, th);
    assert.equal((await b.store.thread(a.key, th))?.unread, 0);
    await assert.rejects(() => b.markRead(a.key, "nope"), /no thread nope/);

    await a.bye(b.key, "see you");
    await be.until(() => be.of("bye").length === 1, "bye");
    assert.equal(be.of("bye")[0].reason, "see you");
    assert.ok(ae.of("acked").some((e) => e.id === id));
  } finally {
    await a.close();
    await b.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("blob transfers report progress from their actors; a refused blob leaves the outbox", async () => {
  const dir = await Deno.makeTempDir({ prefix: "awp-int-" });
  const hub = new InspectionHub();
  const { a, b, ae, be } = await pair(dir, { maxBlobBytes: 100_000 });
  // a third peer with the hub, to see the actor tree
  const c = await Peer.open({
    home: `${dir}/c`,
    name: "carol",
    ...FAST,
    inspect: hub,
  });
  try {
    const small = `${dir}/small.txt`;
    const big = `${dir}/big.bin`;
    await Deno.writeFile(small, new Uint8Array(70_000).fill(7));
    await Deno.writeFile(big, new Uint8Array(300_000).fill(9));

    const ok = await a.send(b.key, "small", { files: [small] });
    await a.waitAck(ok.id, { timeoutMs: 5000 });
    await ae.until(
      () => ae.of("progress").some((p) => p.status === "done"),
      "out done",
    );
    await be.until(
      () => be.of("progress").some((p) => p.status === "complete"),
      "in complete",
    );
    const done = ae.of("progress").find((p) => p.status === "done")!;
    assert.equal(done.dir, "out");
    assert.equal(done.bytes, 70_000);
    assert.equal(done.total, 70_000);
    const complete = be.of("progress").find((p) => p.status === "complete")!;
    assert.equal(complete.dir, "in");
    assert.equal(complete.bytes, 70_000);

    const refused = await a.send(b.key, "too big", { files: [big] });
    await ae.until(
      () => ae.of("progress").some((p) => p.status === "refused"),
      "out refused",
    );
    const ref = ae.of("progress").find((p) => p.status === "refused")!.ref;
    await a.waitAck(refused.id, { timeoutMs: 5000 });
    // The `blob` event (dir out, refused) comes once the record says so.
    await ae.until(
      () =>
        ae.of("blob").some((e) =>
          e.dir === "out" && e.ref === ref && e.status === "refused"
        ),
      "out blob refused",
    );
    assert.equal(
      (await a.store.outbox(b.key)).filter((e) => e.fields.ref === ref).length,
      0,
    );
    assert.equal((await a.store.blob(b.key, ref, "out"))?.status, "refused");

    // The hub sees carol's supervisor, connection and thread and blob actors.
    const addr = await c.listen(`unix:${dir}/c.sock`);
    await a.connect(addr);
    const sent = await a.send(c.key, "to carol", { files: [small] });
    await a.waitAck(sent.id, { timeoutMs: 5000 });
    const kinds = () => new Set(hub.actors().map((x) => x.kind));
    const start = Date.now();
    while (!["thread", "blob"].every((k) => kinds().has(k))) {
      if (Date.now() - start > 5000) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    for (const k of ["supervisor", "connection", "thread", "blob"]) {
      assert.ok(kinds().has(k), `hub has a ${k} actor: ${[...kinds()]}`);
    }
    const sup = hub.actors().find((x) => x.kind === "supervisor")!;
    const conn = hub.actors().find((x) => x.kind === "connection")!;
    assert.equal(conn.parentId, sup.id);
    const thread = hub.actors().find((x) => x.kind === "thread")!;
    assert.equal(thread.parentId, conn.id);
  } finally {
    await a.close();
    await b.close();
    await c.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("inspection attached at run time shows the existing actors with their parents; nothing is observed before", async () => {
  const dir = await Deno.makeTempDir({ prefix: "awp-int-" });
  const { a, b, be } = await pair(dir);
  try {
    const first = await a.send(b.key, "first", { subject: "first" });
    await a.waitAck(first.id, { timeoutMs: 5000 });
    await be.until(() => be.of("message").length === 1, "the first message");
    assert.equal(a.inspection, undefined, "inspection is off by default");

    const hub = new InspectionHub();
    assert.equal(a.inspect(hub), hub);
    assert.equal(a.inspect(), hub, "asked again: the same hub");
    assert.equal(a.inspection, hub);
    assert.throws(() => a.inspect(new InspectionHub()), /already on/);
    // Thread actors are held as promises: registered once they settle.
    await new Promise((r) => setTimeout(r, 0));

    const actors = hub.actors();
    const sup = actors.find((x) => x.kind === "supervisor");
    assert.ok(sup, `a supervisor: ${actors.map((x) => x.kind)}`);
    const conn = actors.find((x) => x.kind === "connection");
    assert.ok(conn, `a connection: ${actors.map((x) => x.kind)}`);
    assert.equal(conn.parentId, sup.id);
    assert.equal(conn.label, "peer bob");
    assert.ok(conn.active.includes("connection.open"), String(conn.active));
    const dialer = actors.find((x) => x.kind === "dialer");
    assert.ok(dialer, `a dialer: ${actors.map((x) => x.kind)}`);
    assert.equal(dialer.parentId, sup.id);
    const old = actors.find((x) => x.kind === "thread");
    assert.ok(old, `a thread: ${actors.map((x) => x.kind)}`);
    assert.equal(old.parentId, conn.id);
    assert.equal(old.label, "thread first");
    // Created before the attach, without an observer: the hub follows its
    // snapshots only, never its events.
    assert.ok(hub.log(old.id).every((e) => e.type !== "event"));

    // Actors created from now on get the observer: their events are logged.
    const second = await a.send(b.key, "second");
    await a.waitAck(second.id, { timeoutMs: 5000 });
    const fresh = hub.actors().find((x) =>
      x.kind === "thread" && x.id !== old.id
    );
    assert.ok(fresh, "the second thread's actor");
    assert.equal(fresh.parentId, conn.id);
    assert.ok(hub.log(fresh.id).some((e) => e.type === "event"));
    // The old thread still follows: a reply on it shows up as a snapshot.
    const n = hub.log(old.id).length;
    await b.send(a.key, "reply", { thread: first.th });
    const start = Date.now();
    while (hub.log(old.id).length === n && Date.now() - start < 5000) {
      await new Promise((r) => setTimeout(r, 20));
    }
    assert.ok(hub.log(old.id).length > n, "the old thread's new snapshot");
  } finally {
    await a.close();
    await b.close();
    await Deno.remove(dir, { recursive: true });
  }
});
