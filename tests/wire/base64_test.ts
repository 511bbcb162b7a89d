import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import {
  Base64Error,
  decodeBase64,
  encodeBase64,
  encodeBase64Url,
} from "../../wire/base64.ts";

function bytesOf(seed: number, n: number): Uint8Array {
  const out = new Uint8Array(n);
  let x = seed || 1;
  for (let i = 0; i < n; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    out[i] = x & 0xff;
  }
  return out;
}

Deno.test("base64: RFC 4648 vectors in both forms", () => {
  const vectors: Array<[string, string]> = [
    ["", ""],
    ["f", "Zg=="],
    ["fo", "Zm8="],
    ["foo", "Zm9v"],
    ["foob", "Zm9vYg=="],
    ["fooba", "Zm9vYmE="],
    ["foobar", "Zm9vYmFy"],
  ];
  for (const [plain, std] of vectors) {
    const bytes = new TextEncoder().encode(plain);
    assert.equal(encodeBase64(bytes), std);
    assert.equal(encodeBase64Url(bytes), std.replace(/=+$/, ""));
    assert.deepEqual(decodeBase64(std), bytes);
    assert.deepEqual(decodeBase64(std.replace(/=+$/, "")), bytes);
  }
  assert.equal(encodeBase64(new Uint8Array([251, 255])), "+/8=");
  assert.equal(encodeBase64Url(new Uint8Array([251, 255])), "-_8");
});

Deno.test("base64: matches node's Buffer and round-trips every variant for random data", () => {
  for (let n = 0; n < 300; n++) {
    const bytes = bytesOf(n + 1, n * 7);
    const std = encodeBase64(bytes);
    const url = encodeBase64Url(bytes);
    assert.equal(std, Buffer.from(bytes).toString("base64"));
    assert.equal(url, Buffer.from(bytes).toString("base64url"));
    for (
      const text of [
        std,
        url,
        std.replace(/=+$/, ""),
        url + "=".repeat((4 - (url.length % 4)) % 4),
      ]
    ) {
      assert.deepEqual(decodeBase64(text), bytes, text);
    }
  }
  const big = bytesOf(9, 700_000);
  assert.deepEqual(decodeBase64(encodeBase64(big)), big);
});

Deno.test("base64: garbage is rejected with Base64Error", () => {
  for (
    const bad of [
      "Zm9v!",
      "Zm 9v",
      "Zm9v\n",
      "Z",
      "Zm9vY",
      "Zg=",
      "Z===",
      "=Zg=",
      "Zg==Zg==",
      "a+b_",
      "é",
      "Zm9v===",
    ]
  ) {
    assert.throws(() => decodeBase64(bad), Base64Error, JSON.stringify(bad));
  }
  assert.throws(
    () => decodeBase64("Zm9!"),
    /invalid character "!" at offset 3/,
  );
});
