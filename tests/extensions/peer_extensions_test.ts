import assert from "node:assert/strict";
import type { PeerOptions } from "../../peer/peer.ts";
import { closeNodes, openNode, type PeerNode } from "../helpers/peer_node.ts";

type Node = PeerNode;

/** Presence settles fast; its heartbeat stays out of the way. */
function open(name: string, extra: Partial<PeerOptions> = {}): Promise<Node> {
  return openNode(name, {
    presenceTiming: { settleMs: 50, heartbeatMs: 60_000 },
    ...extra,
  });
}

async function until<T>(
  find: () => T | undefined | false | Promise<T | undefined | false>,
  what: string,
  ms = 15_000,
): Promise<T> {
  const start = Date.now();
  for (;;) {
    const found = await find();
    if (found) return found;
    if (Date.now() - start > ms) {
      throw new Error(`timed out waiting for ${what}`);
    }
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Presence lines `node` received, from its traffic log. */
async function presenceIn(node: Node): Promise<number> {
  return (await node.peer.log()).filter((e) =>
    e.dir === "in" && e.t === "presence"
  ).length;
}

Deno.test("presence from the first of four peers reaches the last through two relays; a peer without the presence cap gets none", async () => {
  const p1 = await open("first", { presence: true });
  const p2 = await open("second");
  const p3 = await open("third");
  const p4 = await open("fourth");
  const mute = await open("mute", { caps: ["chat", "blob"] });
  try {
    const a1 = await p1.peer.listen("tcp:127.0.0.1:0");
    const a2 = await p2.peer.listen("tcp:127.0.0.1:0");
    const a3 = await p3.peer.listen("tcp:127.0.0.1:0");
    await p2.peer.connect(a1);
    await p3.peer.connect(a2);
    await p4.peer.connect(a3);
    await mute.peer.connect(a2);
    const subject = "s".repeat(200);
    const sent = await p1.peer.send(p2.peer.key, "a secret body", { subject });
    await p1.peer.waitAck(sent.id);

    // Published ~50 ms after each change: wait for the one with the thread.
    const at4 = await until(
      () =>
        p4.peer.presence().find((r) =>
          r.origin === p1.peer.key &&
          r.doc.threads?.some((t) => t.th === sent.th)
        ),
      "p1's document with the thread at p4",
    );
    assert.equal(at4.hops, 2);
    assert.equal(at4.via, p3.peer.key);
    assert.equal(at4.doc.name, "first");
    const thread = at4.doc.threads?.find((t) => t.th === sent.th);
    assert.equal(thread?.subject?.length, 120);
    const text = JSON.stringify(at4.doc);
    assert.ok(!text.includes("a secret body"), "no message contents");
    assert.ok(!text.includes("127.0.0.1"), "no addresses");
    assert.ok(
      p4.events.of("presence").some((e) =>
        e.kind === "joined" && e.peer === p1.peer.key
      ),
    );
    // Relays do not publish their own documents (presence is opt-in).
    assert.equal(
      p4.peer.presence().some((r) => r.origin === p3.peer.key),
      false,
    );

    // A newer document replaces the held one along the chain.
    const again = await p1.peer.publishPresence();
    await until(
      () => p4.peer.presence()[0]?.seq === again.doc.seq,
      "the newer document at p4",
    );
    assert.ok(again.doc.seq > at4.seq);

    assert.equal(await presenceIn(mute), 0);
    assert.equal(mute.peer.presence().length, 0);
    assert.ok(await presenceIn(p4) >= 2);
  } finally {
    await closeNodes(p1, p2, p3, p4, mute);
  }
});

Deno.test("with relaying off a peer keeps documents but does not forward them", async () => {
  const p1 = await open("first", { presence: true });
  const p2 = await open("second", { relayPresence: false });
  const p3 = await open("third");
  try {
    await p2.peer.connect(await p1.peer.listen("tcp:127.0.0.1:0"));
    await p3.peer.connect(await p2.peer.listen("tcp:127.0.0.1:0"));
    const { doc } = await p1.peer.publishPresence();
    await until(
      () => p2.peer.presence().find((r) => r.seq === doc.seq),
      "the document at p2",
    );
    // p3 is one hop further; give the line time it would need.
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(p3.peer.presence().length, 0);
    assert.equal(await presenceIn(p3), 0);
  } finally {
    await closeNodes(p1, p2, p3);
  }
});

Deno.test("sharing mirrors a thread to a host across its restart; private from the other party withdraws it from the host", async () => {
  const dir = await Deno.makeTempDir();
  const hostAddr = `unix:${dir}/host.sock`;
  const sharer = await open("sharer");
  const other = await open("other");
  let host = await open("host", { memory: false, home: `${dir}/host` });
  try {
    await other.peer.connect(await sharer.peer.listen("tcp:127.0.0.1:0"));
    await host.peer.listen(hostAddr);
    const hostKey = host.peer.key;
    await sharer.peer.connect(hostAddr);
    assert.deepEqual(await sharer.peer.share([hostKey]), [hostKey]);
    assert.deepEqual(sharer.peer.sharing, [hostKey]);

    // The host goes away; the conversation goes on.
    await host.peer.close();
    await host.events.done;
    const first = await sharer.peer.send(other.peer.key, "plan?", {
      subject: "The plan",
    });
    await sharer.peer.waitAck(first.id);
    await until(
      () => other.events.of("message").find((m) => m.id === first.id),
      "the msg at other",
    );
    const answer = await other.peer.send(sharer.peer.key, "this", {
      thread: first.th,
      re: first.id,
    });
    await other.peer.waitAck(answer.id);
    await other.peer.setState(sharer.peer.key, first.th, "working");

    // Back at the same address: the queued mirror lines arrive.
    host = await open("host", { memory: false, home: `${dir}/host` });
    await host.peer.listen(hostAddr);
    const [mirrored] = await until(
      async () => {
        const t = await host.peer.mirrored();
        return t.length === 1 && t[0].count === 3 && t;
      },
      "three mirrored lines at the host",
    );
    assert.equal(mirrored.sharer, sharer.peer.key);
    assert.equal(mirrored.of, other.peer.key);
    assert.equal(mirrored.of_name, "other");
    assert.equal(mirrored.subject, "The plan");
    const lines = await host.peer.mirroredLines(first.th);
    assert.deepEqual(
      lines.map((l) => [l.dir, l.id, l.t]),
      [
        ["out", first.id, "msg"],
        ["in", answer.id, "msg"],
        ["in", lines[2].id, "state"],
      ],
    );
    // Kept apart from the host's own threads.
    assert.equal((await host.peer.threads()).length, 0);

    // The other party asks for privacy: the sharer withdraws the thread.
    await other.peer.private(sharer.peer.key, first.th);
    await until(
      async () => (await host.peer.mirrored()).length === 0,
      "the withdraw at the host",
    );
    assert.equal((await host.peer.mirroredLines(first.th)).length, 0);
    assert.ok(
      host.events.of("mirror").some((e) =>
        e.outcome === "withdrawn" && e.th === first.th
      ),
    );
    // Later lines of that thread are not mirrored.
    const later = await sharer.peer.send(other.peer.key, "still here", {
      thread: first.th,
    });
    await sharer.peer.waitAck(later.id);
    const other2 = await sharer.peer.send(other.peer.key, "new topic");
    await until(
      async () => (await host.peer.mirrored()).length === 1,
      "the other thread mirrored",
    );
    assert.equal((await host.peer.mirrored())[0].th, other2.th);
    assert.equal((await host.peer.mirroredLines(first.th)).length, 0);
  } finally {
    await closeNodes(sharer, other, host);
    await Deno.remove(dir, { recursive: true });
  }
});
