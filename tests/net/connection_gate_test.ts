import assert from "node:assert/strict";
import { ConnectionGate } from "../../net/connection_gate.ts";
import { parseArgs } from "../../cli/args.ts";
import { applyBounds, parseBoundFlags } from "../../cli/bound_flags.ts";
import { DAEMON_FLAGS } from "../../cli/daemon_flags.ts";
import type { PeerOptions } from "../../peer/peer.ts";

Deno.test("ConnectionGate: per-address and total handshake caps, open cap, places given back once", () => {
  const gate = new ConnectionGate({
    maxConnections: 4,
    maxUnauthenticated: 3,
    maxUnauthenticatedPerHost: 2,
  });
  const a1 = gate.admit("tcp:10.0.0.1:1000")!;
  const a2 = gate.admit("tcp:10.0.0.1:1001")!;
  assert.equal(gate.admit("tcp:10.0.0.1:1002"), undefined, "per address");
  const v6 = gate.admit("tcp:[::1]:5000")!;
  assert.equal(gate.admit("tcp:[::1]:5001"), undefined, "total pre-auth");
  a1.authenticated();
  a1.authenticated(); // once only
  const v6b = gate.admit("tcp:[::1]:5002")!;
  assert.ok(v6b);
  assert.deepEqual(gate.counts, { open: 4, unauthenticated: 3 });
  assert.equal(gate.admit("unix:"), undefined, "open cap");
  a2.release();
  a2.release(); // once only
  assert.deepEqual(gate.counts, { open: 3, unauthenticated: 2 });
  assert.ok(gate.admit("unix:"));
  assert.equal(gate.refused, 3);
  v6.release();
  v6b.release();
});

Deno.test("ConnectionGate: the open cap follows a low fd limit unless set", () => {
  const low = new ConnectionGate({}, 200);
  const places = [];
  for (let i = 0; i < 100; i++) {
    const t = low.admit(`tcp:10.0.0.${i}:1`);
    if (!t) break;
    t.authenticated();
    places.push(t);
  }
  assert.equal(places.length, 72); // 200 - 128 kept free
  const set = new ConnectionGate({ maxConnections: 100 }, 200);
  for (let i = 0; i < 100; i++) {
    set.admit(`tcp:10.0.0.${i}:1`)!.authenticated();
  }
  assert.equal(set.admit("tcp:10.0.1.1:1"), undefined);
});

Deno.test("bound flags: checked, one line each, and mapped onto the Peer's options", () => {
  const parse = (argv: string[]) =>
    parseBoundFlags(parseArgs(argv, DAEMON_FLAGS));
  const values = parse([
    "--max-connections",
    "100",
    "--handshake-timeout",
    "2.5",
    "--max-unfinished-blob-bytes",
    "1000",
    "--unfinished-blob-ttl",
    "60",
    "--max-log-bytes",
    "5000",
  ]);
  const options = applyBounds({ memory: true } as PeerOptions, values);
  assert.deepEqual(options.limits, { maxConnections: 100 });
  assert.deepEqual(options.timeouts, { handshake: 2500 });
  assert.deepEqual(options.unfinishedBlobs, { perPeer: 1000, ttlMs: 60_000 });
  assert.equal(options.maxLogBytes, 5000);
  for (
    const bad of [
      ["--max-connections", "0"],
      ["--max-log-bytes", "1.5"],
      ["--handshake-timeout", "-1"],
    ]
  ) {
    assert.throws(
      () => parse(bad),
      (e: Error) =>
        e.message.startsWith(`bad ${bad[0]} "${bad[1]}"`) &&
        !e.message.includes("\n"),
    );
  }
});
