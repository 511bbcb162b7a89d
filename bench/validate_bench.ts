/**
 * Micro-benchmark of JSON Schema validation: {@linkcode validateMessage} on
 * a typical msg, an ack, and a bad msg (the error path), plus parse+validate
 * of the raw line as the connection does it.
 *
 * @example
 * ```sh
 * deno bench -A bench/validate_bench.ts
 * ```
 *
 * @module
 */

import { validateMessage } from "../wire/validate.ts";
import { parseLine } from "../wire/parse.ts";
import { encodeLine } from "../wire/frame.ts";

const msg = {
  t: "msg",
  id: "01JDQ2X3ZQ8K9V0000000000AB",
  ts: "2026-12-02T15:53:05.123Z",
  th: "t1",
  subject: "Run the suite",
  parts: [{ k: "text", text: "x".repeat(100) }],
};
const ack = {
  t: "ack",
  id: "01JDQ2X3ZQ8K9V0000000000AC",
  ts: "2026-12-02T15:53:05.124Z",
  th: "t1",
  re: msg.id,
};
const bad = { ...msg, parts: "not a list" };
// Warm the lazily compiled validator outside the timed loop.
if (!validateMessage(msg).ok) throw new Error("bench msg must be valid");
if (validateMessage(bad).ok) throw new Error("bench bad msg must be invalid");
const line = encodeLine(msg).subarray(0, -1);

Deno.bench({
  name: "validateMessage: msg",
  group: "validate",
  baseline: true,
  fn() {
    validateMessage(msg);
  },
});

Deno.bench({
  name: "validateMessage: ack",
  group: "validate",
  fn() {
    validateMessage(ack);
  },
});

Deno.bench({
  name: "validateMessage: invalid msg",
  group: "validate",
  fn() {
    validateMessage(bad);
  },
});

Deno.bench({
  name: "parseLine + validateMessage: msg line",
  group: "validate",
  fn() {
    const r = parseLine(line);
    if (r.ok) validateMessage(r.message);
  },
});
