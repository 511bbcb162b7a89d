import assert from "node:assert/strict";
import { errorText } from "../../wire/error_text.ts";

Deno.test("errorText: first line of an Error's message", () => {
  assert.equal(errorText(new Error("refused\n  at x")), "refused");
  assert.equal(errorText(new TypeError("bad")), "bad");
});

Deno.test("errorText: anything else as a string", () => {
  assert.equal(errorText("plain"), "plain");
  assert.equal(errorText(42), "42");
  assert.equal(errorText(undefined), "undefined");
  assert.equal(errorText({ toString: () => "a\nb" }), "a");
});
