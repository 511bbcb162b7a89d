/**
 * The plain line reader takes exactly the lines the generic path (readFrame)
 * finds valid pings or acks, with the same frame; its schema check agrees
 * with the generated validators on thousands of values; the plain pong is
 * the generic encoder's bytes.
 */
import assert from "node:assert/strict";
import {
  isPlainPingOrAck,
  plainPongLine,
  readPlainLine,
} from "../../wire/plain_line.ts";
import { readFrame } from "../../wire/read_frame.ts";
import { encodeTextLine } from "../../wire/frame.ts";
import { wrapValidateFunction } from "../../wire/validate.ts";
import { type_ack, type_ping } from "../../wire/validate_compiled.js";
import { fieldChanges } from "../helpers/field_changes.ts";

const enc = new TextEncoder();
const ping = (id: string, ts: string) =>
  `{"t":"ping","id":"${id}","ts":"${ts}"}`;

const LINES = [
  ping("01J0000000000000000000000A", "2026-12-07T19:00:00.000Z"),
  ping("x", "2026-12-07T19:00:00Z"),
  ping("x", "2026-12-07T19:00:00.1234567Z"),
  ping("x", "2024-02-29T00:00:00.000Z"),
  ping("x", "2023-02-29T00:00:00.000Z"), // not a leap year
  ping("x", "2026-04-31T00:00:00.000Z"),
  ping("x", "2026-13-01T00:00:00.000Z"),
  ping("x", "2026-12-07T24:00:00.000Z"),
  ping("x", "2026-12-07T23:60:00.000Z"),
  ping("x", "2016-12-31T23:59:60Z"), // a leap second: valid
  ping("x", "2026-12-07T23:59:60Z"),
  ping("x", "2026-12-07T19:00:00.Z"),
  ping("x", "2026-12-07T19:00:00.000z"),
  ping("x", "2026-12-07t19:00:00.000Z"),
  ping("x", "2026-12-07T19:00:00.000+01:00"),
  ping("x", "2026-12-07 19:00:00Z"),
  ping("x", "2026-12-07T19:00:00.00aZ"),
  ping("x", "2026-12-07"),
  ping("x", ""),
  ping("", "2026-12-07T19:00:00.000Z"),
  ping('a\\"b', "2026-12-07T19:00:00.000Z"),
  ping("a\\u0041", "2026-12-07T19:00:00.000Z"),
  ping("é", "2026-12-07T19:00:00.000Z"),
  '{"t":"ping","id":"x","ts":"2026-12-07T19:00:00.000Z","n":1}',
  '{"t":"ping","ts":"2026-12-07T19:00:00.000Z","id":"x"}',
  '{"t":"ping","id":"x","ts":"2026-12-07T19:00:00.000Z"} ',
  '{"t":"ping","id":"x","ts":"2026-12-07T19:00:00.000Z"',
  '{"t":"ping","id":"x"}',
  '{"t":"pong","id":"x","ts":"2026-12-07T19:00:00.000Z"}',
];

/** How many of `lines` the generic path finds valid lines of type `t`. */
function countValid(lines: string[], t: string): number {
  return lines.filter((line) => {
    const slow = readFrame(enc.encode(line));
    return slow.ok && slow.frame.invalid === undefined &&
      slow.frame.message.t === t;
  }).length;
}

/**
 * How many of `lines` the plain reader takes, asserting that each one it
 * takes is a valid line of type `t` to the generic path, with the same
 * frame.
 */
function countPlainMatchingGeneric(lines: string[], t: string): number {
  let plain = 0;
  for (const line of lines) {
    const bytes = enc.encode(line);
    const fast = readPlainLine(bytes);
    if (fast === undefined) continue;
    plain++;
    const slow = readFrame(bytes);
    assert.ok(slow.ok, line);
    assert.equal(slow.frame.invalid, undefined, line);
    assert.equal(slow.frame.message.t, t, line);
    assert.deepEqual(fast.message, slow.frame.message, line);
    assert.equal(fast.raw, slow.frame.raw, line);
    assert.equal(fast.size, slow.frame.size, line);
  }
  return plain;
}

Deno.test("a plain ping is read as the generic path reads it, or left to it", () => {
  // Sixteen are valid pings: the usual UTC form, the rest the schema's
  // date-time check accepts (leap seconds, a lower-case t or z, a space, an
  // offset), escapes and non-ASCII in the id, an extra field, another key
  // order, trailing white space. The plain reader takes each of them.
  assert.equal(countValid(LINES, "ping"), 16);
  assert.equal(countPlainMatchingGeneric(LINES, "ping"), 16);
});

Deno.test("every valid ping takes the plain path", () => {
  for (const line of LINES) {
    const bytes = enc.encode(line);
    const slow = readFrame(bytes);
    if (slow.ok && slow.frame.invalid === undefined) {
      assert.ok(readPlainLine(bytes), line);
    }
  }
});

const ack = (id: string, ts: string, th: string, re: string) =>
  `{"t":"ack","id":"${id}","ts":"${ts}","th":"${th}","re":"${re}"}`;
const TS = "2026-12-07T19:00:00.000Z";

const ACKS = [
  ack("01J0000000000000000000000B", TS, "t1", "01J0000000000000000000000A"),
  ack("x", "2026-12-07T19:00:00Z", "thread with spaces", "y"),
  ack("x", TS, "", "y"), // the schema asks no length of th or re
  ack("x", TS, "t", ""),
  ack("", TS, "t", "y"),
  ack("x", "2026-02-30T00:00:00Z", "t", "y"),
  ack("x", TS, "t\\u0041", "y"),
  ack("x", TS, 't\\"', "y"),
  ack("x", TS, "é", "y"),
  ack("x", TS, "t", "y").replace("}", ',"n":1}'),
  '{"t":"ack","id":"x","ts":"2026-12-07T19:00:00.000Z","re":"y","th":"t"}',
  '{"t":"ack","id":"x","ts":"2026-12-07T19:00:00.000Z","th":"t"}',
  '{"t":"ack","id":"x","ts":"2026-12-07T19:00:00.000Z","th":"t","re":"y"',
  '{"t":"ack","id":"x","ts":"2026-12-07T19:00:00.000Z","th":"t","re":"y"}}',
  '{"t":"acks","id":"x","ts":"2026-12-07T19:00:00.000Z","th":"t","re":"y"}',
  '{"t":"a',
  "",
];

Deno.test("a plain ack is read as the generic path reads it, or left to it", () => {
  // Nine are valid acks: the usual form, spaces in th, an empty th, an
  // empty re, escapes and non-ASCII in th, an extra field, another key
  // order. The plain reader takes each of them.
  assert.equal(countValid(ACKS, "ack"), 9);
  assert.equal(countPlainMatchingGeneric(ACKS, "ack"), 9);
});

Deno.test("the plain ping and ack check agrees with the generated validators", () => {
  const schema = {
    ping: wrapValidateFunction(type_ping),
    ack: wrapValidateFunction(type_ack),
  };
  const values: unknown[] = [
    undefined,
    null,
    0,
    true,
    "",
    "x",
    "ping",
    "ack",
    "é",
    [],
    {},
    TS,
    "2026-12-07T19:00:00Z",
    "2016-12-31T23:59:60Z",
    "2026-02-30T00:00:00Z",
    "2026-12-07",
  ];
  const fields = ["t", "id", "ts", "th", "re", "n"];
  let taken = 0;
  let valid = 0;
  for (const t of ["ping", "ack"] as const) {
    const base: Record<string, unknown> = {
      t,
      id: "x",
      ts: TS,
      th: "t",
      re: "y",
    };
    const cases = fieldChanges(base, fields, values);
    for (const value of cases) {
      const fast = isPlainPingOrAck(value);
      const typed = value.t === "ping" || value.t === "ack"
        ? schema[value.t](value).ok
        : false;
      assert.equal(fast, typed, JSON.stringify(value));
      if (fast) taken++;
      if (typed) valid++;
    }
  }
  assert.equal(taken, valid);
  assert.ok(taken > 1_000, `taken ${taken}`);
});

Deno.test("a plain pong is the generic encoder's bytes", () => {
  const fields = {
    id: "01J0000000000000000000000B",
    ts: "2026-12-07T19:00:00.000Z",
    re: "01J0000000000000000000000A",
  };
  const pong = plainPongLine(fields.id, fields.ts, fields.re);
  const generic = encodeTextLine({ t: "pong", ...fields });
  assert.ok(pong);
  assert.equal(pong.text, generic.text);
  assert.deepEqual(pong.bytes, generic.bytes);
  assert.equal(plainPongLine(fields.id, fields.ts, 'a"b'), undefined);
  assert.equal(plainPongLine(fields.id, fields.ts, "a\\b"), undefined);
  assert.equal(plainPongLine(fields.id, fields.ts, "é"), undefined);
});
