// The msg check without the generated validator (isPlainTextMsg) against
// the generated one: on thousands of valid and invalid msgs (one and two
// fields changed at a time), validateMessage answers exactly as the schema's
// own msg validator does, and the short check accepts only what it accepts.

import assert from "node:assert/strict";
import {
  isPlainTextMsg,
  validateMessage,
  wrapValidateFunction,
} from "../../wire/validate.ts";
import { type_msg } from "../../wire/validate_compiled.js";
import { readFrame } from "../../wire/read_frame.ts";
import { fieldChanges } from "../helpers/field_changes.ts";

const schemaMsg = wrapValidateFunction(type_msg);

const TS = "2026-01-01T00:00:00.000Z";
const BASE: Record<string, unknown> = {
  t: "msg",
  id: "01J0000000000000000000000A",
  ts: TS,
  th: "t1",
  parts: [{ k: "text", text: "hello" }],
};

/** Values each field is tried with (`undefined`: the field is left out). */
const VALUES: unknown[] = [
  undefined,
  null,
  0,
  1.5,
  true,
  "",
  "x",
  "msg",
  "ack",
  "héllo ✓ 🎉",
  [],
  {},
  TS,
  "2026-01-01T00:00:00Z",
  "2026-01-01t00:00:00+02:00",
  "2026-01-01 00:00:00Z",
  "2026-02-30T00:00:00Z",
  "2026-01-01T24:00:00Z",
  "2026-01-01",
  "not a date",
  [{ k: "text", text: "a" }],
  [{ k: "text", text: "" }, { k: "text", text: "b", extra: 1 }],
  [{ k: "text" }],
  [{ k: "text", text: 1 }],
  [{ k: "text", text: null }],
  [{ text: "no kind" }],
  [{ k: "TEXT", text: "a" }],
  [{ k: "other", text: "a" }],
  [{ k: 1, text: "a" }],
  [null],
  [[]],
  ["text"],
  [{ k: "text", text: "a" }, null],
  [{ k: "code", text: "x = 1", lang: "ts" }],
  [{ k: "code" }],
  [{ k: "data", data: { a: 1 } }],
  [{ k: "data" }],
  [{ k: "blob", ref: "r1", name: "a.txt", size: 3, sha256: "0".repeat(64) }],
  [{ k: "blob" }],
  [{ k: "text", text: "a" }, { k: "code", text: "b" }],
];

const FIELDS = ["t", "id", "ts", "th", "re", "subject", "parts", "extra"];

/** The base, every one-field change, and every two-field change. */
function cases(): Record<string, unknown>[] {
  return fieldChanges(BASE, FIELDS, VALUES);
}

Deno.test("msg validation: the short check agrees with the generated validator on every case", () => {
  let accepted = 0;
  let rejected = 0;
  let valid = 0;
  for (const value of cases()) {
    const schema = schemaMsg(value);
    // Sound: accepted only what the schema accepts.
    if (isPlainTextMsg(value)) {
      accepted++;
      assert.equal(schema.ok, true, JSON.stringify(value));
    } else rejected++;
    if (schema.ok) valid++;
    // Exact: a msg gets the same answer and errors as from the schema's
    // msg validator (any other `t` is not the short check's).
    if (value.t === "msg") {
      assert.deepEqual(validateMessage(value), schema, JSON.stringify(value));
    } else assert.equal(isPlainTextMsg(value), false);
  }
  // Both kinds were tried, and the short check took most valid text msgs.
  assert.ok(accepted > 1_000, `accepted ${accepted}`);
  assert.ok(rejected > 1_000, `rejected ${rejected}`);
  assert.ok(valid > accepted, `valid ${valid}, accepted ${accepted}`);
});

Deno.test("msg validation: readFrame of a msg line reads the same with the short check", () => {
  const encoder = new TextEncoder();
  const msgs = cases().filter((value) => value.t === "msg");
  for (const value of msgs.slice(0, 2_000)) {
    const read = readFrame(encoder.encode(JSON.stringify(value)));
    assert.ok(read.ok);
    if (!read.ok) continue;
    const schema = schemaMsg(JSON.parse(JSON.stringify(value)));
    assert.equal(read.frame.invalid, schema.ok ? undefined : schema.errors[0]);
  }
});

Deno.test("isPlainTextMsg: an object from another realm's shape, inherited fields, other types", () => {
  const inherited = Object.create({ th: "t1" });
  Object.assign(inherited, { ...BASE, th: undefined });
  delete inherited.th;
  // Read as the generated validator reads: through the prototype too.
  assert.equal(isPlainTextMsg(inherited), schemaMsg(inherited).ok);
  assert.equal(isPlainTextMsg([BASE]), false);
  assert.equal(isPlainTextMsg(null), false);
  assert.equal(isPlainTextMsg({ ...BASE, t: "state" }), false);
});
