import assert from "node:assert/strict";
import { PeerTrust } from "../../peer/peer_trust.ts";
import { MemoryStore } from "../../storage/memory_store.ts";
import { Signer } from "../../wire/keys.ts";

Deno.test("PeerTrust.warm reports no decision, stores nothing, changes no verdict", async () => {
  const me = await Signer.generate();
  const them = await Signer.generate();
  const store = new MemoryStore();
  const decisions: string[] = [];
  const trust = new PeerTrust(store, {
    ownKey: me.key,
    accept: "allowlist",
    onDecision: (d) => decisions.push(d.key),
  });
  await trust.warm();
  assert.deepEqual(decisions, []);
  assert.deepEqual(await store.grants(), []);
  assert.equal(await store.peer(me.key), undefined);
  // A stranger is still refused, and that decision is reported.
  const refusal = await trust.admit(
    { key: them.key, caps: [], nonce: "n", grants: [] },
    { dialed: false },
  );
  assert.equal(typeof refusal, "string");
  assert.deepEqual(decisions, [them.key]);
  store.close();
});
