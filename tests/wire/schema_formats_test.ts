import assert from "node:assert/strict";
import { codePointLength, isDateTime } from "../../wire/schema_formats.ts";

Deno.test("codePointLength counts a surrogate pair once, a lone surrogate once", () => {
  const cases = [
    "",
    "a",
    "a😀",
    "😀😀",
    "\ud800",
    "x\ud800",
    "\udc00\ud800",
    "\ud800\udc00x",
    "abc\ud83d",
    "é🇫🇷",
  ];
  for (const text of cases) {
    assert.equal(codePointLength(text), [...text].length, JSON.stringify(text));
  }
});

Deno.test("isDateTime: the last valid text is remembered, never an invalid one", () => {
  const valid = "2026-12-03T16:00:00.123Z";
  assert.equal(isDateTime(valid), true);
  assert.equal(isDateTime(valid), true);
  assert.equal(isDateTime("2026-02-30T00:00:00Z"), false);
  assert.equal(isDateTime("2026-02-30T00:00:00Z"), false);
  assert.equal(isDateTime("2026-01-01T00:00:00"), false);
  assert.equal(isDateTime("2026-01-01 23:59:60Z"), true);
  assert.equal(isDateTime("2026-01-01T12:59:60Z"), false);
  assert.equal(isDateTime(valid), true);
});
