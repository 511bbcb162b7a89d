import assert from "node:assert/strict";
import { SerialQueue } from "../../actors/serial_queue.ts";

Deno.test("SerialQueue: tasks run one at a time, in order", async () => {
  const queue = new SerialQueue();
  const log: string[] = [];
  let running = 0;
  const task = (name: string, ms: number) => async () => {
    running++;
    assert.equal(running, 1, `${name} overlapped another task`);
    await new Promise((r) => setTimeout(r, ms));
    log.push(name);
    running--;
    return name;
  };
  const results = await Promise.all([
    queue.push(task("a", 20)),
    queue.push(task("b", 0)),
    queue.push(task("c", 5)),
  ]);
  assert.deepEqual(log, ["a", "b", "c"]);
  assert.deepEqual(results, ["a", "b", "c"]);
});

Deno.test("SerialQueue: a failing task rejects its own promise only", async () => {
  const queue = new SerialQueue();
  const failed = queue.push(() => {
    throw new Error("boom");
  });
  const after = queue.push(() => 42);
  await assert.rejects(failed, /boom/);
  assert.equal(await after, 42);
  await queue.idle();
});
