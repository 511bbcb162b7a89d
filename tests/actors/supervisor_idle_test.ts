/**
 * What a listener keeps for an inbound peer that has gone: its dial-back
 * dialer is dropped once it has nothing to deliver.
 */

import { Supervisor } from "../../actors/supervisor.ts";
import { MemoryStore } from "../../storage/memory_store.ts";
import { Signer } from "../../wire/keys.ts";

async function supervisor(name: string, addr?: string) {
  const signer = await Signer.generate();
  const store = new MemoryStore();
  const sup = new Supervisor({
    signer,
    store,
    name,
    ...(addr ? { addr } : {}),
    timeouts: { pingInterval: 0 },
    dialer: { timing: { graceMs: 50 } },
  });
  sup.start();
  return { sup, store, key: signer.key };
}

async function until(check: () => boolean, what: string, ms = 5000) {
  const start = Date.now();
  while (!check()) {
    if (Date.now() - start > ms) throw new Error(`timed out waiting: ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

Deno.test("an inbound peer that left and is owed nothing leaves no dialer behind", async () => {
  const a = await supervisor("a");
  // b announces an address (hello.addr): a can dial it back.
  const b = await supervisor("b", "tcp:127.0.0.1:9");
  try {
    const listener = await a.sup.listen("tcp:127.0.0.1:0");
    await b.sup.connect(listener.addr);
    await until(() => a.sup.dialer(b.key)?.state === "connected", "dial-back");
    await b.sup.stop();
    await until(() => a.sup.connection(b.key) === undefined, "a sees it go");
    await until(() => a.sup.dialer(b.key) === undefined, "dialer dropped");
  } finally {
    await a.sup.stop();
    a.store.close();
    b.store.close();
  }
});
