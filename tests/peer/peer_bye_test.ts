import assert from "node:assert/strict";
import { Peer, type PeerOptions } from "../../peer/peer.ts";
import { EventLog } from "../helpers/event_log.ts";

const FAST: Partial<PeerOptions> = {
  timeouts: { pingInterval: 0, bye: 1000 },
  dialer: { timing: { baseMs: 30, capMs: 60, graceMs: 30 }, random: () => 0.5 },
};

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

Deno.test("after bye the peer is not redialed until something new is sent to it", async () => {
  const a = await Peer.open({ memory: true, name: "alice", ...FAST });
  const b = await Peer.open({ memory: true, name: "bob", ...FAST });
  const aLog = new EventLog(a);
  const bLog = new EventLog(b);
  try {
    await b.connect(await a.listen("tcp:127.0.0.1:0"));
    // An open thread keeps a dialed peer wanted: without bye's hold, b redials.
    const first = await b.send(a.key, "hi", { subject: "open thread" });
    await b.waitAck(first.id, { timeoutMs: 5000 });
    await bLog.until(() => bLog.of("connected").length === 1, "b connected");

    await b.bye(a.key, "done for now");
    await bLog.until(
      () => bLog.of("disconnected").length === 1,
      "b disconnected",
    );
    await aLog.until(() => aLog.of("bye").length === 1, "a heard bye");
    assert.equal(aLog.of("bye")[0].reason, "done for now");

    // Dozens of backoff periods (30-60 ms) pass without a dial.
    await sleep(600);
    assert.equal(bLog.of("connected").length, 1, "b redialed after bye");
    assert.equal(aLog.of("connected").length, 1);
    assert.deepEqual((await b.peers()).map((p) => p.connected), [false]);

    // Something new: b dials again and it arrives.
    const again = await b.send(a.key, "one more thing", { thread: first.th });
    await b.waitAck(again.id, { timeoutMs: 5000 });
    await bLog.until(() => bLog.of("connected").length === 2, "b redialed");
    await aLog.until(
      () => aLog.messages().some((m) => m.text === "one more thing"),
      "the new msg at a",
    );
  } finally {
    await b.close();
    await a.close();
  }
});

Deno.test("bye to a peer that is away stops its redialing; setState wakes it", async () => {
  const a = await Peer.open({ memory: true, name: "alice", ...FAST });
  const b = await Peer.open({ memory: true, name: "bob", ...FAST });
  const bLog = new EventLog(b);
  try {
    const addr = await a.listen("tcp:127.0.0.1:0");
    await b.connect(addr);
    const { th, id } = await b.send(a.key, "hi");
    await b.waitAck(id, { timeoutMs: 5000 });
    // a goes away abruptly (no bye): b keeps dialing its address...
    await a.close();
    await bLog.until(
      () => bLog.of("disconnected").length === 1,
      "b disconnected",
    );
    // ...until b says bye to it while it is away.
    await b.bye("alice");
    const failures = () => bLog.of("error").filter((e) => e.code === "dial");
    await sleep(200);
    const settled = failures().length;
    await sleep(400);
    assert.equal(failures().length, settled, "b kept dialing after bye");

    // A state line is something new: b tries the address again.
    await b.setState(a.key, th, "working");
    await bLog.until(
      () => failures().length > settled,
      "b dialed again after setState",
    );
  } finally {
    await b.close();
  }
});
