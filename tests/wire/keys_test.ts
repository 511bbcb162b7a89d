import assert from "node:assert/strict";
import * as ed from "npm:@noble/ed25519@^3.2.0";
import {
  formatKey,
  isKey,
  KEY_PREFIX,
  parseKey,
  randomNonce,
  Signer,
  verify,
} from "../../wire/keys.ts";
import { decodeBase64, encodeBase64Url } from "../../wire/base64.ts";

const hex = (s: string) =>
  new Uint8Array(s.match(/../g)!.map((b) => parseInt(b, 16)));
const toHex = (b: Uint8Array) =>
  Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");

// RFC 8032 section 7.1, TEST 1 (empty message).
const RFC_SEED = hex(
  "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60",
);
const RFC_PUBLIC = hex(
  "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a",
);
const RFC_SIG = hex(
  "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b",
);

Deno.test("keys: RFC 8032 test vector 1", async () => {
  const signer = await Signer.fromSeed(RFC_SEED);
  assert.deepEqual(signer.publicKey, RFC_PUBLIC);
  assert.deepEqual(signer.seed, RFC_SEED);
  assert.equal(signer.key, KEY_PREFIX + encodeBase64Url(RFC_PUBLIC));
  assert.deepEqual(await signer.sign(new Uint8Array(0)), RFC_SIG);
  assert.equal(await verify(signer.key, new Uint8Array(0), RFC_SIG), true);
  assert.equal(await verify(RFC_PUBLIC, new Uint8Array(0), RFC_SIG), true);
  assert.equal(await verify(RFC_PUBLIC, new Uint8Array([0]), RFC_SIG), false);
});

Deno.test("keys: the draft 2 SPEC.md worked example (section 4.2)", async () => {
  const signer = await Signer.fromSeed(
    decodeBase64("n91wt2HNOBdumTc7UI0QeqJw8wML6cYWcGzmd0k8Tbo"),
  );
  assert.equal(
    signer.key,
    "ed25519:LPiUZUt7_kzIUKm5LX4v4RUEXwocMKv1uJ4_sTmx6Zc",
  );
});

Deno.test("keys: our signatures verify with noble and noble's verify with us", async () => {
  for (let i = 0; i < 20; i++) {
    const signer = await Signer.generate();
    assert.deepEqual(
      await ed.getPublicKeyAsync(signer.seed),
      signer.publicKey,
      "same public key from the seed",
    );
    const data = crypto.getRandomValues(new Uint8Array(i * 37));
    const ours = await signer.sign(data);
    const theirs = await ed.signAsync(data, signer.seed);
    assert.deepEqual(ours, theirs, "Ed25519 is deterministic");
    assert.equal(await ed.verifyAsync(ours, data, signer.publicKey), true);
    assert.equal(await verify(signer.key, data, theirs), true);
    const tampered = theirs.slice();
    tampered[i % 64] ^= 1;
    assert.equal(await verify(signer.key, data, tampered), false);
    assert.equal(await ed.verifyAsync(tampered, data, signer.publicKey), false);
  }
});

Deno.test("keys: verify never throws on bad input", async () => {
  const signer = await Signer.generate();
  const data = new Uint8Array([1, 2, 3]);
  const sig = await signer.sign(data);
  const other = await Signer.generate();
  assert.equal(await verify(other.key, data, sig), false, "wrong key");
  assert.equal(await verify("ed25519:nope", data, sig), false);
  assert.equal(await verify("", data, sig), false);
  assert.equal(await verify(new Uint8Array(31), data, sig), false);
  assert.equal(await verify(signer.key, data, sig.subarray(0, 63)), false);
  assert.equal(await verify(signer.key, data, new Uint8Array(64)), false);
  assert.equal(await verify(null as unknown as string, data, sig), false);
  assert.equal(
    await verify(signer.key, "abc" as unknown as Uint8Array, sig),
    false,
  );
  // Not a point on the curve.
  assert.equal(await verify(new Uint8Array(32).fill(0xff), data, sig), false);
});

Deno.test("keys: formatKey prints the canonical form; parseKey accepts every base64 variant", () => {
  const key = formatKey(RFC_PUBLIC);
  assert.equal(key, "ed25519:11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo");
  assert.match(key, /^ed25519:[A-Za-z0-9_-]{43}$/);
  assert.deepEqual(parseKey(key), RFC_PUBLIC);
  assert.equal(isKey(key), true);
  for (
    const variant of [
      "ed25519:11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo=",
      "ed25519:11qYAYKxCrfVS/7TyWQHOg7hcvPapiMlrwIaaPcHURo=",
      "ed25519:11qYAYKxCrfVS/7TyWQHOg7hcvPapiMlrwIaaPcHURo",
    ]
  ) {
    assert.deepEqual(parseKey(variant), RFC_PUBLIC, variant);
    assert.equal(formatKey(parseKey(variant)), key, "normalizes to one string");
    assert.equal(
      isKey(variant),
      false,
      "isKey admits only the canonical string",
    );
  }
  // Non-zero unused bits: same bytes, another string; parseKey takes it.
  const noncanonical = "ed25519:11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURp";
  assert.deepEqual(parseKey(noncanonical), RFC_PUBLIC);
  assert.equal(isKey(noncanonical), false);
  for (
    const bad of [
      "ED25519:11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo",
      "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo",
      "ed25519:11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHUR", // 31 bytes
      "ed25519:11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURoAAAA", // 35 bytes
      "ed25519:11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHUR!",
      "ed25519: 11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo",
      "ed25519:",
      "",
    ]
  ) {
    assert.equal(isKey(bad), false, bad);
    assert.throws(() => parseKey(bad), /^TypeError: not an ed25519 key/, bad);
  }
  assert.throws(() => formatKey(new Uint8Array(33)), /32 bytes/);
  assert.equal(isKey(42 as unknown as string), false);
});

Deno.test("keys: nonces are fresh unpadded base64url", () => {
  const a = randomNonce();
  assert.match(a, /^[A-Za-z0-9_-]{43}$/);
  assert.notEqual(a, randomNonce());
  assert.match(randomNonce(16), /^[A-Za-z0-9_-]{22}$/);
  assert.throws(() => randomNonce(0), /invalid byte count/);
});

Deno.test("keys: Signer.fromSeed refuses a bad seed", async () => {
  await assert.rejects(Signer.fromSeed(new Uint8Array(31)), /seed is 32 bytes/);
});

Deno.test("keys: the noble fallback, in a process without WebCrypto Ed25519, agrees", async () => {
  const script = `
    const original = crypto.subtle.importKey.bind(crypto.subtle);
    crypto.subtle.importKey = (format, data, alg, ...rest) =>
      (alg?.name ?? alg) === "Ed25519" ? Promise.reject(new Error("no Ed25519 here")) : original(format, data, alg, ...rest);
    const { Signer, verify } = await import(${
    JSON.stringify(new URL("../../wire/keys.ts", import.meta.url).href)
  });
    const hex = (s) => new Uint8Array(s.match(/../g).map((b) => parseInt(b, 16)));
    const signer = await Signer.fromSeed(hex(Deno.args[0]));
    const data = new TextEncoder().encode(Deno.args[1]);
    const sig = await signer.sign(data);
    const ok = await verify(signer.key, data, hex(Deno.args[2]));
    const bad = await verify(signer.key, new Uint8Array([9]), sig);
    console.log(JSON.stringify({ key: signer.key, sig: Array.from(sig, (x) => x.toString(16).padStart(2, "0")).join(""), ok, bad }));
  `;
  const signer = await Signer.generate();
  const message = "fallback check";
  const ours = await signer.sign(new TextEncoder().encode(message));
  const config = new URL("../../deno.json", import.meta.url).pathname;
  const out = await new Deno.Command(Deno.execPath(), {
    args: [
      "eval",
      "--config",
      config,
      script,
      toHex(signer.seed),
      message,
      toHex(ours),
    ],
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
  const result = JSON.parse(new TextDecoder().decode(out.stdout));
  assert.deepEqual(result, {
    key: signer.key,
    sig: toHex(ours),
    ok: true,
    bad: false,
  });
});
