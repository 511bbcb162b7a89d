/**
 * Micro-benchmark of Ed25519 sign and verify of an auth transcript-sized
 * payload: WebCrypto (what `wire/keys.ts` uses when available) against
 * `@noble/ed25519` (its fallback), plus the `Signer`/`verify` wrappers.
 *
 * @example
 * ```sh
 * deno bench -A bench/ed25519_bench.ts
 * ```
 *
 * @module
 */

import * as ed from "npm:@noble/ed25519@^3.2.0";
import { Signer, verify } from "../wire/keys.ts";

const ED25519 = { name: "Ed25519" };
// About the size of an auth transcript: two hello lines.
const data = crypto.getRandomValues(new Uint8Array(600));
const signer = await Signer.generate();
const seed = new Uint8Array(signer.seed);
const pair = await crypto.subtle.generateKey(ED25519, false, [
  "sign",
  "verify",
]) as CryptoKeyPair;
const webSig = new Uint8Array(
  await crypto.subtle.sign(ED25519, pair.privateKey, data),
);
const nobleSig = await ed.signAsync(data, seed);
const noblePub = await ed.getPublicKeyAsync(seed);
if (!(await ed.verifyAsync(nobleSig, data, noblePub))) {
  throw new Error("noble signature does not verify");
}
const wrapperSig = await signer.sign(data);

Deno.bench({
  name: "sign: WebCrypto",
  group: "sign",
  baseline: true,
  async fn() {
    await crypto.subtle.sign(ED25519, pair.privateKey, data);
  },
});

Deno.bench({
  name: "sign: @noble/ed25519",
  group: "sign",
  async fn() {
    await ed.signAsync(data, seed);
  },
});

Deno.bench({
  name: "sign: Signer.sign (wire/keys.ts)",
  group: "sign",
  async fn() {
    await signer.sign(data);
  },
});

Deno.bench({
  name: "verify: WebCrypto",
  group: "verify",
  baseline: true,
  async fn() {
    await crypto.subtle.verify(ED25519, pair.publicKey, webSig, data);
  },
});

Deno.bench({
  name: "verify: @noble/ed25519",
  group: "verify",
  async fn() {
    await ed.verifyAsync(nobleSig, data, noblePub);
  },
});

Deno.bench({
  name: "verify: verify() (wire/keys.ts, key string)",
  group: "verify",
  async fn() {
    await verify(signer.key, data, wrapperSig);
  },
});
