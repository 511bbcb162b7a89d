import assert from "node:assert/strict";
import { clonePlain, samePlain } from "../../wire/plain_json.ts";
import { canonicalJson } from "../../wire/canonical_json.ts";

Deno.test("clonePlain: a deep copy, as structuredClone makes", () => {
  const bytes = new Uint8Array([1, 2, 3]);
  const value = {
    key: "ed25519:a",
    caps: ["chat", "blob"],
    nested: { n: 1, ok: true, none: null, gone: undefined, list: [{ a: 1 }] },
    bytes,
    when: new Date(0),
  };
  const copy = clonePlain(value);
  assert.deepEqual(copy, structuredClone(value));
  assert.ok("gone" in copy.nested, "undefined fields are kept");
  copy.caps.push("x");
  copy.nested.list[0].a = 2;
  assert.deepEqual(value.caps, ["chat", "blob"]);
  assert.equal(value.nested.list[0].a, 1);
  assert.notEqual(copy.bytes, bytes, "typed arrays are copied too");
  assert.deepEqual([...copy.bytes], [1, 2, 3]);
  assert.equal(clonePlain(7), 7);
  assert.equal(clonePlain(null), null);
  assert.deepEqual(clonePlain([]), []);
});

Deno.test("samePlain: agrees with comparing canonical JSON texts", () => {
  const cases: Array<[unknown, unknown]> = [
    [{ a: 1, b: [1, { c: "x" }] }, { b: [1, { c: "x" }], a: 1 }],
    [{ a: 1 }, { a: 1, b: undefined }],
    [{ a: 1, b: undefined }, { a: 1 }],
    [{ a: 1 }, { a: "1" }],
    [{ a: [1, 2] }, { a: [2, 1] }],
    [{ a: [1] }, { a: { 0: 1 } }],
    [{ a: null }, { a: {} }],
    [{}, { a: 0 }],
    [[], []],
    ["x", "x"],
    [{ a: { b: { c: [true, false] } } }, { a: { b: { c: [true, false] } } }],
  ];
  for (const [a, b] of cases) {
    assert.equal(
      samePlain(a, b),
      canonicalJson(a) === canonicalJson(b),
      `${JSON.stringify(a)} vs ${JSON.stringify(b)}`,
    );
  }
  const d = new Date(0);
  assert.equal(samePlain({ d }, { d }), true, "the same object");
  assert.equal(samePlain({ d }, { d: new Date(0) }), false, "not plain data");
});
