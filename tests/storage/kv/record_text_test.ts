/**
 * Records wait for their commit as JSON text (`storage/kv/record_text.ts`):
 * their UTF-8 length is known without encoding, the commit encodes them
 * into one reused buffer, and what Deno KV holds reads back as the record.
 */

import assert from "node:assert/strict";
import { GroupCommitter } from "../../../storage/kv/group_committer.ts";
import { DenoKvBackend } from "../../../storage/kv/kv_backend.ts";
import {
  RecordEncoder,
  RecordText,
  utf8Length,
} from "../../../storage/kv/record_text.ts";
import { readRecord } from "../../../storage/kv/split_record.ts";

Deno.test("utf8Length is TextEncoder's length, surrogates and lone halves included", () => {
  const utf8 = new TextEncoder();
  const samples = [
    "",
    "plain ascii",
    "é",
    "€uro",
    "😀",
    "a\ud800b", // lone high surrogate
    "\udc00", // lone low surrogate
    "\ud800", // lone high at the end
    JSON.stringify({ t: "msg", text: "日本語 and 😀 \u0000 \u007f \u0080" }),
  ];
  for (let i = 0; i < 200; i++) {
    let s = "";
    for (let j = 0; j < 20; j++) {
      s += String.fromCharCode(Math.floor(Math.random() * 0x10000));
    }
    samples.push(s);
  }
  for (const s of samples) {
    assert.equal(utf8Length(s), utf8.encode(s).byteLength, JSON.stringify(s));
  }
});

Deno.test("RecordEncoder: one buffer per commit, reused, each record its exact bytes", () => {
  const encoder = new RecordEncoder();
  const a = RecordText.of({ a: "é" });
  const b = RecordText.of({ b: [1, 2, "😀"] });
  const first = encoder.take([{ value: a }, { value: 1 }, { value: b }]);
  const bytesA = first.encode(a);
  const bytesB = first.encode(b);
  assert.equal(bytesA.buffer, bytesB.buffer, "views of one buffer");
  assert.deepEqual(JSON.parse(new TextDecoder().decode(bytesA)), { a: "é" });
  assert.deepEqual(JSON.parse(new TextDecoder().decode(bytesB)), {
    b: [1, 2, "😀"],
  });
  encoder.give(first);
  const second = encoder.take([{ value: a }]);
  assert.equal(second.buffer, first.buffer, "reused once given back");
  // Not given back yet: a commit overlapping it gets a buffer of its own.
  const third = encoder.take([{ value: b }]);
  assert.notEqual(third.buffer, second.buffer);
  // A wrong length is refused, never truncated.
  assert.throws(
    () => third.encode(new RecordText('"é"', 3)),
    /does not fit its UTF-8 length/,
  );
});

Deno.test("records written as text read back from the overlay and from Deno KV", async () => {
  const kv = await Deno.openKv(":memory:");
  const committer = new GroupCommitter(new DenoKvBackend(kv));
  try {
    const big = "x".repeat(70_000); // split into parts: stays bytes
    const during = committer.submit(false, async (tx) => {
      await tx.putRecord(["r", "small"], { text: "héllo 😀" });
      await tx.putRecord(["r", "big"], { big });
      // Read back in the same transaction, before any commit.
      return await tx.getRecord(["r", "small"]);
    });
    assert.deepEqual(await during, { text: "héllo 😀" });
    const raw = await kv.get(["r", "small"]);
    assert.ok(raw.value instanceof Uint8Array, "stored as UTF-8 bytes");
    assert.deepEqual(await readRecord(committer.backend, ["r", "small"]), {
      text: "héllo 😀",
    });
    assert.deepEqual(await readRecord(committer.backend, ["r", "big"]), {
      big,
    });
  } finally {
    committer.close();
  }
});
