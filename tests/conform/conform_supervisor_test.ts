/**
 * The conformance runner against our own stack: a {@link Supervisor} with a
 * real store, listening on TCP and on a Unix socket. Every scenario that fits
 * dial mode must pass (replay needs a driver-contract peer and is skipped).
 *
 * @module
 */

import assert from "node:assert/strict";
import { runConformance } from "../../conform/runner.ts";
import { SCENARIOS } from "../../conform/scenarios.ts";
import { Supervisor } from "../../actors/supervisor.ts";
import { KvStore } from "../../storage/kv_store.ts";
import { MemoryStore } from "../../storage/memory_store.ts";
import type { Store } from "../../storage/store.ts";
import { Signer } from "../../wire/keys.ts";

async function conformAgainst(
  address: (dir: string) => string,
  makeStore: (dir: string) => Promise<Store>,
): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "awp-conform-sup-" });
  const store = await makeStore(dir);
  const failures: string[] = [];
  const sup = new Supervisor({
    signer: await Signer.generate(),
    store,
    name: "supervisor-under-test",
    caps: ["chat", "blob", "grant"],
    onEvent: (e) => {
      if (e.type === "handler_error" || e.type === "connection_failed") {
        failures.push(JSON.stringify(e));
      }
    },
  });
  try {
    const listener = await sup.listen(address(dir));
    const report = await runConformance({
      address: listener.addr,
      timeoutMs: 3000,
    });
    const statuses = Object.fromEntries(
      report.results.map((r) => [r.name, `${r.status} ${r.detail ?? ""}`]),
    );
    for (const s of SCENARIOS) {
      const status = statuses[s.name] ?? "missing";
      if (s.name === "replay") assert.match(status, /^skip/);
      else assert.match(status, /^ok/, `${s.name}: ${status}`);
    }
    assert.equal(report.results.length, SCENARIOS.length);
    assert.equal(report.failed, 0);
    assert.equal(report.peer?.name, "supervisor-under-test");
    // The runner's many connections (some of them hostile) cost nothing.
    assert.deepEqual(failures, []);
    assert.equal(sup.state, "running");
  } finally {
    await sup.stop();
    store.close();
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("conformance: a Supervisor on TCP with a Deno KV store passes every dial-mode scenario", async () => {
  await conformAgainst(
    () => "tcp:127.0.0.1:0",
    (dir) => KvStore.open(`${dir}/awp.kv`),
  );
});

Deno.test("conformance: a Supervisor on a Unix socket with a memory store passes every dial-mode scenario", async () => {
  await conformAgainst(
    (dir) => `unix:${dir}/awp.sock`,
    () => Promise.resolve(new MemoryStore()),
  );
});

Deno.test("conformance: listen mode with --driver, our Supervisor dials a Unix socket and replays after resume", async () => {
  const dir = await Deno.makeTempDir({ prefix: "awp-conform-sup-" });
  const driver = new URL("../fixtures/driver_peer.ts", import.meta.url)
    .pathname;
  try {
    const report = await runConformance({
      listen: `unix:${dir}/runner.sock`,
      run:
        `${Deno.execPath()} run -A '${driver}' --state '${dir}/peer' connect {addr}`,
      driver: true,
      timeoutMs: 3000,
    });
    for (const s of SCENARIOS) {
      const r = report.results.find((x) => x.name === s.name);
      assert.equal(
        r?.status,
        s.breaksConnection ? "skip" : "ok",
        `${s.name}: ${r?.detail}`,
      );
    }
    assert.equal(report.peer?.name, "driver-peer");
    assert.ok(report.passed >= 12, `only ${report.passed} passed`);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
