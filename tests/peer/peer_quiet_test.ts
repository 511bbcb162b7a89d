import assert from "node:assert/strict";
import { Peer, type PeerOptions } from "../../peer/peer.ts";
import { EventLog } from "../helpers/event_log.ts";
import { withTempDir } from "../helpers/temp_dir.ts";

// Tight backoff: without a hold, a wanted peer is redialed within ~60 ms.
const FAST: Partial<PeerOptions> = {
  timeouts: { pingInterval: 0, bye: 1000 },
  dialer: { timing: { baseMs: 30, capMs: 60, graceMs: 30 }, random: () => 0.5 },
};

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

Deno.test("bye's hold outlasts a restart and is lifted by the next send", async () => {
  await withTempDir(async (home) => {
    const a = await Peer.open({ memory: true, name: "alice", ...FAST });
    const aLog = new EventLog(a);
    let b = await Peer.open({ home, name: "bob", ...FAST });
    try {
      await b.connect(await a.listen("tcp:127.0.0.1:0"));
      // An open thread keeps a dialed peer wanted across restarts.
      const first = await b.send(a.key, "hi", { subject: "open thread" });
      await b.waitAck(first.id, { timeoutMs: 5000 });
      await b.bye(a.key, "done for now");
      assert.equal(await b.store.getMeta(`quiet:${a.key}`), true);
      await b.close();

      // Reopened from the same home: still held, no dial.
      b = await Peer.open({ home, name: "bob", ...FAST });
      let bLog = new EventLog(b);
      await sleep(600);
      assert.equal(bLog.of("connected").length, 0, "b redialed after restart");
      assert.equal(aLog.of("connected").length, 1);

      // Something new lifts the hold, durably.
      const again = await b.send(a.key, "one more", { thread: first.th });
      await b.waitAck(again.id, { timeoutMs: 5000 });
      assert.equal(await b.store.getMeta(`quiet:${a.key}`), undefined);
      await bLog.until(() => bLog.of("connected").length === 1, "b dialed");
      await b.close();

      // Our own close (a's answer to our bye) holds nothing: a restart redials.
      b = await Peer.open({ home, name: "bob", ...FAST });
      bLog = new EventLog(b);
      await bLog.until(
        () => bLog.of("connected").length === 1,
        "b redialed on open",
      );
    } finally {
      await b.close();
      await a.close();
    }
  }, { prefix: "awp-quiet-" });
});

Deno.test("a peer that says bye to us is redialed while a thread with it is open", async () => {
  // Its bye is a graceful shutdown (a daemon stopping, a sandbox going to
  // sleep), not a request to forget it: the awake side keeps the thread
  // alive (SPEC 4.3). Only our own bye holds the redial.
  await withTempDir(async (home) => {
    const a = await Peer.open({ memory: true, name: "alice", ...FAST });
    const b = await Peer.open({ home, name: "bob", ...FAST });
    const bLog = new EventLog(b);
    try {
      await b.connect(await a.listen("tcp:127.0.0.1:0"));
      const first = await b.send(a.key, "hi", { subject: "open thread" });
      await b.waitAck(first.id, { timeoutMs: 5000 });

      await a.bye(b.key, "restarting");
      await bLog.until(() => bLog.of("bye").length === 1, "b heard bye");
      assert.equal(bLog.of("bye")[0].reason, "restarting");
      await bLog.until(
        () => bLog.of("connected").length === 2,
        "b redialed a: the thread is still open",
      );
      const again = await b.send(a.key, "still there?", { thread: first.th });
      await b.waitAck(again.id, { timeoutMs: 5000 });
    } finally {
      await b.close();
      await a.close();
    }
  }, { prefix: "awp-quiet-" });
});
