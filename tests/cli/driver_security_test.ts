// The stdin/stdout driver as a real process under attack (issue 25): whom
// its commands go to, and what survives kill -9 between ack and event.

import assert from "node:assert/strict";
import { Connection } from "../../actors/connection.ts";
import { Peer } from "../../peer/peer.ts";
import { dial } from "../../net/transport.ts";
import { MemoryStore } from "../../storage/memory_store.ts";
import { Signer } from "../../wire/keys.ts";
import { EventLog } from "../helpers/event_log.ts";
import { DriverProcess } from "../helpers/driver_process.ts";
import type { JsonLine } from "../helpers/json_line_child.ts";

function driver(state: string, ...rest: string[]): DriverProcess {
  return new DriverProcess([
    "--state",
    state,
    "--ping-interval",
    "0",
    ...rest,
  ]);
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
    await d.quit();
    await b.close();
    await stranger.close();
    await bEvents.done;
    await sEvents.done;
    await Deno.remove(state, { recursive: true });
  }
});

Deno.test("driver: kill -9 between ack and recv loses nothing: a restart repeats from the saved seq", async () => {
  const state = await Deno.makeTempDir({ prefix: "awp-drv-cursor-" });
  const sender = await Peer.open({ memory: true, name: "sender" });
  const events = new EventLog(sender, 60_000);
  const runs: DriverProcess[] = [];
  try {
    const addr = await sender.listen("tcp:127.0.0.1:0");
    const first = driver(state, "connect", addr);
    runs.push(first);
    const key = String(
      (await first.waitFor((l) => l.event === "identity", "identity")).key,
    );
    await events.until(
      () => events.of("connected").length > 0,
      "the driver to connect",
    );
    const total = 600;
    const ids: string[] = [];
    const sending = (async () => {
      for (let i = 0; i < total; i++) {
        ids.push((await sender.send(key, `m${i}`, { thread: "th-cursor" })).id);
      }
    })();
    // Killed mid-stream, with acked lines not yet written out.
    await first.waitFor(
      () => first.of("recv").length >= 100,
      "100 recv events",
      60_000,
    );
    first.kill9();
    await first.reap();
    await sending;
    const second = driver(state, "connect", addr);
    runs.push(second);
    const seenIds = () =>
      new Set(
        runs.flatMap((r) =>
          r.of("recv").map((l) => (l.msg as { id: string }).id)
        ),
      );
    await second.waitFor(
      () => ids.every((id) => seenIds().has(id)),
      `all ${total} msgs as recv events`,
      60_000,
    );
    for (const run of runs) {
      const seqs = run.of("recv").map((l) => l.seq as number);
      assert.ok(seqs.every((s) => Number.isInteger(s) && s > 0), "seq on recv");
      assert.deepEqual(seqs, [...seqs].sort((a, b) => a - b), "seq order");
    }
    // Every msg is acked at the sender: nothing stays in its outbox.
    for (const id of ids) await sender.waitAck(id, { timeoutMs: 20_000 });
  } finally {
    for (const run of runs) await run.quit();
    await sender.close();
    await events.done;
    await Deno.remove(state, { recursive: true });
  }
});

Deno.test("resume: msgs at or below the receiver's seen point whose ack was lost count as acked", async () => {
  const state = await Deno.makeTempDir({ prefix: "awp-drv-seen-" });
  const d = driver(state, "listen", "tcp:127.0.0.1:0");
  const signer = await Signer.generate();
  const store = new MemoryStore();
  // A receiver that dies between its commit and its ack: receive (of its
  // received records, which the connection commits into) commits, then
  // never returns, so no ack goes out.
  let stall = true;
  const records = {
    receive: async (...args: Parameters<MemoryStore["receive"]>) => {
      const out = await store.received.receive(...args);
      if (stall) return await new Promise<never>(() => {});
      return out;
    },
    seen: (peer: string) => store.received.seen(peer),
  };
  const stalling = new Proxy(store, {
    get(target, prop) {
      if (prop === "received") return records;
      const value = Reflect.get(target, prop, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  const open = async (s: MemoryStore) => {
    const conn = new Connection({
      transport: await dial(addr),
      signer,
      store: s,
      dialed: true,
      timeouts: { pingInterval: 0 },
    });
    conn.start();
    await conn.established;
    return conn;
  };
  let addr = "";
  try {
    addr = String((await d.waitFor(listening, "listening")).addr);
    const first = await open(stalling);
    await d.waitFor((l) => l.event === "connected", "connected");
    await d.command({ cmd: "send", text: "ack me" });
    const sent = await d.waitFor((l) => l.event === "sent", "sent");
    // Committed on our side (seen), never acked.
    const th = String(sent.th);
    for (let i = 0; i < 100 && !(await store.seen(d_key(d)))[th]; i++) {
      await new Promise((r) => setTimeout(r, 50));
    }
    first.close("dies before its ack");
    await first.closed;
    stall = false;
    const from = d.lines.length;
    const second = await open(store);
    const acked = await d.waitFor(
      (l) => l.event === "acked" && l.id === sent.id,
      "the lost ack counted on resume",
      10_000,
      from,
    );
    assert.equal(acked.id, sent.id);
    second.close("done");
    await second.closed;
  } finally {
    await d.quit();
    store.close();
    await Deno.remove(state, { recursive: true });
  }
});

function d_key(d: DriverProcess): string {
  return String(d.lines.find((l) => l.event === "identity")?.key);
}
