/**
 * The streaming SHA-256 that blobs are hashed with (`createSha256`): known
 * vectors, random lengths and split points against WebCrypto's one-shot
 * digest, large updates, and hashes updated in turns. Written for our own
 * wasm and JavaScript versions (bench/README.md, "shawasm"; not kept), so any
 * later replacement of `node:crypto` there has them to pass.
 */

import assert from "node:assert/strict";
import { createSha256 } from "../../storage/sha256.ts";

const text = (s: string) => new TextEncoder().encode(s);

async function webCryptoHex(bytes: Uint8Array): Promise<string> {
  const digest = await crypto.subtle.digest(
    "SHA-256",
    new Uint8Array(bytes),
  );
  return Array.from(
    new Uint8Array(digest),
    (b) => b.toString(16).padStart(2, "0"),
  )
    .join("");
}

/** Our hash of `bytes`, fed in pieces that end at each of `cuts`. */
async function oursHex(
  bytes: Uint8Array,
  cuts: number[] = [],
): Promise<string> {
  const hash = await createSha256();
  let start = 0;
  for (const cut of [...cuts, bytes.length]) {
    hash.update(bytes.subarray(start, cut));
    start = cut;
  }
  return hash.digest("hex");
}

/** `length` random bytes (getRandomValues fills at most 64 KiB a call). */
function randomBytes(length: number): Uint8Array {
  const bytes = new Uint8Array(length);
  for (let i = 0; i < length; i += 65536) {
    crypto.getRandomValues(bytes.subarray(i, Math.min(i + 65536, length)));
  }
  return bytes;
}

/** A deterministic generator, so a failure can be run again. */
function seeded(seed: number): () => number {
  let x = seed >>> 0 || 1;
  return () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) / 2 ** 32;
  };
}

Deno.test("sha256: the FIPS 180-2 / NIST vectors", async () => {
  const vectors: Array<[string, string]> = [
    ["", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"],
    ["abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"],
    [
      "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
      "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1",
    ],
    [
      "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu",
      "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1",
    ],
  ];
  for (const [input, expected] of vectors) {
    assert.equal(await oursHex(text(input)), expected, JSON.stringify(input));
  }
});

Deno.test("sha256: one million 'a', at once and 1,000 at a time", async () => {
  const expected =
    "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0";
  const million = new Uint8Array(1_000_000).fill(0x61);
  assert.equal(await oursHex(million), expected);
  const hash = await createSha256();
  const thousand = million.subarray(0, 1000);
  for (let i = 0; i < 1000; i++) hash.update(thousand);
  assert.equal(hash.digest("hex"), expected);
});

Deno.test("sha256: every length up to 300 bytes, whole and split in two", async () => {
  const bytes = crypto.getRandomValues(new Uint8Array(300));
  for (let length = 0; length <= 300; length++) {
    const input = bytes.subarray(0, length);
    const expected = await webCryptoHex(input);
    const whole = await oursHex(input);
    const split = await oursHex(input, [Math.floor(length / 3)]);
    assert.ok(
      whole === expected && split === expected,
      `length ${length}: ${whole} / ${split}, expected ${expected}`,
    );
  }
});

Deno.test("sha256: random lengths and split points against WebCrypto", async () => {
  const random = seeded(0x5eed);
  const source = randomBytes(200_000);
  for (let round = 0; round < 60; round++) {
    const length = Math.floor(random() * source.length);
    const input = source.subarray(0, length);
    const cuts = Array.from(
      { length: Math.floor(random() * 12) },
      () => Math.floor(random() * (length + 1)),
    ).sort((a, b) => a - b);
    const ours = await oursHex(input, cuts);
    const expected = await webCryptoHex(input);
    assert.ok(
      ours === expected,
      `round ${round}: length ${length}, cuts ${cuts.join(",")}`,
    );
  }
});

Deno.test("sha256: large updates, also after a partial block", async () => {
  const big = randomBytes(5 * 1024 * 1024 + 77);
  const expected = await webCryptoHex(big);
  assert.ok((await oursHex(big)) === expected, "one update of 5 MiB");
  assert.ok((await oursHex(big, [1])) === expected, "1 byte, then the rest");
  assert.ok((await oursHex(big, [63, 65535, 65536 + 64])) === expected);
  assert.ok(
    (await oursHex(big, [1_000_001, 4_000_003])) === expected,
    "pieces not aligned to blocks",
  );
});

Deno.test("sha256: hashes that take turns keep their own state", async () => {
  const first = randomBytes(70_001);
  const second = randomBytes(90_017);
  const a = await createSha256();
  const b = await createSha256();
  for (let offset = 0; offset < second.length; offset += 1009) {
    a.update(first.subarray(offset, offset + 1009));
    b.update(second.subarray(offset, offset + 1009));
  }
  assert.equal(a.digest("hex"), await webCryptoHex(first));
  assert.equal(b.digest("hex"), await webCryptoHex(second));
});

Deno.test("sha256: a digested hash takes no more bytes", async () => {
  const hash = await createSha256();
  hash.update(text("abc"));
  hash.digest("hex");
  assert.throws(() => hash.update(text("d")));
  assert.throws(() => hash.digest("hex"));
});
