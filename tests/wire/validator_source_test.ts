/**
 * The precompiled schema validator (wire/validate_compiled.js) is what the
 * generator makes from today's schema: a stale file fails here, and
 * `deno task build:validator` mends it.
 */

import assert from "node:assert/strict";
import {
  COMPILED_VALIDATOR_URL,
  validatorDeclarations,
  validatorSource,
} from "../../wire/validator_source.ts";
import { createValidator } from "../../wire/create_validator.ts";
import { codePointLength, isDateTime } from "../../wire/schema_formats.ts";

Deno.test("validate_compiled.js is generated from the current schema", async () => {
  const onDisk = await Deno.readTextFile(COMPILED_VALIDATOR_URL);
  assert.ok(
    onDisk === validatorSource(),
    "wire/validate_compiled.js is stale: run `deno task build:validator`",
  );
  const declarations = await Deno.readTextFile(
    new URL("validate_compiled.d.ts", COMPILED_VALIDATOR_URL),
  );
  assert.equal(declarations, validatorDeclarations());
});

Deno.test("our date-time and length checks agree with ajv-formats and ajv", () => {
  const cases = [
    "2026-01-01T00:00:00Z",
    "2026-01-01t00:00:00z",
    "2026-01-01 00:00:00.123+02:00",
    "2026-01-01T00:00:00",
    "2026-01-01T00:00:00+0200",
    "2026-01-01T00:00:00+02",
    "2026-01-01T00:00:00+24:00",
    "2026-01-01T00:00:00+02:60",
    "2024-02-29T12:00:00Z",
    "2023-02-29T12:00:00Z",
    "1900-02-29T12:00:00Z",
    "2000-02-29T12:00:00Z",
    "2026-04-31T12:00:00Z",
    "2026-13-01T12:00:00Z",
    "2026-00-10T12:00:00Z",
    "2026-01-00T12:00:00Z",
    "2026-12-31T23:59:60Z",
    "2026-12-31T23:59:60.5Z",
    "2026-12-31T22:59:60Z",
    "2026-12-31T22:59:60-01:00",
    "2027-01-01T00:59:60+01:00",
    "2026-12-31T24:00:00Z",
    "2026-12-31T23:60:00Z",
    "2026-12-31T23:59:61Z",
    "2026-12-31TT23:59:59Z",
    "2026-12-31",
    "x2026-12-31T23:59:59Z",
    "2026-12-31T23:59:59Zx",
    "",
  ];
  const theirs = createValidator({ type: "string", format: "date-time" });
  for (const text of cases) {
    assert.equal(isDateTime(text), theirs(text).ok, text);
  }
  const length = createValidator({ type: "string", maxLength: 2 });
  for (
    const text of [
      "ab",
      "abc",
      "a😀",
      "😀😀",
      "😀😀😀",
      "\ud800a",
      "\ud800\ud800\ud800",
    ]
  ) {
    assert.equal(
      codePointLength(text) <= 2,
      length(text).ok,
      JSON.stringify(text),
    );
  }
});

Deno.test("lines with no object or no string t get the whole schema's errors", async () => {
  // The root Message is not compiled in (its code repeats every type's):
  // validateMessage answers these lines itself, as ajv would.
  const { validateMessage } = await import("../../wire/validate.ts");
  const schema = JSON.parse(
    await Deno.readTextFile(
      new URL("../../schema/awp.schema.json", import.meta.url),
    ),
  );
  const whole = createValidator(schema);
  const lines: unknown[] = [
    null,
    0,
    "ping",
    true,
    [],
    [{ t: "ping" }],
    {},
    { id: "1", ts: "2026-01-01T00:00:00Z" },
    { t: 5 },
    { t: null },
    { t: true, id: 3 },
    { t: ["ping"] },
    { t: { t: "ping" } },
  ];
  for (const line of lines) {
    const theirs = whole(line);
    assert.equal(theirs.ok, false, JSON.stringify(line));
    assert.deepEqual(validateMessage(line), theirs, JSON.stringify(line));
  }
});
