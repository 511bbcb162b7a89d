import assert from "node:assert/strict";
import { PeerProcess, quickPeerArgs } from "../helpers/peer_process.ts";
import {
  assertQueueDeliveredOnce,
  exchangeBothWays,
  queueWhileDown,
  type ResumePair,
} from "../helpers/resume_after_kill.ts";

Deno.test("kill -9 one peer: the other detects it, redials with backoff, resume delivers the queue", async () => {
  const dir = await Deno.makeTempDir();
  const address = `unix:${dir}/listener.sock`;
  const listenerArgs = quickPeerArgs(dir, "listener", ["--listen", address]);
  let listener = new PeerProcess(listenerArgs);
  const dialer = new PeerProcess(quickPeerArgs(dir, "dialer"));
  let second: PeerProcess | undefined;
  try {
    const lReady = await listener.waitFor((l) => l.event === "ready", "ready");
    const dReady = await dialer.waitFor((l) => l.event === "ready", "ready");
    const lKey = lReady.key as string;
    const dKey = dReady.key as string;
    assert.equal(lReady.addr, address);

    const pair: ResumePair = { dialer, listenerKey: lKey, dialerKey: dKey };

    // Connect and exchange both ways.
    await exchangeBothWays(pair, listener, address);

    // Freeze the listener first (a sleeping sandbox: the socket stays open,
    // nothing answers): only the ping timeout can tell. Then kill -9 it.
    const mark = dialer.lines.length;
    listener.child.kill("SIGSTOP");
    const lost = await dialer.waitFor(
      (l) => l.event === "disconnected" && l.peer === lKey,
      "dialer detects the loss by missed pongs",
      20_000,
      mark,
    );
    assert.match(String(lost.reason), /pong/);
    listener.kill9();
    await listener.reap();
    await queueWhileDown(pair, mark);

    // It comes back with the same home (same key, same store).
    second = new PeerProcess(listenerArgs);
    listener = second;
    const again = await second.waitFor((l) => l.event === "ready", "ready 2");
    assert.equal(again.key, lKey, "same identity after restart");
    await assertQueueDeliveredOnce(pair, second, mark);
    const failures = dialer.lines.slice(mark).filter((l) =>
      l.event === "dial_failed"
    );
    assert.ok(failures.length >= 1);
  } finally {
    await Promise.all([listener.finish(), dialer.finish()]);
    await Deno.remove(dir, { recursive: true });
  }
});
