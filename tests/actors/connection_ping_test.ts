/**
 * Liveness on a quiet connection between two of our peers: only the dialer
 * pings (the accepting side waits 20 % longer, and the dialer's ping resets
 * its wait); an accepting side whose dialer never pings still pings.
 */
import assert from "node:assert/strict";
import { Connection } from "../../actors/connection.ts";
import { MemoryStore } from "../../storage/memory_store.ts";
import { Signer } from "../../wire/keys.ts";
import type { Transport } from "../../net/transport.ts";
import { transportPair } from "../helpers/transport_pair.ts";

async function quietPair(ping: { dialer: number; acceptor: number }) {
  const { listener, client, server } = await transportPair("tcp:127.0.0.1:0");
  const sent = { dialer: [] as string[], acceptor: [] as string[] };
  const side = async (role: "dialer" | "acceptor", transport: Transport) =>
    new Connection({
      transport,
      dialed: role === "dialer",
      signer: await Signer.generate(),
      store: new MemoryStore(),
      timeouts: { pingInterval: ping[role] },
      onLine: (_c, dir, _raw, message) => {
        if (dir === "out" && typeof message?.t === "string") {
          sent[role].push(message.t);
        }
      },
    });
  const dialer = await side("dialer", client);
  const acceptor = await side("acceptor", server);
  dialer.start();
  acceptor.start();
  await Promise.all([dialer.established, acceptor.established]);
  return {
    sent,
    async close() {
      dialer.close("done");
      acceptor.close("done");
      await Promise.all([dialer.closed, acceptor.closed]);
      listener.close();
      await listener.done;
    },
  };
}

const count = (lines: string[], t: string) =>
  lines.filter((x) => x === t).length;

Deno.test("a quiet connection carries the dialer's pings only; the accepting side answers", async () => {
  const pair = await quietPair({ dialer: 400, acceptor: 400 });
  try {
    await new Promise((r) => setTimeout(r, 2_500));
    const pings = count(pair.sent.dialer, "ping");
    // About one ping per 400 ms (fewer on a loaded machine), all answered.
    assert.ok(pings >= 2, `dialer pinged ${pings} times`);
    // Its own wait is 480 ms from the dialer's last ping: never reached
    // (one at most, should a pong be delayed 80 ms on a loaded machine).
    assert.ok(
      count(pair.sent.acceptor, "ping") <= 1,
      pair.sent.acceptor.join(),
    );
    assert.ok(count(pair.sent.acceptor, "pong") >= pings - 1);
  } finally {
    await pair.close();
  }
});

Deno.test("the accepting side still pings a dialer that never does", async () => {
  const pair = await quietPair({ dialer: 0, acceptor: 200 });
  try {
    await new Promise((r) => setTimeout(r, 1_500));
    assert.ok(count(pair.sent.acceptor, "ping") >= 2);
    assert.equal(count(pair.sent.dialer, "ping"), 0);
  } finally {
    await pair.close();
  }
});
