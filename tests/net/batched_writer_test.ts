import assert from "node:assert/strict";
import { BATCH_BYTES, BatchedWriter } from "../../net/batched_writer.ts";

/** A sink whose writes wait until released, taking at most `take` bytes. */
function gatedSink(take = Infinity) {
  const writes: Uint8Array[] = [];
  let release: (() => void) | undefined;
  let fail: Error | undefined;
  return {
    writes,
    failNext(error: Error) {
      fail = error;
    },
    release() {
      release?.();
    },
    async write(bytes: Uint8Array): Promise<number> {
      await new Promise<void>((r) => release = r);
      if (fail) throw fail;
      const n = Math.min(take, bytes.length);
      writes.push(bytes.slice(0, n));
      return n;
    },
  };
}

async function drain(
  sink: ReturnType<typeof gatedSink>,
  writer: BatchedWriter,
) {
  while (writer.writing) {
    sink.release();
    await new Promise((r) => setTimeout(r, 0));
  }
}

Deno.test("frames queued during a write go out as one batch, in order, each resolved once written", async () => {
  const sink = gatedSink();
  const writer = new BatchedWriter(sink, { onFail() {} });
  const order: number[] = [];
  const first = writer.write(new Uint8Array([1])).then(() => order.push(1));
  const rest = [2, 3, 4].map((n) =>
    writer.write(new Uint8Array([n])).then(() => order.push(n))
  );
  await drain(sink, writer);
  await Promise.all([first, ...rest, writer.flush()]);
  assert.deepEqual(sink.writes.map((w) => [...w]), [[1], [2, 3, 4]]);
  assert.deepEqual(order, [1, 2, 3, 4]);
});

Deno.test("a batch is cut at BATCH_BYTES (at least one frame), and a short write is continued", async () => {
  const sink = gatedSink(BATCH_BYTES / 8);
  const writer = new BatchedWriter(sink, { onFail() {} });
  const half = BATCH_BYTES / 2 + 1;
  const quarter = BATCH_BYTES / 4;
  const sizes = [
    1,
    half,
    half,
    quarter,
    quarter,
    quarter,
    quarter,
    2 * BATCH_BYTES,
  ];
  const all = sizes.map((n) => writer.write(new Uint8Array(n)));
  await drain(sink, writer);
  await Promise.all(all);
  // Rebuild the batches from the short writes (each at most BATCH_BYTES / 8).
  const total = sink.writes.reduce((n, w) => n + w.length, 0);
  assert.equal(total, sizes.reduce((a, b) => a + b, 0));
  assert.ok(sink.writes.every((w) => w.length <= BATCH_BYTES / 8));
  // 1 alone (the loop starts at once); half + half > BATCH_BYTES, so apart;
  // the second half takes one quarter along, the other three fill the next;
  // the oversized frame goes alone.
  const batches: number[] = [];
  let left = 0;
  for (const w of sink.writes) {
    if (left === 0) {
      const next = [1, half, half + quarter, 3 * quarter, 2 * BATCH_BYTES][
        batches.length
      ];
      batches.push(next);
      left = next;
    }
    left -= w.length;
    assert.ok(left >= 0, "a write crossed a batch boundary");
  }
  assert.equal(left, 0);
  assert.equal(batches.length, 5);
});

Deno.test("encode shapes queued items but not raw ones", async () => {
  const sink = gatedSink();
  const writer = new BatchedWriter(sink, {
    encode: (b) => new Uint8Array([0, ...b]),
    onFail() {},
  });
  const done = [
    writer.write(new Uint8Array([7])),
    writer.write(new Uint8Array([8]), true),
  ];
  await drain(sink, writer);
  await Promise.all(done);
  assert.deepEqual(sink.writes.map((w) => [...w]), [[0, 7], [8]]);
});

Deno.test("a failed write rejects every queued frame with one line, tells the owner, wakes flush", async () => {
  const sink = gatedSink();
  const failures: string[] = [];
  const writer = new BatchedWriter(sink, {
    onFail: (e) => failures.push(e.message),
  });
  const results = [1, 2].map((n) =>
    writer.write(new Uint8Array([n])).then(() => "ok", (e) => e.message)
  );
  const flushed = writer.flush();
  sink.failNext(new Error("broken pipe\nmore detail"));
  await drain(sink, writer);
  await flushed;
  assert.deepEqual(await Promise.all(results), [
    "write failed: broken pipe",
    "write failed: broken pipe",
  ]);
  assert.deepEqual(failures, ["write failed: broken pipe"]);
  assert.equal(writer.closed, true);
  await assert.rejects(writer.write(new Uint8Array([3])), /transport closed/);
});

Deno.test("fail() by the owner rejects what is queued once and reports whether it stopped the writer", async () => {
  const sink = gatedSink();
  let told = 0;
  const writer = new BatchedWriter(sink, { onFail: () => told++ });
  const pending = writer.write(new Uint8Array([1]));
  assert.equal(writer.fail(new Error("transport closed")), true);
  assert.equal(writer.fail(new Error("again")), false);
  await assert.rejects(pending, /transport closed/);
  sink.release();
  await writer.flush();
  assert.equal(told, 0);
});

/** A sink that takes every write at once, recording each call. */
function immediateSink() {
  const writes: number[][] = [];
  return {
    writes,
    write(bytes: Uint8Array): Promise<number> {
      writes.push([...bytes]);
      return Promise.resolve(bytes.length);
    },
  };
}

Deno.test("a line right after a write goes at once until holdBursts is on (a handshake's lines never wait)", async () => {
  const sink = immediateSink();
  const writer = new BatchedWriter(sink, { onFail() {} });
  await writer.write(new Uint8Array([1]));
  const second = writer.write(new Uint8Array([2]));
  // Written before write() returned: no timer in between.
  assert.deepEqual(sink.writes, [[1], [2]]);
  await second;
});

Deno.test("with holdBursts on, lines asked within a burst wait for the end of the turn and share one write", async () => {
  const sink = immediateSink();
  // A wide burst window: a loaded machine may pause between two lines.
  const writer = new BatchedWriter(sink, { onFail() {}, burstMs: 60_000 });
  writer.holdBursts(true);
  await writer.write(new Uint8Array([1])); // the first line: at once
  assert.deepEqual(sink.writes, [[1]]);
  const b = writer.write(new Uint8Array([2]));
  assert.deepEqual(sink.writes, [[1]], "held: it came right after a write");
  await Promise.resolve();
  const c = writer.write(new Uint8Array([3])); // a later microtask
  await Promise.all([b, c]);
  assert.deepEqual(sink.writes, [[1], [2, 3]]);
  writer.holdBursts(false);
  const d = writer.write(new Uint8Array([4]));
  assert.deepEqual(sink.writes, [[1], [2, 3], [4]]);
  await d;
});

Deno.test("corked, the lines queued go out in one write at the last uncork; a lone line is not held", async () => {
  const sink = immediateSink();
  const writer = new BatchedWriter(sink, { onFail() {} });
  writer.cork();
  writer.cork(); // nested: only the outer uncork writes
  const page = [1, 2, 3].map((b) => writer.write(new Uint8Array([b])));
  assert.deepEqual(sink.writes, [], "held while corked");
  writer.uncork();
  assert.deepEqual(sink.writes, [], "still one cork");
  writer.uncork();
  await Promise.all(page);
  assert.deepEqual(sink.writes, [[1, 2, 3]]);
  writer.uncork(); // one too many: nothing happens
  const lone = writer.write(new Uint8Array([4]));
  assert.deepEqual(sink.writes, [[1, 2, 3], [4]], "written at once");
  await lone;
  await writer.flush();
});

Deno.test("lines corked while a write is in flight follow it in one write", async () => {
  let release: (() => void) | undefined;
  const writes: number[][] = [];
  const sink = {
    write(bytes: Uint8Array): Promise<number> {
      writes.push([...bytes]);
      return new Promise<number>((r) => release = () => r(bytes.length));
    },
  };
  const writer = new BatchedWriter(sink, { onFail() {} });
  const first = writer.write(new Uint8Array([1]));
  writer.cork();
  const rest = [2, 3].map((b) => writer.write(new Uint8Array([b])));
  release!(); // the first write completes while corked
  await first;
  await Promise.resolve();
  assert.deepEqual(writes, [[1]], "nothing starts while corked");
  writer.uncork();
  await new Promise((r) => setTimeout(r, 0));
  release!();
  await Promise.all(rest);
  assert.deepEqual(writes, [[1], [2, 3]]);
});
