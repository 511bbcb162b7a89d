import assert from "node:assert/strict";
import {
  canonicalJson,
  CanonicalJsonError,
  type JsonValue,
} from "../../wire/canonical_json.ts";
import { prng } from "../helpers/prng.ts";

const SPECIAL = [
  '"',
  "\\",
  "/",
  "\n",
  "\t",
  "\b",
  "\f",
  "\r",
  "\u0000",
  "\u001f",
  "\u007f",
  "\u2028",
  "\u2029",
  "é",
  "✓",
  "<",
  ">",
  "&",
  "\u{1F600}",
  "\uFFFF",
  "\uE000",
  "ü",
];

function randomString(rand: () => number): string {
  let s = "";
  const n = Math.floor(rand() * 12);
  for (let i = 0; i < n; i++) {
    const r = rand();
    if (r < 0.4) s += String.fromCharCode(0x20 + Math.floor(rand() * 95));
    else if (r < 0.7) s += SPECIAL[Math.floor(rand() * SPECIAL.length)];
    else {
      // Any code point outside the surrogate range.
      let cp = Math.floor(rand() * 0x110000);
      if (cp >= 0xd800 && cp <= 0xdfff) cp -= 0x800;
      s += String.fromCodePoint(cp);
    }
  }
  return s;
}

function randomValue(
  rand: () => number,
  depth: number,
  ints = false,
): JsonValue {
  const r = rand();
  if (depth > 3 || r < 0.45) {
    const k = Math.floor(rand() * 6);
    if (k === 0) return null;
    if (k === 1) return rand() < 0.5;
    if (k === 2) return Math.floor((rand() - 0.5) * 2 ** 40);
    if (k === 3 && !ints) {
      const x = (rand() - 0.5) * 10 ** Math.floor(rand() * 40 - 20);
      return Object.is(x, -0) ? 0 : x;
    }
    return randomString(rand);
  }
  if (r < 0.7) {
    return Array.from(
      { length: Math.floor(rand() * 5) },
      () => randomValue(rand, depth + 1, ints),
    );
  }
  const obj: Record<string, JsonValue> = {};
  const n = Math.floor(rand() * 6);
  for (let i = 0; i < n; i++) {
    obj[randomString(rand)] = randomValue(rand, depth + 1, ints);
  }
  return obj;
}

Deno.test("canonical JSON: sorted keys, no whitespace, minimal escaping", () => {
  const input = {
    z: 1,
    a: { y: [3, "x", null, true], b: 'q"uo\\te' },
    m: "<&> é ✓ \u2028 \u0001 \t\n\b\f\r\u007f",
    caps: ["exec", "fs:read"],
    n: -1.5e3,
  };
  assert.equal(
    canonicalJson(input),
    '{"a":{"b":"q\\"uo\\\\te","y":[3,"x",null,true]},"caps":["exec","fs:read"],"m":"<&> é ✓ \u2028 \\u0001 \\t\\n\\b\\f\\r\u007f","n":-1500,"z":1}',
  );
  assert.equal(canonicalJson("/"), '"/"', "the solidus stays unescaped");
  assert.equal(canonicalJson([]), "[]");
  assert.equal(canonicalJson({}), "{}");
  assert.equal(canonicalJson(-0), "0");
  assert.equal(canonicalJson(1e21), "1e+21");
  assert.equal(
    canonicalJson({ a: 1, b: undefined }),
    '{"a":1}',
    "undefined members are absent",
  );
});

Deno.test("canonical JSON: keys sort by code point, as Go and Python do", () => {
  // UTF-16 order would put U+1F600 (surrogates D83D..) before U+FF01.
  assert.equal(
    canonicalJson({
      "\u{1F600}": 1,
      "\uFF01": 2,
      "B": 3,
      "a": 4,
      "": 5,
      "aa": 6,
    }),
    '{"":5,"B":3,"a":4,"aa":6,"！":2,"😀":1}',
  );
});

Deno.test("canonical JSON: non-JSON values are refused with a clear error", () => {
  const cyclic: Record<string, unknown> = {};
  cyclic.self = cyclic;
  const cases: Array<[unknown, RegExp]> = [
    [NaN, /non-finite number NaN at \$/],
    [{ a: [1, Infinity] }, /non-finite number Infinity at \$\.a\[1\]/],
    [10n, /bigint is not JSON/],
    [() => 1, /function is not JSON/],
    [Symbol("x"), /symbol is not JSON/],
    [undefined, /undefined is not JSON/],
    [[undefined], /undefined at \$\[0\]/],
    [new Date(0), /non-plain object \(Date\)/],
    [new Map(), /non-plain object \(Map\)/],
    [cyclic, /cycle at \$\.self/],
    // A lone surrogate has no UTF-8 encoding: refused, in values and keys.
    ["a\uD800b", /lone surrogate at \$/],
    [{ k: "\uDC00" }, /lone surrogate at \$\.k/],
    [{ "\uD83D": 1 }, /lone surrogate/],
  ];
  for (const [value, message] of cases) {
    assert.throws(
      () => canonicalJson(value),
      (e: unknown) =>
        e instanceof CanonicalJsonError && message.test(e.message),
      String(message),
    );
  }
  // A proper pair is fine and stays literal.
  assert.equal(canonicalJson("\uD83D\uDE00"), '"😀"');
  // A shared (non-cyclic) reference is not a cycle.
  const shared = { x: 1 };
  assert.equal(
    canonicalJson({ a: shared, b: [shared] }),
    '{"a":{"x":1},"b":[{"x":1}]}',
  );
  assert.equal(
    canonicalJson(Object.assign(Object.create(null), { b: 1, a: 2 })),
    '{"a":2,"b":1}',
  );
});

Deno.test("canonical JSON: random values survive JSON.parse and canonicalization is idempotent", () => {
  for (let seed = 1; seed <= 2000; seed++) {
    const value = randomValue(prng(seed), 0);
    const text = canonicalJson(value);
    const outsideStrings = text.replace(/"(?:[^"\\]|\\.)*"/g, '""');
    assert.ok(
      !/\s/.test(outsideStrings),
      `seed ${seed}: whitespace outside strings: ${outsideStrings}`,
    );
    const back = JSON.parse(text);
    assert.deepEqual(back, value, `seed ${seed}`);
    assert.equal(canonicalJson(back), text, `seed ${seed}: not idempotent`);
    // Re-serialized with other key order and whitespace: same canonical form.
    assert.equal(
      canonicalJson(JSON.parse(JSON.stringify(back, null, 2))),
      text,
      `seed ${seed}`,
    );
  }
});

/** Why python3 cannot run here, or undefined when it can. */
function pythonMissing(): string | undefined {
  try {
    const probe = new Deno.Command("python3", {
      args: ["-c", "1"],
      stdout: "null",
      stderr: "null",
    }).outputSync();
    return probe.success ? undefined : `python3 -c 1 exited ${probe.code}`;
  } catch (error) {
    return `python3 not runnable (${
      error instanceof Error ? error.message : String(error)
    })`;
  }
}

const noPython = pythonMissing();
if (noPython) {
  console.warn(`canonical_json_test: Python cross-check ignored: ${noPython}`);
}

Deno.test({
  name:
    "canonical JSON: byte-equal to Python's json.dumps(sort_keys, compact, ensure_ascii=False)",
  ignore: noPython !== undefined,
}, async () => {
  // Integers only: float formatting legitimately differs between languages.
  const values = Array.from(
    { length: 300 },
    (_, i) => randomValue(prng(10_000 + i), 0, true),
  );
  const script =
    'import json,sys\nfor line in sys.stdin.buffer.read().decode("utf-8").split("\\n")[:-1]:\n  sys.stdout.buffer.write(json.dumps(json.loads(line), sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8") + b"\\n")\n';
  const child = new Deno.Command("python3", {
    args: ["-c", script],
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const writer = child.stdin.getWriter();
  await writer.write(
    new TextEncoder().encode(
      values.map((v) => JSON.stringify(v) + "\n").join(""),
    ),
  );
  await writer.close();
  const out = await child.output();
  assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
  const lines = new TextDecoder().decode(out.stdout).split("\n").slice(0, -1);
  assert.equal(lines.length, values.length);
  values.forEach((v, i) =>
    assert.equal(canonicalJson(v), lines[i], `value ${i}`)
  );
});
