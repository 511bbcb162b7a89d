/**
 * A thread's record has one writer, the store: received lines update it in
 * their commit, our side through PeerThreads. The thread actor holds the
 * same record for its chart and the inspector, and emits nothing.
 */
import assert from "node:assert/strict";
import { Peer, type PeerOptions } from "../../peer/peer.ts";
import { InspectionHub } from "../../inspector/inspection_hub.ts";
import type { ThreadRecord } from "../../storage/store.ts";
import { EventLog } from "../helpers/event_log.ts";
import { PeerThreads } from "../../peer/peer_threads.ts";
import { MemoryStore } from "../../storage/memory_store.ts";

const FAST: Partial<PeerOptions> = {
  timeouts: { pingInterval: 0, bye: 1000 },
  dialer: { timing: { baseMs: 50, capMs: 200 }, random: () => 0.5 },
};

/** The fields both writers' rules decide (not `updated`: local times). */
function sides(r: ThreadRecord | undefined) {
  return r && {
    subject: r.subject,
    unread: r.unread,
    mine: r.mine?.state,
    theirs: r.theirs?.state,
  };
}

Deno.test("the stored thread record and the thread actor agree; the actor emits nothing", async () => {
  const dir = await Deno.makeTempDir({ prefix: "awp-threads-" });
  const hub = new InspectionHub();
  const a = await Peer.open({ home: `${dir}/a`, ...FAST });
  const b = await Peer.open({ home: `${dir}/b`, ...FAST, inspect: hub });
  const be = new EventLog(b);
  try {
    await a.connect(await b.listen(`unix:${dir}/b.sock`));
    const { th } = await a.send(b.key, "one", { subject: "Build" });
    await a.send(b.key, "two", { thread: th, subject: "ignored" });
    const st = await a.setState(b.key, th, "working", "compiling");
    await a.waitAck(st.id, { timeoutMs: 5000 });
    await be.until(() => be.of("state").length === 1, "their state");
    await b.setState(a.key, th, "waiting");
    await b.send(a.key, "ok", { thread: th });

    let stored = sides(await b.store.thread(a.key, th));
    assert.deepEqual(stored, {
      subject: "Build",
      unread: 2,
      mine: "waiting",
      theirs: "working",
    });
    const actor = hub.actors().find((x) => x.kind === "thread");
    assert.ok(actor, "b has a thread actor");
    const shown = () => {
      const snaps = hub.log(actor.id).filter((e) => e.type === "snapshot");
      const last = snaps.at(-1) as { context?: { record?: ThreadRecord } };
      return sides(last?.context?.record);
    };
    assert.deepEqual(shown(), stored);

    await b.markRead(a.key, th);
    stored = sides(await b.store.thread(a.key, th));
    assert.equal(stored?.unread, 0);
    assert.deepEqual(shown(), stored);
    assert.deepEqual(
      hub.log(actor.id).filter((e) => e.type === "emitted"),
      [],
      "the thread actor emits nothing",
    );
  } finally {
    await a.close();
    await b.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a burst of sends in one thread writes its record once, not once a send", async () => {
  let patches = 0;
  class CountingStore extends MemoryStore {
    override patchThread(
      ...args: Parameters<MemoryStore["patchThread"]>
    ): ReturnType<MemoryStore["patchThread"]> {
      patches++;
      return super.patchThread(...args);
    }
  }
  const store = new CountingStore();
  const threads = new PeerThreads({
    store,
    parentId: () => "",
    emit: () => {},
    closing: () => false,
    onLine: () => Promise.resolve(),
    resolveBlob: () => Promise.reject(new Error("no blobs here")),
    replayBlob: () => Promise.reject(new Error("no blobs here")),
    requests: () => Promise.resolve([]),
  });
  try {
    const peer = "ed25519:BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB";
    // As the sender asks: every send of the burst before the first write
    // resolved. The first (with its subject) writes; the touches that follow
    // within a second do not.
    await Promise.all([
      threads.writeOurSide(peer, "t1", { subject: "Hi" }),
      ...Array.from({ length: 50 }, () => threads.writeOurSide(peer, "t1", {})),
    ]);
    assert.equal(patches, 1);
    assert.equal((await store.thread(peer, "t1"))?.subject, "Hi");
    // Our state always writes.
    await threads.writeOurSide(peer, "t1", {
      mine: { state: "working", ts: "2026-01-01T00:00:00.000Z" },
    });
    assert.equal(patches, 2);
  } finally {
    store.close();
  }
});
