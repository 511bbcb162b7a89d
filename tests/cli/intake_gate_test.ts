import assert from "node:assert/strict";
import { IntakeGate } from "../../cli/intake_gate.ts";

Deno.test("IntakeGate: room at once below the bound, waits at it", async () => {
  const gate = new IntakeGate(2);
  assert.equal(gate.room(), undefined);
  const a = gate.take();
  const b = gate.take();
  assert.equal(gate.inFlight, 2);
  const room = gate.room();
  assert.ok(room instanceof Promise);
  let woke = false;
  void room.then(() => woke = true);
  await Promise.resolve();
  assert.equal(woke, false);
  a();
  a(); // a second call counts nothing
  await room;
  assert.equal(woke, true);
  assert.equal(gate.inFlight, 1);
  assert.equal(gate.room(), undefined);
  b();
  assert.equal(gate.inFlight, 0);
});
