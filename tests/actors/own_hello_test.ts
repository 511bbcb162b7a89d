import assert from "node:assert/strict";
import { ownHello } from "../../actors/own_hello.ts";
import { Signer } from "../../wire/keys.ts";
import { validateMessage } from "../../wire/validate.ts";

Deno.test("ownHello: a valid hello with only the fields that are set", async () => {
  const signer = await Signer.generate();
  const bare = ownHello({ signer }, "01JAAAAAAAAAAAAAAAAAAAAAAA");
  assert.deepEqual(Object.keys(bare).sort(), [
    "caps",
    "id",
    "key",
    "nonce",
    "t",
    "ts",
    "v",
  ]);
  assert.deepEqual(bare.caps, ["chat"]);
  assert.equal(bare.key, signer.key);
  const full = ownHello({
    signer,
    name: "bob",
    about: "tests",
    addr: "tcp:127.0.0.1:7000",
    caps: ["chat", "blob"],
    shares: () => ["ed25519:host"],
  }, "01JAAAAAAAAAAAAAAAAAAAAAAB");
  assert.equal(full.name, "bob");
  assert.equal(full.addr, "tcp:127.0.0.1:7000");
  assert.deepEqual(full.shares, ["ed25519:host"]);
  assert.notEqual(full.nonce, bare.nonce, "a fresh nonce each time");
  for (const hello of [bare, full]) {
    assert.equal(validateMessage(hello).ok, true, JSON.stringify(hello));
  }
});
