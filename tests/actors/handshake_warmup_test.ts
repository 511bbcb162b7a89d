import assert from "node:assert/strict";
import { warmHandshake } from "../../actors/handshake_warmup.ts";
import { Supervisor } from "../../actors/supervisor.ts";
import { MemoryStore } from "../../storage/memory_store.ts";
import { Signer } from "../../wire/keys.ts";

// The sanitizers (ops, resources, timers) check that the warm-up leaves
// nothing running behind it.
Deno.test("warmHandshake: a full handshake over loopback TCP opens and closes", async () => {
  assert.equal(await warmHandshake(await Signer.generate()), true);
});

Deno.test({
  name:
    "warmHandshake: without net permission, over a pipe in memory (no prompt)",
  permissions: { net: false, read: true, env: true },
  fn: async () => {
    assert.equal(await warmHandshake(await Signer.generate()), true);
  },
});

Deno.test("Supervisor.warm: runs once, on start, and touches no store", async () => {
  const store = new MemoryStore();
  const sup = new Supervisor({ signer: await Signer.generate(), store });
  sup.start();
  const first = sup.warm();
  assert.equal(sup.warm(), first);
  assert.equal(await first, true);
  assert.deepEqual(await store.peers(), []);
  await sup.stop();
  store.close();
});

// A stop must not leave the warm-up running behind it (timers, a dialer).
Deno.test("Supervisor.stop right after start waits for the warm-up", async () => {
  const store = new MemoryStore();
  const sup = new Supervisor({ signer: await Signer.generate(), store });
  sup.start();
  let warmed = false;
  void sup.warm().then(() => warmed = true);
  await sup.stop();
  assert.equal(warmed, true);
  assert.equal(sup.state, "stopped");
  store.close();
});
