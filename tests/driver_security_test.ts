// The stdin/stdout driver as a real process under attack (issue 25): whom
// its commands go to, and what survives kill -9 between ack and event.

import assert from "node:assert/strict";
import { Peer } from "../actors/peer.ts";
import { EventLog } from "./helpers/event_log.ts";
import { type JsonLine, JsonLineChild } from "./helpers/json_line_child.ts";

const MOD = new URL("../mod.ts", import.meta.url).pathname;

function driver(state: string, ...rest: string[]): JsonLineChild {
  return new JsonLineChild([
    "run",
    "-A",
    "--unstable-kv",
    MOD,
    "driver",
    "--state",
    state,
    "--ping-interval",
    "0",
    ...rest,
  ]);
}

async function quit(d: JsonLineChild): Promise<void> {
  await d.command({ cmd: "quit" }).catch(() => {});
  const timer = setTimeout(() => d.kill9(), 10_000);
  await d.reap();
  clearTimeout(timer);
}

const listening = (l: JsonLine) => l.event === "listening";

Deno.test("driver: a command goes to its thread's peer, never to whoever connected last", async () => {
  const state = await Deno.makeTempDir({ prefix: "awp-drv-sec-" });
  const d = driver(state, "listen", "tcp:127.0.0.1:0");
  const b = await Peer.open({ memory: true, name: "b" });
  const stranger = await Peer.open({ memory: true, name: "stranger" });
  const bEvents = new EventLog(b, 20_000);
  const sEvents = new EventLog(stranger, 20_000);
  try {
    const addr = String((await d.waitFor(listening, "listening")).addr);
    await b.connect(addr);
    const key = String((await d.waitFor(listening, "listening")).key);
    const { th } = await b.send(key, "hello from b");
    await d.waitFor((l) => l.event === "recv", "b's msg");
    await stranger.connect(addr);
    await d.waitFor(
      (l) => l.event === "connected" && l.key === stranger.key,
      "the stranger",
    );
    // No "peer": the thread decides.
    await d.command({ cmd: "send", th, text: "for b only" });
    await bEvents.until(
      () => bEvents.of("message").some((m) => m.text === "for b only"),
      "b to get the reply",
    );
    // A new thread with two peers connected: refused, nothing sent.
    const from = d.lines.length;
    await d.command({ cmd: "send", text: "to whom?" });
    const refused = await d.waitFor(
      (l) =>
        l.event === "error" && /2 peers are connected/.test(String(l.detail)),
      "the refusal",
      20_000,
      from,
    );
    assert.match(String(refused.detail), /add "peer"/);
    await new Promise((r) => setTimeout(r, 300));
    assert.deepEqual(sEvents.of("message").map((m) => m.text), []);
    // Naming the peer still works.
    await d.command({ cmd: "send", peer: stranger.key, text: "named" });
    await sEvents.until(
      () => sEvents.of("message").some((m) => m.text === "named"),
      "the named send",
    );
    assert.equal(
      bEvents.of("message").some((m) => m.text === "to whom?"),
      false,
    );
  } finally {
    await quit(d);
    await b.close();
    await stranger.close();
    await bEvents.done;
    await sEvents.done;
    await Deno.remove(state, { recursive: true });
  }
});
