import assert from "node:assert/strict";
import { SimulatedClock } from "npm:xstate@^5.33.3";
import { Dialer } from "../../actors/dialer.ts";
import {
  backoffDelay,
  DEFAULT_DIALER_TIMING,
} from "../../actors/dialer_machine.ts";
import { dial, listen, type Transport } from "../../net/transport.ts";

/** Lets pending promise callbacks (connect results) run. */
async function settle() {
  for (let i = 0; i < 5; i++) await Promise.resolve();
}

/** A dialer on a simulated clock whose connect attempts the test resolves. */
function harness(
  options: {
    addresses?: string[];
    dialBack?: boolean;
    random?: () => number;
  } = {},
) {
  const clock = new SimulatedClock();
  const attempts: Array<{
    address: string;
    at: number;
    resolve(): void;
    reject(e: Error): void;
    signal: AbortSignal;
  }> = [];
  const flags = { wanted: true };
  const dialer = new Dialer({
    peer: "ed25519:peer",
    addresses: options.addresses ?? ["tcp:127.0.0.1:9"],
    dialBack: options.dialBack,
    random: options.random ?? (() => 0),
    clock,
    shouldConnect: () => flags.wanted,
    connect: (address, signal) =>
      new Promise<void>((resolve, reject) => {
        attempts.push({ address, at: clock.now(), resolve, reject, signal });
      }),
  });
  dialer.start();
  return { clock, attempts, flags, dialer };
}

Deno.test("backoff: failures other than refusals wait 0.5 s doubling, capped at 60 s, never give up", async () => {
  const { clock, attempts, dialer } = harness();
  assert.equal(dialer.state, "idle");
  dialer.wake();
  assert.equal(dialer.state, "connecting");
  const expected = [500, 1000, 2000, 4000, 8000, 16000, 32000, 60000, 60000];
  for (const [i, delay] of expected.entries()) {
    attempts[i].reject(new Error("dial tcp:10.0.0.9:9: timed out"));
    await settle();
    assert.equal(dialer.state, "backoff");
    assert.equal(dialer.attempt, i + 1);
    clock.increment(delay - 1);
    assert.equal(dialer.state, "backoff", `still waiting before ${delay} ms`);
    clock.increment(1);
    assert.equal(dialer.state, "connecting");
    assert.equal(attempts.length, i + 2);
  }
  // A success resets the count.
  attempts.at(-1)!.resolve();
  await settle();
  assert.equal(dialer.state, "connected");
  assert.equal(dialer.attempt, 0);
  // A drop is redialed at once.
  const before = attempts.length;
  dialer.disconnected();
  assert.equal(dialer.state, "connecting");
  assert.equal(attempts.length, before + 1);
  dialer.stop();
  assert.equal(attempts.at(-1)!.signal.aborted, true, "stop aborts the dial");
});

Deno.test("refusals: probed every 250 ms, then every 1.5 s, then backed off to 60 s; attempts per minute stay bounded", async () => {
  const { clock, attempts, dialer } = harness();
  dialer.wake();
  const refuse = async () => {
    attempts.at(-1)!.reject(
      new Error("dial tcp:127.0.0.1:9: connection refused"),
    );
    await settle();
  };
  // Minute by minute over an outage of 30 minutes, one ms at a time would
  // be slow: jump to each timer instead.
  const startedAt = clock.now();
  const times: number[] = [];
  while (clock.now() - startedAt < 30 * 60_000) {
    times.push(clock.now() - startedAt);
    await refuse();
    assert.equal(dialer.state, "backoff");
    const n = attempts.length;
    let waited = 0;
    while (attempts.length === n) {
      clock.increment(50);
      waited += 50;
      assert.ok(waited <= 60_000, "never waits more than the cap");
    }
  }
  const inWindow = (from: number, to: number) =>
    times.filter((t) => t >= from && t < to).length;
  assert.equal(inWindow(0, 10_000), 40, "every 250 ms for the first 10 s");
  assert.ok(inWindow(60_000, 120_000) <= 40, "at most 40 a minute later on");
  assert.ok(inWindow(60_000, 120_000) >= 39, "still probing every 1.5 s");
  for (let minute = 11; minute < 30; minute++) {
    const n = inWindow(minute * 60_000, (minute + 1) * 60_000);
    assert.ok(n <= 2, `minute ${minute}: ${n} attempts`);
  }
  assert.ok(
    times.at(-1)! - times.at(-2)! === 60_000,
    "long outages back off to the 60 s cap",
  );
  // A listener that comes back is reached on the next probe.
  attempts.at(-1)!.resolve();
  await settle();
  assert.equal(dialer.state, "connected");
  dialer.stop();
});

Deno.test("a newly learned address is a sign of life: dialed at once", async () => {
  const { attempts, dialer } = harness();
  dialer.wake();
  attempts[0].reject(new Error("dial tcp:10.0.0.9:9: timed out"));
  await settle();
  assert.equal(dialer.state, "backoff");
  dialer.learn("tcp:127.0.0.1:7001");
  assert.equal(dialer.state, "connecting");
  assert.equal(attempts.at(-1)!.address, "tcp:127.0.0.1:7001");
  dialer.stop();
});

Deno.test("jitter shortens delays by at most 20% and keeps the cap", () => {
  for (const r of [0, 0.25, 0.5, 0.999]) {
    for (let attempt = 0; attempt < 12; attempt++) {
      const raw = Math.min(60_000, 500 * 2 ** attempt);
      const d = backoffDelay(attempt, DEFAULT_DIALER_TIMING, () => r);
      assert.ok(
        d <= raw && d >= Math.floor(raw * 0.8),
        `${attempt} ${r}: ${d}`,
      );
    }
  }
  assert.equal(backoffDelay(1000, DEFAULT_DIALER_TIMING, () => 0), 60_000);
  const seen = new Set<number>();
  for (let i = 0; i < 20; i++) {
    seen.add(backoffDelay(3, DEFAULT_DIALER_TIMING, Math.random));
  }
  assert.ok(seen.size > 1, "random jitter varies");
});

Deno.test("jittered delays drive the chart", async () => {
  const { clock, attempts, dialer } = harness({ random: () => 0.5 });
  dialer.wake();
  attempts[0].reject(new Error("refused"));
  await settle();
  clock.increment(449);
  assert.equal(dialer.state, "backoff");
  clock.increment(1); // 500 * (1 - 0.2 * 0.5)
  assert.equal(dialer.state, "connecting");
  dialer.stop();
});

Deno.test("gives up once nothing is wanted; wakes again on demand", async () => {
  const { clock, attempts, flags, dialer } = harness();
  dialer.wake();
  attempts[0].reject(new Error("refused"));
  await settle();
  flags.wanted = false;
  clock.increment(500);
  assert.equal(dialer.state, "idle");
  assert.equal(attempts.length, 1);
  dialer.wake();
  assert.equal(dialer.state, "idle", "still nothing wanted");
  flags.wanted = true;
  dialer.wake();
  assert.equal(dialer.state, "connecting");
  dialer.stop();
  assert.equal(dialer.state, "stopped");
});

Deno.test("an inbound connection stops dialing; addresses rotate; learned ones go first", async () => {
  const { clock, attempts, dialer } = harness({
    addresses: ["tcp:127.0.0.1:1", "unix:/tmp/b.sock"],
  });
  dialer.wake();
  attempts[0].reject(new Error("refused"));
  await settle();
  clock.increment(500);
  assert.deepEqual(attempts.map((a) => a.address), [
    "tcp:127.0.0.1:1",
    "unix:/tmp/b.sock",
  ]);
  dialer.connected();
  assert.equal(dialer.state, "connected");
  assert.equal(attempts[1].signal.aborted, true);
  dialer.learn("tcp:10.0.0.7:7000");
  assert.deepEqual(dialer.addresses, [
    "tcp:10.0.0.7:7000",
    "tcp:127.0.0.1:1",
    "unix:/tmp/b.sock",
  ]);
  dialer.disconnected();
  assert.equal(attempts.at(-1)!.address, "tcp:10.0.0.7:7000");
  dialer.stop();
});

Deno.test("dial back: a listener waits the 15 s grace before dialing", async () => {
  const { clock, attempts, dialer } = harness({ dialBack: true });
  dialer.connected();
  dialer.disconnected();
  assert.equal(dialer.state, "grace");
  clock.increment(14_999);
  assert.equal(attempts.length, 0);
  clock.increment(1);
  assert.equal(dialer.state, "connecting");
  assert.equal(attempts.length, 1);
  // The original dialer came back in time: no dial.
  attempts[0].resolve();
  await settle();
  dialer.disconnected();
  assert.equal(dialer.state, "grace");
  clock.increment(10_000);
  dialer.connected();
  clock.increment(60_000);
  assert.equal(dialer.state, "connected");
  assert.equal(attempts.length, 1);
  dialer.stop();
});

Deno.test("real sockets: keeps dialing until the listener appears", async () => {
  const probe = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const address = `tcp:127.0.0.1:${probe.addr.port}`;
  probe.close();
  const errors: string[] = [];
  const transports: Transport[] = [];
  let reachedConnected!: () => void;
  const connected = new Promise<void>((r) => reachedConnected = r);
  const dialer = new Dialer({
    peer: "ed25519:peer",
    addresses: [address],
    timing: { baseMs: 10, capMs: 40 },
    shouldConnect: () => true,
    connect: async (a, signal) => {
      transports.push(await dial(a, { signal }));
    },
    onChange: (state, _attempt, lastError) => {
      if (lastError && !errors.includes(lastError)) errors.push(lastError);
      if (state === "connected") reachedConnected();
    },
  });
  dialer.start();
  dialer.wake();
  // The first refused dial, however slow a loaded machine is to report it.
  for (let waited = 0; errors.length === 0 && waited < 10_000; waited += 10) {
    await new Promise((r) => setTimeout(r, 10));
  }
  assert.equal(transports.length, 0);
  assert.deepEqual(errors, [`dial ${address}: connection refused`]);
  const accepted: Transport[] = [];
  const listener = await listen(address, (t) => accepted.push(t));
  await connected;
  assert.equal(transports.length, 1);
  dialer.stop();
  for (const t of [...transports, ...accepted]) t.close();
  listener.close();
  await listener.done;
});
