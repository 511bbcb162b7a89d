import assert from "node:assert/strict";

const MODULE = new URL("../../cli/core_timers.ts", import.meta.url).href;

/**
 * Runs `body` in a fresh Deno process after `installCoreTimers()` (the
 * globals of this test process stay as they are); resolves with its exit
 * code and stdout lines. Killed after 20 s: a timer that keeps the process
 * alive when it should not fails the test instead of hanging it.
 */
async function runWithCoreTimers(
  body: string,
): Promise<{ code: number; lines: string[]; err: string }> {
  const dir = await Deno.makeTempDir({ prefix: "awp-core-timers-" });
  try {
    const script = `${dir}/main.ts`;
    await Deno.writeTextFile(
      script,
      `import { installCoreTimers } from ${JSON.stringify(MODULE)};\n` +
        `const out = (s: string) => console.log(s);\n` +
        `out("installed " + installCoreTimers());\n${body}\n`,
    );
    const o = await new Deno.Command(Deno.execPath(), {
      args: ["run", "--no-config", "--no-lock", script],
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
      signal: AbortSignal.timeout(20_000),
    }).output();
    const dec = new TextDecoder();
    return {
      code: o.code,
      lines: dec.decode(o.stdout).trim().split("\n"),
      err: dec.decode(o.stderr),
    };
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("core timers: timeouts fire with their args, cleared ones never", async () => {
  const r = await runWithCoreTimers(`
    const d = Object.getOwnPropertyDescriptor(globalThis, "setTimeout");
    out("own value " + (d !== undefined && "value" in d));
    await new Promise<void>((done) => {
      const id = setTimeout((a: string, b: string) => out("fired " + a + b), 15, "x", "y");
      out("id " + typeof id);
      const cancelled = setTimeout(() => out("cancelled fired"), 5);
      clearTimeout(cancelled);
      clearTimeout(undefined);
      clearTimeout(123456); // unknown: ignored
      setTimeout(done, 40);
    });
    try {
      setTimeout("out(1)" as unknown as () => void, 1);
    } catch (e) {
      out("string callback " + (e as Error).name);
    }
  `);
  assert.equal(r.code, 0, r.err);
  assert.deepEqual(r.lines, [
    "installed true",
    "own value true",
    "id number",
    "fired xy",
    "string callback TypeError",
  ]);
});

Deno.test("core timers: an interval repeats until cleared", async () => {
  const r = await runWithCoreTimers(`
    await new Promise<void>((done) => {
      let n = 0;
      const id = setInterval(() => {
        out("tick " + ++n);
        if (n === 3) {
          clearInterval(id);
          setTimeout(done, 20); // a 4th tick would show up first
        }
      }, 1);
    });
  `);
  assert.equal(r.code, 0, r.err);
  assert.deepEqual(r.lines, ["installed true", "tick 1", "tick 2", "tick 3"]);
});

Deno.test("core timers: an immediate runs after the microtasks, with its args", async () => {
  const r = await runWithCoreTimers(`
    await new Promise<void>((done) => {
      setImmediate((v: number) => {
        out("immediate " + v);
        done();
      }, 7);
      const skipped = setImmediate(() => out("cleared immediate ran"));
      clearImmediate(skipped);
      queueMicrotask(() => out("microtask"));
    });
  `);
  assert.equal(r.code, 0, r.err);
  assert.deepEqual(r.lines, ["installed true", "microtask", "immediate 7"]);
});

Deno.test("core timers: a pending timer keeps the process alive, an unrefed one does not", async () => {
  const r = await runWithCoreTimers(`
    const forever = setInterval(() => out("forever ticked"), 60_000);
    Deno.unrefTimer(forever); // else the process would run for a minute
    setTimeout(() => out("late"), 30); // refed: waited for
    out("end of main");
  `);
  assert.equal(r.code, 0, r.err);
  assert.deepEqual(r.lines, ["installed true", "end of main", "late"]);
});

Deno.test("core timers: a second install is a no-op", async () => {
  const r = await runWithCoreTimers(`
    const first = setTimeout;
    out("again " + installCoreTimers());
    out("same " + (first === setTimeout));
  `);
  assert.equal(r.code, 0, r.err);
  assert.deepEqual(r.lines, ["installed true", "again true", "same true"]);
});

Deno.test("core timers: the connection clock's wheel re-holds the process with its emptied timer", async () => {
  const wheel = new URL("../../net/timer_wheel.ts", import.meta.url).href;
  const r = await runWithCoreTimers(`
    const { TimerWheel } = await import(${JSON.stringify(wheel)});
    const w = new TimerWheel();
    // Emptied at once: its real timer stays armed, unrefed (Deno.unrefTimer).
    w.clearTimeout(w.setTimeout(() => out("cleared fired"), 60_000));
    out("holding " + w.holding);
    // The next deadline takes that timer back (Deno.refTimer): the process
    // must stay up until it fires.
    w.setTimeout(() => out("fired"), 1_000);
    out("holding " + w.holding);
  `);
  assert.equal(r.code, 0, r.err);
  assert.deepEqual(r.lines, [
    "installed true",
    "holding false",
    "holding true",
    "fired",
  ]);
});
