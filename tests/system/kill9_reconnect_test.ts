import assert from "node:assert/strict";
import { JsonLineChild } from "../helpers/json_line_child.ts";

const FIXTURE = new URL("../fixtures/peer.ts", import.meta.url).pathname;
const CONFIG = new URL("../../deno.json", import.meta.url).pathname;

/** One `fixtures/peer.ts` process: JSON lines out, commands in. */
class PeerProcess extends JsonLineChild {
  constructor(args: string[]) {
    super(["run", "-A", "--config", CONFIG, FIXTURE, ...args]);
  }
}

Deno.test("kill -9 one peer: the other detects it, redials with backoff, resume delivers the queue", async () => {
  const dir = await Deno.makeTempDir();
  const address = `unix:${dir}/listener.sock`;
  const common = ["--ping", "300", "--backoff", "100", "--cap", "400"];
  const listenerArgs = [
    "--home",
    `${dir}/listener`,
    "--listen",
    address,
    "--name",
    "listener",
    ...common,
  ];
  let listener = new PeerProcess(listenerArgs);
  const dialer = new PeerProcess([
    "--home",
    `${dir}/dialer`,
    "--name",
    "dialer",
    ...common,
  ]);
  let second: PeerProcess | undefined;
  try {
    const lReady = await listener.waitFor((l) => l.event === "ready", "ready");
    const dReady = await dialer.waitFor((l) => l.event === "ready", "ready");
    const lKey = lReady.key as string;
    const dKey = dReady.key as string;
    assert.equal(lReady.addr, address);

    // Connect and exchange both ways.
    await dialer.command({ reach: { peer: lKey, address } });
    await dialer.command({ send: { peer: lKey, th: "t1", text: "one" } });
    await listener.waitFor(
      (l) => l.event === "delivered" && l.text === "one" && l.peer === dKey,
      "listener got one",
    );
    await listener.command({ send: { peer: dKey, th: "t1", text: "reply" } });
    await dialer.waitFor(
      (l) => l.event === "delivered" && l.text === "reply",
      "dialer got reply",
    );

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
    await dialer.command({ send: { peer: lKey, th: "t1", text: "two" } });
    await dialer.command({ send: { peer: lKey, th: "t2", text: "three" } });
    await dialer.waitFor(
      (l) => l.event === "dial_failed" && l.peer === lKey,
      "a failed redial while it is down",
      20_000,
      mark,
    );

    // It comes back with the same home (same key, same store).
    second = new PeerProcess(listenerArgs);
    listener = second;
    const again = await second.waitFor((l) => l.event === "ready", "ready 2");
    assert.equal(again.key, lKey, "same identity after restart");
    const two = await second.waitFor(
      (l) => l.event === "delivered" && l.text === "two",
      "queued two delivered on resume",
    );
    const three = await second.waitFor(
      (l) => l.event === "delivered" && l.text === "three",
      "queued three delivered on resume",
    );
    assert.equal(two.th, "t1");
    assert.equal(three.th, "t2");
    // Nothing delivered twice: "one" was committed before the kill.
    const deliveredOne = second.lines.filter((l) =>
      l.event === "delivered" && l.text === "one"
    );
    assert.equal(deliveredOne.length, 0);
    const failures = dialer.lines.slice(mark).filter((l) =>
      l.event === "dial_failed"
    );
    assert.ok(failures.length >= 1);
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
});
