/**
 * A listener that restarts with lines queued for a peer that once dialed
 * it and gave its address (hello.addr) dials that peer back at once,
 * instead of waiting for the peer to dial again.
 */

import assert from "node:assert/strict";
import { Peer } from "../../peer/peer.ts";

Deno.test("a restarted listener dials back a peer it owes lines, by its hello.addr", async () => {
  const dir = await Deno.makeTempDir();
  const lAddr = `unix:${dir}/l.sock`;
  const dAddr = `unix:${dir}/d.sock`;
  let listener = await Peer.open({ home: `${dir}/l`, name: "listener" });
  let dialer = await Peer.open({ home: `${dir}/d`, name: "dialer" });
  try {
    await listener.listen(lAddr);
    await dialer.listen(dAddr); // its hello.addr
    await dialer.connect(lAddr);
    const dKey = dialer.key;
    // The dialer goes away; the listener queues a line for it, then stops.
    await dialer.close();
    const { id } = await listener.send(dKey, "while you were away");
    await listener.close();
    // The dialer is back, listening only: it owes the listener nothing.
    dialer = await Peer.open({ home: `${dir}/d`, name: "dialer" });
    await dialer.listen(dAddr);
    const got = (async () => {
      for await (const e of dialer.events()) {
        if (e.type === "message") return e.text;
      }
    })();
    const restarted = performance.now();
    listener = await Peer.open({ home: `${dir}/l`, name: "listener" });
    await listener.listen(lAddr);
    let timer: ReturnType<typeof setTimeout> | undefined;
    const text = await Promise.race([
      got,
      new Promise<string>((r) =>
        timer = setTimeout(() => r("(nothing)"), 10_000)
      ),
    ]);
    clearTimeout(timer);
    assert.equal(text, "while you were away");
    await listener.waitAck(id, { timeoutMs: 5_000 });
    assert.ok(performance.now() - restarted < 5_000);
  } finally {
    await listener.close();
    await dialer.close();
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
});
