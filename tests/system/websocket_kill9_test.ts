/**
 * The WebSocket binding across a crash: a peer process listening on ws:
 * (or wss: with a private CA) is killed with kill -9; the dialer's queue is
 * delivered exactly once when it comes back on the same address.
 */
import assert from "node:assert/strict";
import { JsonLineChild } from "../helpers/json_line_child.ts";
import { hasOpenssl, makeTestCa } from "../helpers/test_ca.ts";

const FIXTURE = new URL("../fixtures/peer.ts", import.meta.url).pathname;
const CONFIG = new URL("../../deno.json", import.meta.url).pathname;

class PeerProcess extends JsonLineChild {
  constructor(args: string[]) {
    super(["run", "-A", "--config", CONFIG, FIXTURE, ...args]);
  }
}

for (const secure of [false, true]) {
  const scheme = secure ? "wss" : "ws";
  Deno.test({
    name:
      `${scheme}: kill -9 the listening peer: the dialer redials, resume delivers the queue once`,
    ignore: secure && !hasOpenssl(),
    async fn() {
      const dir = await Deno.makeTempDir();
      const common = ["--ping", "300", "--backoff", "100", "--cap", "400"];
      const tls: string[] = [];
      const trust: string[] = [];
      if (secure) {
        const ca = await makeTestCa(dir);
        tls.push("--cert", ca.certFile, "--key", ca.keyFile);
        trust.push("--ca", ca.caFile);
      }
      const host = secure ? "localhost" : "127.0.0.1";
      const listenerArgs = (at: string) => [
        "--home",
        `${dir}/listener`,
        "--listen",
        at,
        "--name",
        "listener",
        ...common,
        ...tls,
      ];
      let listener = new PeerProcess(listenerArgs(`${scheme}://${host}:0/awp`));
      const dialer = new PeerProcess([
        "--home",
        `${dir}/dialer`,
        "--name",
        "dialer",
        ...common,
        ...trust,
      ]);
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

        await dialer.command({ reach: { peer: lKey, address } });
        await dialer.command({ send: { peer: lKey, th: "t1", text: "one" } });
        await listener.waitFor(
          (l) => l.event === "delivered" && l.text === "one" && l.peer === dKey,
          "listener got one",
        );
        await listener.command({
          send: { peer: dKey, th: "t1", text: "reply" },
        });
        await dialer.waitFor(
          (l) => l.event === "delivered" && l.text === "reply",
          "dialer got reply",
        );

        const mark = dialer.lines.length;
        listener.kill9();
        await listener.reap();
        await dialer.waitFor(
          (l) => l.event === "disconnected" && l.peer === lKey,
          "dialer sees the connection drop",
          20_000,
          mark,
        );
        await dialer.command({ send: { peer: lKey, th: "t1", text: "two" } });
        await dialer.command({ send: { peer: lKey, th: "t2", text: "three" } });
        await dialer.waitFor(
          (l) => l.event === "dial_failed" && l.peer === lKey,
          "a failed redial while it is down",
          20_000,
          mark,
        );

        // Back with the same home on the same address.
        listener = new PeerProcess(listenerArgs(address));
        const again = await listener.waitFor(
          (l) => l.event === "ready",
          "ready 2",
        );
        assert.equal(again.key, lKey);
        assert.equal(again.addr, address);
        const two = await listener.waitFor(
          (l) => l.event === "delivered" && l.text === "two",
          "queued two delivered on resume",
        );
        const three = await listener.waitFor(
          (l) => l.event === "delivered" && l.text === "three",
          "queued three delivered on resume",
        );
        assert.equal(two.th, "t1");
        assert.equal(three.th, "t2");
        assert.equal(
          listener.lines.filter((l) =>
            l.event === "delivered" && l.text === "one"
          )
            .length,
          0,
          "one was committed before the kill: not delivered again",
        );
        await dialer.waitFor(
          (l) => l.event === "connected" && l.peer === lKey,
          "dialer reconnected",
          20_000,
          mark,
        );
      } finally {
        await Promise.all([listener.finish(), dialer.finish()]);
        await Deno.remove(dir, { recursive: true });
      }
    },
  });
}
