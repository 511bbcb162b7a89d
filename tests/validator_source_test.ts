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
} from "../wire/validator_source.ts";

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
