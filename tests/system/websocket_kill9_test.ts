/**
 * The WebSocket binding across a crash: a peer process listening on ws:
 * (or wss: with a private CA) is killed with kill -9; the dialer's queue is
 * delivered exactly once when it comes back on the same address.
 */
import assert from "node:assert/strict";
import { PeerProcess, quickPeerArgs } from "../helpers/peer_process.ts";
import {
  assertQueueDeliveredOnce,
  exchangeBothWays,
  queueWhileDown,
  type ResumePair,
} from "../helpers/resume_after_kill.ts";
import { hasOpenssl, makeTestCa } from "../helpers/test_ca.ts";

for (const secure of [false, true]) {
  const scheme = secure ? "wss" : "ws";
  Deno.test({
    name:
      `${scheme}: kill -9 the listening peer: the dialer redials, resume delivers the queue once`,
    ignore: secure && !hasOpenssl(),
    async fn() {
      const dir = await Deno.makeTempDir();
      const tls: string[] = [];
      const trust: string[] = [];
      if (secure) {
        const ca = await makeTestCa(dir);
        tls.push("--cert", ca.certFile, "--key", ca.keyFile);
        trust.push("--ca", ca.caFile);
      }
      const host = secure ? "localhost" : "127.0.0.1";
      const listenerArgs = (at: string) =>
        quickPeerArgs(dir, "listener", ["--listen", at, ...tls]);
      let listener = new PeerProcess(listenerArgs(`${scheme}://${host}:0/awp`));
      const dialer = new PeerProcess(quickPeerArgs(dir, "dialer", trust));
      try {
        const lReady = await listener.waitFor(
          (l) => l.event === "ready",
          "ready",
        );
        const dReady = await dialer.waitFor(
          (l) => l.event === "ready",
          "ready",
        );
        const lKey = lReady.key as string;
        const dKey = dReady.key as string;
        const address = String(lReady.addr);
        assert.match(address, new RegExp(`^${scheme}://${host}:\\d+/awp$`));

        const pair: ResumePair = {
          dialer,
          listenerKey: lKey,
          dialerKey: dKey,
        };
        await exchangeBothWays(pair, listener, address);

        const mark = dialer.lines.length;
        listener.kill9();
        await listener.reap();
        await dialer.waitFor(
          (l) => l.event === "disconnected" && l.peer === lKey,
          "dialer sees the connection drop",
          20_000,
          mark,
        );
        await queueWhileDown(pair, mark);

        // Back with the same home on the same address.
        listener = new PeerProcess(listenerArgs(address));
        const again = await listener.waitFor(
          (l) => l.event === "ready",
          "ready 2",
        );
        assert.equal(again.key, lKey);
        assert.equal(again.addr, address);
        await assertQueueDeliveredOnce(pair, listener, mark);
      } finally {
        await Promise.all([listener.finish(), dialer.finish()]);
        await Deno.remove(dir, { recursive: true });
      }
    },
  });
}
