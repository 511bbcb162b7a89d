import assert from "node:assert/strict";
import { parseLine } from "../../wire/parse.ts";
import { encodeLine } from "../../wire/frame.ts";
import { LineReader } from "../../wire/line_reader.ts";
import {
  createMsg,
  createPing,
  dataPart,
  textPart,
} from "../../wire/messages.ts";
import { validateMessage } from "../../wire/validate.ts";

const enc = new TextEncoder();

function badDetail(bytes: Uint8Array): string {
  const result = parseLine(bytes);
  assert.equal(result.ok, false, `expected bad_frame for ${bytes}`);
  if (result.ok) throw new Error("unreachable");
  assert.equal(result.code, "bad_frame");
  assert.ok(
    !/[\r\n]/.test(result.detail),
    `multi-line detail: ${result.detail}`,
  );
  assert.ok(
    result.detail.length > 0 && result.detail.length <= 200,
    result.detail,
  );
  return result.detail;
}

Deno.test("parseLine: invalid UTF-8 is a bad frame", () => {
  const lines = [
    new Uint8Array([0x7b, 0xff, 0x7d]), // stray byte
    new Uint8Array([0x7b, 0x22, 0xc3, 0x22, 0x7d]), // truncated sequence
    new Uint8Array([0xed, 0xa0, 0x80]), // UTF-16 surrogate
    new Uint8Array([0xc0, 0xaf]), // overlong "/"
  ];
  for (const line of lines) {
    assert.equal(badDetail(line), "line is not valid UTF-8");
  }
});

Deno.test("parseLine: non-JSON is a bad frame", () => {
  for (
    const text of [
      "",
      "hello",
      "{",
      '{"t":"ping",}',
      "{'t':'ping'}",
      "\ufeff{}",
    ]
  ) {
    assert.match(badDetail(enc.encode(text)), /^line is not JSON: /, text);
  }
  // A detail stays one line even when the input holds control characters.
  assert.match(badDetail(enc.encode('{"t":\r"x\n')), /^line is not JSON/);
});

Deno.test("parseLine: JSON that is not an object is a bad frame", () => {
  const cases: Array<[string, string]> = [
    ["[]", "line is an array, not a JSON object"],
    ['[{"t":"ping"}]', "line is an array, not a JSON object"],
    ["null", "line is null, not a JSON object"],
    ["42", "line is a number, not a JSON object"],
    ['"msg"', "line is a string, not a JSON object"],
    ["true", "line is a boolean, not a JSON object"],
  ];
  for (const [text, detail] of cases) {
    assert.equal(badDetail(enc.encode(text)), detail);
  }
});

Deno.test("parseLine: objects need a string t", () => {
  assert.equal(badDetail(enc.encode("{}")), "line has no t field");
  assert.equal(badDetail(enc.encode('{"id":"1"}')), "line has no t field");
  assert.equal(
    badDetail(enc.encode('{"t":1}')),
    "line's t is a number, not a string",
  );
  assert.equal(
    badDetail(enc.encode('{"t":null}')),
    "line's t is null, not a string",
  );
  assert.equal(
    badDetail(enc.encode('{"t":["msg"]}')),
    "line's t is an array, not a string",
  );
  assert.equal(
    badDetail(enc.encode('{"t":{}}')),
    "line's t is an object, not a string",
  );
});

Deno.test("parseLine: does not validate the schema", () => {
  const result = parseLine(enc.encode('{"t":"msg","extra":true}'));
  assert.ok(result.ok);
  assert.deepEqual(result.message, { t: "msg", extra: true });
  assert.equal(validateMessage(result.message).ok, false);
});

Deno.test("parseLine: keeps the raw text, tolerates a trailing CR", () => {
  const text = '{"t":"ping","id":"1","ts":"2026-01-01T00:00:00Z","x":"é漢😀"}';
  const result = parseLine(enc.encode(text + "\r"));
  assert.ok(result.ok);
  assert.equal(result.raw, text + "\r");
  assert.equal(result.message.x, "é漢😀");
});

Deno.test("round trip: createMsg → encodeLine → parseLine", () => {
  const msg = createMsg({
    id: "01J9ZZZ",
    th: "thr_1",
    subject: 'Quotes " and \\ and\nnewlines',
    parts: [textPart("héllo 😀"), dataPart({ n: [1, 2.5, null], s: "\u2028" })],
  });
  const bytes = encodeLine(msg);
  assert.equal(bytes.at(-1), 0x0a);
  const result = parseLine(bytes.subarray(0, -1));
  assert.ok(result.ok);
  assert.deepEqual(result.message, msg);
  assert.deepEqual(validateMessage(result.message), { ok: true });
});

Deno.test("round trip: lines across a real TCP connection", async () => {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const sent = [
    createPing({ id: "1" }),
    createMsg({ id: "2", th: "t", parts: [textPart("x".repeat(100_000))] }),
    createPing({ id: "3" }),
  ];
  const accepting = listener.accept();
  const client = await Deno.connect({
    hostname: "127.0.0.1",
    port: listener.addr.port,
  });
  const server = await accepting;
  const writing = (async () => {
    for (const m of sent) {
      const bytes = encodeLine(m);
      let off = 0;
      while (off < bytes.length) off += await client.write(bytes.subarray(off));
    }
    await client.write(enc.encode("not json\n"));
    client.close();
  })();
  const reader = new LineReader();
  const got: unknown[] = [];
  const details: string[] = [];
  const buf = new Uint8Array(4096);
  while (true) {
    const n = await server.read(buf);
    if (n === null) break;
    for (const event of reader.push(buf.subarray(0, n))) {
      assert.equal(event.kind, "line");
      if (event.kind !== "line") continue;
      const result = parseLine(event.bytes);
      if (result.ok) got.push(result.message);
      else details.push(result.detail);
    }
  }
  await writing;
  server.close();
  listener.close();
  assert.deepEqual(got, sent);
  assert.equal(details.length, 1);
  assert.match(details[0], /^line is not JSON/);
});

Deno.test("parseLine: short ASCII lines and UTF-8 ones give the decoder's text", () => {
  const encoder = new TextEncoder();
  for (
    const text of [
      '{"t":"ping","id":"1","ts":"x"}',
      '{"t":"msg","text":"héllo ✓ 🎉"}',
      `{"t":"msg","text":"${"a".repeat(3000)}"}`,
      `{"t":"msg","text":"${"é".repeat(1500)}"}`,
    ]
  ) {
    const r = parseLine(encoder.encode(text));
    assert.ok(r.ok);
    assert.equal(r.raw, text);
  }
  // Not UTF-8, short or long: still refused.
  for (const n of [10, 3000]) {
    const bytes = encoder.encode(`{"t":"${"a".repeat(n)}"}`);
    bytes[3] = 0xff;
    const r = parseLine(bytes);
    assert.ok(!r.ok && /UTF-8/.test(r.detail));
  }
});
