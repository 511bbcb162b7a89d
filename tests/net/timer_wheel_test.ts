import assert from "node:assert/strict";
import {
  MAX_SLEEP_MS,
  TimerWheel,
  WHEEL_MIN_MS,
} from "../../net/timer_wheel.ts";

/**
 * Counts the real timers armed and cleared through the globals until
 * `restore` is called (the wheel arms its one real timer with them).
 */
function countRealTimers() {
  const real = { set: globalThis.setTimeout, clear: globalThis.clearTimeout };
  const counts = { armed: 0, cleared: 0 };
  globalThis.setTimeout = ((fn: () => void, ms?: number) => {
    counts.armed++;
    return real.set(fn, ms);
  }) as typeof setTimeout;
  globalThis.clearTimeout = ((id?: number) => {
    counts.cleared++;
    real.clear(id);
  }) as typeof clearTimeout;
  const restore = () => {
    globalThis.setTimeout = real.set;
    globalThis.clearTimeout = real.clear;
  };
  return { counts, real, restore };
}

Deno.test("wheel timers fire in deadline order, never early; cleared ones never", async () => {
  const wheel = new TimerWheel();
  const start = performance.now();
  const fired: Array<{ name: string; at: number }> = [];
  const note = (name: string) => () =>
    fired.push({ name, at: performance.now() - start });
  const all = new Promise<void>((done) => {
    wheel.setTimeout(note("b"), WHEEL_MIN_MS + 300);
    wheel.setTimeout(note("a"), WHEEL_MIN_MS);
    const gone = wheel.setTimeout(note("cleared"), WHEEL_MIN_MS + 100);
    wheel.clearTimeout(gone);
    wheel.clearTimeout(gone); // twice: ignored
    wheel.setTimeout(() => done(), WHEEL_MIN_MS + 400);
  });
  assert.equal(wheel.size, 3);
  await all;
  assert.deepEqual(fired.map((f) => f.name), ["a", "b"]);
  assert.ok(fired[0].at >= WHEEL_MIN_MS, `a fired early: ${fired[0].at}`);
  assert.ok(fired[1].at >= WHEEL_MIN_MS + 300, `b fired early: ${fired[1].at}`);
  assert.equal(wheel.size, 0);
});

Deno.test("clearing the last wheel timer leaves no real timer holding the process (the test sanitizer checks)", () => {
  const wheel = new TimerWheel();
  const handles = Array.from(
    { length: 1000 },
    (_, i) => wheel.setTimeout(() => assert.fail("fired"), 30_000 + i),
  );
  assert.equal(wheel.size, 1000);
  assert.equal(wheel.holding, true);
  for (const h of handles) wheel.clearTimeout(h);
  assert.equal(wheel.size, 0);
  assert.equal(wheel.holding, false);
});

Deno.test("a deadline re-armed many times in one tick keeps one bucket and fires once", async () => {
  const wheel = new TimerWheel();
  let fired = 0;
  let handle = wheel.setTimeout(() => fired++, WHEEL_MIN_MS);
  for (let i = 0; i < 10_000; i++) {
    wheel.clearTimeout(handle);
    handle = wheel.setTimeout(() => fired++, WHEEL_MIN_MS);
  }
  assert.equal(wheel.size, 1);
  await new Promise<void>((done) =>
    wheel.setTimeout(() => done(), WHEEL_MIN_MS + 200)
  );
  assert.equal(fired, 1);
});

Deno.test("short delays use a real timer of their own, and clear like one", async () => {
  const wheel = new TimerWheel();
  let fired = false;
  const cleared = wheel.setTimeout(() => assert.fail("fired"), 20);
  wheel.clearTimeout(cleared);
  await new Promise<void>((done) =>
    wheel.setTimeout(() => {
      fired = true;
      done();
    }, 30)
  );
  assert.equal(fired, true);
  assert.equal(wheel.size, 0);
});

Deno.test("deadlines set and cleared while the wheel holds one arm no new real timer", () => {
  const wheel = new TimerWheel();
  const { counts, restore } = countRealTimers();
  try {
    const kept = wheel.setTimeout(() => assert.fail("fired"), 30_000);
    // A handshake's deadlines: handshake, resume, ping, the close's drain.
    for (const ms of [20_000, 10_000, 36_000, MAX_SLEEP_MS]) {
      wheel.clearTimeout(wheel.setTimeout(() => assert.fail("fired"), ms));
    }
    assert.equal(counts.armed, 1);
    wheel.clearTimeout(kept);
  } finally {
    restore();
  }
});

Deno.test("a deadline past MAX_SLEEP_MS fires after the wheel's wakes, not early", async () => {
  const wheel = new TimerWheel();
  const start = performance.now();
  const at = await new Promise<number>((done) =>
    wheel.setTimeout(() => done(performance.now() - start), 2_300)
  );
  assert.ok(at >= 2_300, `fired early: ${at}`);
  assert.equal(wheel.size, 0);
});

Deno.test("a connection's deadlines, and the next connection's, share one real timer", async () => {
  const wheel = new TimerWheel();
  const { counts, restore } = countRealTimers();
  try {
    for (let connection = 0; connection < 3; connection++) {
      // A connection's chart: handshake, then resume, then ping, closed.
      let h = wheel.setTimeout(() => assert.fail("fired"), 20_000);
      assert.equal(wheel.holding, true);
      wheel.clearTimeout(h);
      h = wheel.setTimeout(() => assert.fail("fired"), 10_000);
      wheel.clearTimeout(h);
      h = wheel.setTimeout(() => assert.fail("fired"), 36_000);
      await Promise.resolve();
      wheel.clearTimeout(h);
      await Promise.resolve();
      // Empty: the timer stays armed for the next one, but holds nothing.
      assert.equal(wheel.holding, false, "empty: the process may exit");
    }
    assert.deepEqual([counts.armed, counts.cleared], [1, 0]);
  } finally {
    restore();
  }
});

Deno.test("an emptied wheel's timer fires once more and is not re-armed", async () => {
  const wheel = new TimerWheel();
  const { counts, real, restore } = countRealTimers();
  try {
    wheel.clearTimeout(wheel.setTimeout(() => assert.fail("fired"), 20_000));
    assert.equal(counts.armed, 1);
  } finally {
    restore();
  }
  // Its wake comes within MAX_SLEEP_MS; a deadline set after it arms anew.
  await new Promise((done) => real.set(done, MAX_SLEEP_MS + 200));
  assert.equal(wheel.holding, false);
  let fired = false;
  await new Promise<void>((done) =>
    wheel.setTimeout(() => {
      fired = true;
      done();
    }, WHEEL_MIN_MS)
  );
  assert.equal(fired, true);
  assert.equal(wheel.holding, false);
});
