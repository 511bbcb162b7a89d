import assert from "node:assert/strict";
import { readFrame } from "../../wire/read_frame.ts";

const enc = new TextEncoder();
const ID = "01J00000000000000000000000";
const TS = "2026-01-01T00:00:00.000Z";

function read(value: unknown) {
  return readFrame(enc.encode(JSON.stringify(value)));
}

Deno.test("readFrame: a valid line is a typed frame with its exact text and size", () => {
  const line = JSON.stringify({ t: "ping", id: ID, ts: TS });
  const r = readFrame(enc.encode(line));
  assert.ok(r.ok);
  assert.equal(r.frame.message.t, "ping");
  assert.equal(r.frame.raw, line);
  assert.equal(r.frame.size, enc.encode(line).length);
  assert.equal(r.frame.invalid, undefined);
});

Deno.test("readFrame: not JSON, not an object, or no string t is a bad frame", () => {
  for (const bytes of ["{", "[1]", '{"t":1}', "{}"]) {
    const r = readFrame(enc.encode(bytes));
    assert.equal(r.ok, false, bytes);
  }
});

Deno.test("readFrame: a line off its schema is still a frame, with the first error", () => {
  const r = read({ t: "msg", id: ID, ts: TS, th: "t1" }); // no parts
  assert.ok(r.ok);
  assert.equal(typeof r.frame.invalid, "string");
  // An unknown type is checked as an envelope only (SPEC 5: ignored).
  const unknown = read({ t: "novel", id: ID, ts: TS });
  assert.ok(unknown.ok);
  assert.equal(unknown.frame.invalid, undefined);
});

Deno.test("readFrame: a chunk's data is decoded once and dropped from the text", () => {
  const data = btoa("hello chunk");
  const r = read({
    t: "chunk",
    id: ID,
    ts: TS,
    th: "t1",
    ref: "sha256:" + "a".repeat(64),
    seq: 0,
    data,
    last: true,
  });
  assert.ok(r.ok);
  assert.equal(new TextDecoder().decode(r.frame.bytes), "hello chunk");
  assert.equal((r.frame.message as { data: string }).data, "");
  assert.ok(!r.frame.raw.includes(data));
  assert.ok(r.frame.size > r.frame.raw.length);
});
