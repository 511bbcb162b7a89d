import assert from "node:assert/strict";
import { assign, createActor, createMachine, setup } from "npm:xstate@^5.33.3";
import { ActorGroups } from "../../actors/actor_groups.ts";
import { TimerWheel } from "../../net/timer_wheel.ts";

const idle = createMachine({
  initial: "up",
  states: { up: { on: { STOP: "down" } }, down: { type: "final" } },
});

Deno.test("actor groups: members share their group's system, a full group makes way for a new one", () => {
  const groups = new ActorGroups(new TimerWheel(), 3);
  const actors = [];
  for (let i = 0; i < 7; i++) {
    const group = groups.current();
    const actor = createActor(idle, { parent: group.parent });
    group.join(actor, { chartFailed: () => {} });
    actors.push(actor.start());
  }
  const systems = actors.map((a) => a.system);
  assert.equal(systems[0], systems[2]);
  assert.notEqual(systems[2], systems[3]);
  assert.equal(systems[3], systems[5]);
  assert.notEqual(systems[5], systems[6]);
  assert.equal(new Set(systems).size, 3);
});

Deno.test("actor groups: a finished member is forgotten, a failed one is told", async () => {
  const groups = new ActorGroups(new TimerWheel());
  const failing = setup({
    actions: {
      explode: () => {
        throw new Error("boom");
      },
    },
  }).createMachine({
    initial: "up",
    states: { up: { on: { GO: { actions: "explode" } } } },
  });
  const group = groups.current();
  const failures: unknown[] = [];
  const a = createActor(idle, { parent: group.parent });
  group.join(a, { chartFailed: (e) => failures.push(e) });
  const b = createActor(failing, { parent: group.parent });
  group.join(b, { chartFailed: (e) => failures.push(e) });
  a.start();
  b.start();
  assert.equal(group.size, 2);
  a.send({ type: "STOP" });
  assert.equal(a.getSnapshot().status, "done");
  assert.equal(group.size, 1);
  assert.deepEqual(failures, []);
  // Not an unhandled error (that would fail this test): the group hears it.
  b.send({ type: "GO" });
  await new Promise((r) => setTimeout(r, 10));
  assert.equal(b.getSnapshot().status, "error");
  assert.equal(failures.length, 1);
  assert.equal((failures[0] as Error).message, "boom");
  assert.equal(group.size, 0);
});

Deno.test("actor groups: delayed transitions run on the group's clock, and a stopping member cancels only its own", async () => {
  const wheel = new TimerWheel();
  const groups = new ActorGroups(wheel);
  const timed = setup({
    types: { context: {} as { fired: number } },
    delays: { later: 1_500 },
  }).createMachine({
    context: { fired: 0 },
    initial: "waiting",
    states: {
      waiting: {
        after: {
          later: {
            target: "fired",
            actions: assign({ fired: ({ context }) => context.fired + 1 }),
          },
        },
        on: { STOP: "down" },
      },
      fired: { type: "final" },
      down: { type: "final" },
    },
  });
  const group = groups.current();
  const a = createActor(timed, { parent: group.parent });
  const b = createActor(timed, { parent: group.parent });
  group.join(a, { chartFailed: () => {} });
  group.join(b, { chartFailed: () => {} });
  a.start();
  b.start();
  // Long delays sit on the wheel: the group's clock, not a timer each.
  assert.equal(wheel.size, 2);
  a.send({ type: "STOP" });
  assert.equal(wheel.size, 1);
  await new Promise<void>((resolve) => {
    b.subscribe({ complete: () => resolve() });
  });
  assert.equal(b.getSnapshot().value, "fired");
  assert.equal(b.getSnapshot().context.fired, 1);
  assert.equal(wheel.size, 0);
});
