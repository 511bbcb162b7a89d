import assert from "node:assert/strict";
import {
  encodeLine,
  LineTooLargeError,
  MAX_LINE_BYTES,
} from "../../wire/frame.ts";
import { LineReader } from "../../wire/line_reader.ts";
import { timestamp } from "../../wire/time.ts";
import { authTranscript } from "../../wire/transcript.ts";

const dec = new TextDecoder();
const enc = new TextEncoder();

Deno.test("encodeLine: UTF-8 JSON plus one newline, read back by LineReader", () => {
  const message = {
    t: "msg",
    id: "01J",
    ts: "2026-12-02T15:53:05.123Z",
    text: "héllo \u2028 \n",
  };
  const bytes = encodeLine(message);
  assert.equal(bytes[bytes.length - 1], 0x0a);
  assert.equal(
    bytes.indexOf(0x0a),
    bytes.length - 1,
    "the JSON itself holds no raw newline",
  );
  assert.deepEqual(JSON.parse(dec.decode(bytes.subarray(0, -1))), message);
  const events = new LineReader().push(bytes);
  assert.equal(events.length, 1);
  assert.ok(events[0].kind === "line");
  assert.deepEqual(JSON.parse(dec.decode(events[0].bytes)), message);
});

Deno.test("encodeLine: exactly MAX_LINE_BYTES is allowed, one more byte is refused", () => {
  const overhead = JSON.stringify({ p: "" }).length;
  const exact = encodeLine({ p: "x".repeat(MAX_LINE_BYTES - overhead) });
  assert.equal(exact.length, MAX_LINE_BYTES + 1);
  assert.throws(
    () => encodeLine({ p: "x".repeat(MAX_LINE_BYTES - overhead + 1) }),
    (e: unknown) =>
      e instanceof LineTooLargeError && e.size === MAX_LINE_BYTES + 1 &&
      /exceeds/.test(e.message),
  );
});

Deno.test("encodeLine: the limit counts UTF-8 bytes, not characters", () => {
  // 400k three-byte characters: 1.2 MB of UTF-8 in 400k UTF-16 units.
  assert.throws(
    () => encodeLine({ p: "€".repeat(400_000) }),
    LineTooLargeError,
  );
  assert.equal(encodeLine({ p: "€".repeat(300_000) }).length, 900_000 + 9);
});

Deno.test("encodeLine: refuses non-objects with a clear error", () => {
  assert.throws(
    () => encodeLine(null as unknown as object),
    /must be a JSON object/,
  );
  assert.throws(
    () => encodeLine([1, 2] as unknown as object),
    /must be a JSON object/,
  );
});

Deno.test("timestamp: RFC 3339 UTC with milliseconds", () => {
  assert.equal(
    timestamp(Date.UTC(2026, 11, 2, 15, 53, 5, 123)),
    "2026-12-02T15:53:05.123Z",
  );
  assert.equal(timestamp(0), "1970-01-01T00:00:00.000Z");
  assert.match(timestamp(), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  assert.throws(() => timestamp(NaN), /not a finite time/);
});

Deno.test("authTranscript: label, 0x00, my hello, 0x00, peer hello, bytes exact", () => {
  const mine = enc.encode('{"t":"hello","v":0,"key":"a"}');
  const theirs = enc.encode('{"v":0, "t":"hello","key":"b"}');
  const bytes = authTranscript(mine, theirs);
  assert.equal(
    dec.decode(bytes),
    `awp-auth-v0\0${dec.decode(mine)}\0${dec.decode(theirs)}`,
  );
  assert.notDeepEqual(authTranscript(theirs, mine), bytes, "order matters");
});

Deno.test("timestamp: the same text as toISOString, minute after minute", () => {
  let ms = Date.UTC(2026, 11, 31, 23, 58, 59, 990);
  for (let i = 0; i < 20_000; i++) {
    ms += [1, 7, 13, 999, 1000, 59_001][i % 6];
    assert.equal(timestamp(ms), new Date(ms).toISOString(), String(ms));
  }
  for (
    const ms of [0, -1, 1.5, 253402300799999, Date.UTC(1969, 0, 1, 0, 0, 1, 5)]
  ) {
    assert.equal(timestamp(ms), new Date(ms).toISOString(), String(ms));
  }
});
