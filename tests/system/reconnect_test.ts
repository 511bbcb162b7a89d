/**
 * The dialer never gives up, and finds a restarted listener at once: two
 * real `awp driver` processes, the listener killed with SIGKILL and
 * restarted on the same address, over TCP and over a Unix socket.
 *
 * The 2 s bound is a correctness bound with a wide margin (the dialer
 * probes a refusing address every 250 ms, then every 1.5 s); speed is
 * measured by `deno task bench --only reconnect`. The attempts-per-minute
 * bound of a peer down for minutes is proven on a simulated clock in
 * tests/actors/dialer_test.ts.
 */

import assert from "node:assert/strict";
import { JsonLineChild } from "../helpers/json_line_child.ts";

const CLI = new URL("../../cli.ts", import.meta.url).pathname;

function driver(state: string, mode: "listen" | "connect", addr: string) {
  return new JsonLineChild([
    "run",
    "-A",
    "--unstable-kv",
    CLI,
    "driver",
    "--state",
    state,
    mode,
    addr,
  ]);
}

function freePort(): number {
  const probe = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (probe.addr as Deno.NetAddr).port;
  probe.close();
  return port;
}

for (const kind of ["tcp", "unix"] as const) {
  Deno.test(`${kind}: a dialer started while the listener is down keeps dialing, then reconnects within 2 s of every restart`, async () => {
    const dir = await Deno.makeTempDir();
    const addr = kind === "tcp"
      ? `tcp:127.0.0.1:${freePort()}`
      : `unix:${dir}/l.sock`;
    // The dialer first: nothing listens yet. It must not exit.
    const dialer = driver(`${dir}/d`, "connect", addr);
    let listener: JsonLineChild | undefined;
    try {
      await dialer.waitFor((l) => l.event === "identity", "dialer identity");
      await dialer.waitFor(
        (l) => l.event === "error" && String(l.detail).includes(addr),
        "a dial failure reported as an error event",
      );
      await dialer.waitFor(
        () => dialer.of("error").length >= 2,
        "it keeps dialing",
      );
      assert.equal(dialer.exited, false, "the dialer stays up");

      for (let round = 0; round < 3; round++) {
        listener = driver(`${dir}/l`, "listen", addr);
        const from = dialer.lines.length;
        await listener.waitFor((l) => l.event === "listening", "listening");
        const listening = performance.now();
        await dialer.waitFor(
          (l) => l.event === "connected",
          `round ${round}: reconnected`,
          20_000,
          from,
        );
        const took = performance.now() - listening;
        assert.ok(took < 2_000, `round ${round}: reconnected after ${took} ms`);

        // Kill the listener, leave it down a while (the dialer probes).
        const mark = dialer.lines.length;
        listener.kill9();
        await listener.reap();
        listener = undefined;
        await dialer.waitFor(
          (l) => l.event === "disconnected",
          "the dialer sees the drop",
          20_000,
          mark,
        );
        await new Promise((r) => setTimeout(r, 300 + round * 700));
        assert.equal(dialer.exited, false, "the dialer stays up");
      }
    } finally {
      for (const child of [listener, dialer]) {
        if (!child) continue;
        await child.command({ cmd: "quit" }).catch(() => {});
        await child.finish();
      }
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    }
  });
}
