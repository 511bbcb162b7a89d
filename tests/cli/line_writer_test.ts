import assert from "node:assert/strict";
import { LineWriter } from "../../cli/line_writer.ts";

function sink() {
  const writes: Array<{ sync: boolean; text: string }> = [];
  const decoder = new TextDecoder();
  return {
    writes,
    write(bytes: Uint8Array) {
      writes.push({ sync: false, text: decoder.decode(bytes) });
      return Promise.resolve(bytes.length);
    },
    writeSync(bytes: Uint8Array) {
      writes.push({ sync: true, text: decoder.decode(bytes) });
      return bytes.length;
    },
  };
}

Deno.test("line writer: the lines of one turn go out in one write, a small one synchronously, marks after it", async () => {
  const s = sink();
  const marks: number[] = [];
  const out = new LineWriter(s, (m) => marks.push(m));
  out.push('{"a":1}', 3);
  out.push('{"b":2}', 7);
  out.push('{"c":3}');
  assert.equal(s.writes.length, 0, "not before the turn ends");
  await out.flush();
  assert.deepEqual(s.writes, [{
    sync: true,
    text: '{"a":1}\n{"b":2}\n{"c":3}\n',
  }]);
  assert.deepEqual(marks, [7]);
  const big = "x".repeat(20_000);
  out.push(big);
  await out.flush();
  assert.deepEqual(s.writes.at(-1), { sync: false, text: big + "\n" });
});

Deno.test("line writer: a stream without writeSync is written asynchronously; a broken one stops it", async () => {
  const written: string[] = [];
  let fail = false;
  const out = new LineWriter({
    write(bytes) {
      if (fail) return Promise.reject(new Error("gone"));
      written.push(new TextDecoder().decode(bytes));
      return Promise.resolve(bytes.length);
    },
  });
  out.push("one");
  await out.flush();
  fail = true;
  out.push("two");
  await out.flush();
  fail = false;
  out.push("three"); // the reader went away: nothing more is written
  await out.flush();
  assert.deepEqual(written, ["one\n"]);
});
