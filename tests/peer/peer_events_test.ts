import assert from "node:assert/strict";
import { Peer } from "../../peer/peer.ts";
import { EventLog } from "../helpers/event_log.ts";
import { FAST_PEER } from "../helpers/peer_pair.ts";

Deno.test("connected events carry the remote's name, about and caps", async () => {
  const a = await Peer.open({
    memory: true,
    name: "alice",
    about: "reviews diffs",
    caps: ["chat", "blob"],
    ...FAST_PEER,
  });
  const b = await Peer.open({ memory: true, name: "bob", ...FAST_PEER });
  const aLog = new EventLog(a);
  const bLog = new EventLog(b);
  try {
    await b.connect(await a.listen("tcp:127.0.0.1:0"));
    await bLog.until(() => bLog.of("connected").length === 1, "b connected");
    await aLog.until(() => aLog.of("connected").length === 1, "a connected");
    const atB = bLog.of("connected")[0];
    assert.equal(atB.peer, a.key);
    assert.equal(atB.name, "alice");
    assert.equal(atB.about, "reviews diffs");
    assert.deepEqual(atB.caps, ["chat", "blob"]);
    assert.equal(atB.dialed, true);
    const atA = aLog.of("connected")[0];
    assert.equal(atA.name, "bob");
    assert.equal(atA.about, undefined);
    assert.ok(atA.caps.includes("grant") && atA.caps.includes("introduce"));
    assert.equal(atA.dialed, false);
  } finally {
    await b.close();
    await a.close();
  }
});

Deno.test("line events: every line after the handshake, in and out, chunks without data; off by default", async () => {
  const home = await Deno.makeTempDir({ prefix: "awp-line-events-" });
  const a = await Peer.open({
    memory: true,
    name: "alice",
    chunkSize: 4,
    ...FAST_PEER,
  });
  const b = await Peer.open({
    memory: true,
    name: "bob",
    lineEvents: true,
    ...FAST_PEER,
  });
  const c = await Peer.open({ memory: true, name: "carol", ...FAST_PEER });
  const aLog = new EventLog(a);
  const bLog = new EventLog(b);
  try {
    const file = `${home}/note.txt`;
    await Deno.writeTextFile(file, "0123456789");
    const addr = await b.listen("tcp:127.0.0.1:0");
    await c.connect(await a.listen("tcp:127.0.0.1:0"));
    await a.connect(addr);
    const sent = await a.send(b.key, "see attached", { files: [file] });
    await a.waitAck(sent.id, { timeoutMs: 5000 });
    const grant = await a.grant(b.key, ["exec"]);
    const intro = await a.introduce(b.key, c.key);
    await bLog.until(() => bLog.of("introduced").length === 1, "introduced");
    await bLog.until(
      () => bLog.of("grant").length === 1 && bLog.messages().length === 1,
      "grant and msg",
    );

    const lines = bLog.of("line");
    const ins = lines.filter((e) => e.dir === "in");
    const outs = lines.filter((e) => e.dir === "out");
    assert.ok(lines.every((e) => e.peer === a.key));
    assert.ok(
      !lines.some((e) => ["hello", "auth", "resume"].includes(e.message.t)),
      "handshake lines are not line events",
    );

    // The msg exactly as sent: same id and ts as the message event.
    const msgLine = ins.find((e) => e.message.t === "msg")!;
    const msgEvent = bLog.messages()[0];
    assert.equal(msgLine.message.id, sent.id);
    assert.deepEqual(msgLine.message, { ...msgEvent.message });

    // Three 4-byte chunks, before the msg, without their data.
    const chunks = ins.filter((e) => e.message.t === "chunk");
    assert.equal(chunks.length, 3);
    for (const ch of chunks) {
      assert.equal("data" in ch.message, false);
      assert.equal(typeof ch.message.ref, "string");
      assert.equal(typeof ch.message.id, "string");
    }
    assert.ok(ins.indexOf(chunks[2]) < ins.indexOf(msgLine));

    // Grant and introduce lines with their own id and ts.
    const grantLine = ins.find((e) => e.message.t === "grant")!;
    assert.deepEqual(grantLine.message.grant, grant);
    assert.match(String(grantLine.message.ts), /^\d{4}-\d\d-\d\dT/);
    const introLine = ins.find((e) => e.message.t === "introduce")!;
    assert.equal(introLine.message.id, intro.id);
    assert.equal(
      (introLine.message.peer as { key: string }).key,
      c.key,
    );

    // What b wrote: the ack of the msg.
    const ack = outs.find((e) =>
      e.message.t === "ack" && e.message.re === sent.id
    );
    assert.ok(ack, "the ack is an out line");

    // a did not ask for line events.
    assert.equal(aLog.of("line").length, 0);
  } finally {
    await a.close();
    await b.close();
    await c.close();
    await Deno.remove(home, { recursive: true });
  }
});

Deno.test("line events: a filter picks the lines by direction and type", async () => {
  const a = await Peer.open({ memory: true, name: "alice", ...FAST_PEER });
  const b = await Peer.open({
    memory: true,
    name: "bob",
    lineEvents: (dir, t) => dir === "in" && t !== "msg",
    ...FAST_PEER,
  });
  const bLog = new EventLog(b);
  try {
    await a.connect(await b.listen("tcp:127.0.0.1:0"));
    const sent = await a.send(b.key, "hi");
    await a.waitAck(sent.id, { timeoutMs: 5000 });
    await a.grant(b.key, ["exec"]);
    await bLog.until(() => bLog.of("grant").length === 1, "grant");
    await bLog.until(
      () => bLog.of("line").some((e) => e.message.t === "grant"),
      "the grant's line event",
    );
    const lines = bLog.of("line");
    assert.ok(lines.every((e) => e.dir === "in" && e.message.t !== "msg"));
    assert.equal(bLog.messages().length, 1, "the msg has its own event");
  } finally {
    await a.close();
    await b.close();
    await bLog.done;
  }
});
