import assert from "node:assert/strict";
import { type LineEvent, LineReader } from "../../wire/line_reader.ts";
import { MAX_LINE_BYTES } from "../../wire/frame.ts";
import { prng } from "../helpers/prng.ts";

function randomLine(rand: () => number, maxLen: number): Uint8Array {
  const line = new Uint8Array(Math.floor(rand() * (maxLen + 1)));
  for (let i = 0; i < line.length; i++) {
    let b = Math.floor(rand() * 256);
    if (b === 0x0a) b = 0x0d; // any byte but the newline, "\r" included
    line[i] = b;
  }
  return line;
}

function join(lines: Uint8Array[]): Uint8Array {
  const total = lines.reduce((n, l) => n + l.length + 1, 0);
  const out = new Uint8Array(total);
  let o = 0;
  for (const l of lines) {
    out.set(l, o);
    o += l.length;
    out[o++] = 0x0a;
  }
  return out;
}

/**
 * Pushes `stream` cut at random points, through one reused buffer so that
 * the reader must copy what it keeps. Checks `buffered` stays bounded. A
 * reader made with `views` hands lines valid until the next push: they are
 * copied at once.
 */
function feed(
  reader: LineReader,
  stream: Uint8Array,
  rand: () => number,
  max: number,
  limit: number,
  views = false,
): LineEvent[] {
  const events: LineEvent[] = [];
  const scratch = new Uint8Array(max);
  let pos = 0;
  while (pos < stream.length) {
    const n = Math.min(stream.length - pos, 1 + Math.floor(rand() * max));
    scratch.set(stream.subarray(pos, pos + n));
    for (const e of reader.push(scratch.subarray(0, n))) {
      events.push(
        views && e.kind === "line" ? { ...e, bytes: e.bytes.slice() } : e,
      );
    }
    scratch.fill(0x41); // clobber: kept bytes must be copies
    assert.ok(
      reader.buffered <= limit,
      `buffered ${reader.buffered} > ${limit}`,
    );
    pos += n;
  }
  return events;
}

function model(
  lines: Uint8Array[],
  limit: number,
): Array<{ kind: string; bytes?: Uint8Array }> {
  return lines.map((l) =>
    l.length > limit ? { kind: "too_large" } : { kind: "line", bytes: l }
  );
}

function simplify(
  events: LineEvent[],
  limit: number,
): Array<{ kind: string; bytes?: Uint8Array }> {
  return events.map((e) => {
    if (e.kind === "line") return { kind: "line", bytes: e.bytes };
    assert.ok(e.size > limit, `too_large size ${e.size} not over ${limit}`);
    return { kind: "too_large" };
  });
}

Deno.test("line reader: random lines cut at random points come out whole", () => {
  for (let seed = 1; seed <= 40; seed++) {
    const rand = prng(seed);
    const lines = Array.from(
      { length: 60 },
      () => randomLine(rand, rand() < 0.1 ? 5000 : 80),
    );
    const reader = new LineReader();
    const events = feed(
      reader,
      join(lines),
      rand,
      seed % 2 ? 7 : 3000,
      MAX_LINE_BYTES,
    );
    assert.deepEqual(
      simplify(events, MAX_LINE_BYTES),
      model(lines, MAX_LINE_BYTES),
      `seed ${seed}`,
    );
    assert.equal(reader.buffered, 0);
  }
});

Deno.test("line reader: over-long lines with a small limit, random cuts, match the model", () => {
  const limit = 10;
  for (let seed = 100; seed < 400; seed++) {
    const rand = prng(seed);
    const lines = Array.from({ length: 30 }, () => randomLine(rand, 25));
    const reader = new LineReader({ maxLineBytes: limit });
    const events = feed(reader, join(lines), rand, 1 + (seed % 13), limit);
    assert.deepEqual(
      simplify(events, limit),
      model(lines, limit),
      `seed ${seed}`,
    );
  }
});

Deno.test("line reader: many lines in one chunk, empty lines and \\r kept", () => {
  const enc = new TextEncoder();
  const reader = new LineReader();
  const events = reader.push(enc.encode('{"a":1}\r\n\n{"b":2}\n{"c"'));
  assert.deepEqual(events, [
    { kind: "line", bytes: enc.encode('{"a":1}\r') },
    { kind: "line", bytes: new Uint8Array(0) },
    { kind: "line", bytes: enc.encode('{"b":2}') },
  ]);
  assert.equal(reader.buffered, 4);
  assert.deepEqual(reader.push(enc.encode(":3}\n")), [{
    kind: "line",
    bytes: enc.encode('{"c":3}'),
  }]);
  assert.deepEqual(reader.push(new Uint8Array(0)), []);
});

Deno.test("line reader: a line of exactly 1 MiB passes, 1 MiB + 1 is too_large", () => {
  for (const chunkSize of [MAX_LINE_BYTES + 2, 65536, 1000]) {
    const exact = new Uint8Array(MAX_LINE_BYTES + 1).fill(0x78);
    exact[MAX_LINE_BYTES] = 0x0a;
    const reader = new LineReader();
    const events: LineEvent[] = [];
    for (let i = 0; i < exact.length; i += chunkSize) {
      events.push(...reader.push(exact.subarray(i, i + chunkSize)));
    }
    assert.equal(events.length, 1);
    assert.equal(events[0].kind, "line");
    assert.equal(
      events[0].kind === "line" && events[0].bytes.length,
      MAX_LINE_BYTES,
    );

    const over = new Uint8Array(MAX_LINE_BYTES + 2).fill(0x78);
    over[MAX_LINE_BYTES + 1] = 0x0a;
    const reader2 = new LineReader();
    const events2: LineEvent[] = [];
    for (let i = 0; i < over.length; i += chunkSize) {
      events2.push(...reader2.push(over.subarray(i, i + chunkSize)));
    }
    assert.deepEqual(events2, [{
      kind: "too_large",
      size: MAX_LINE_BYTES + 1,
    }]);
    assert.equal(reader2.buffered, 0);
  }
});

Deno.test("line reader: too_large is reported before the line ends and nothing past the limit is kept", () => {
  const reader = new LineReader();
  assert.deepEqual(reader.push(new Uint8Array(MAX_LINE_BYTES).fill(0x61)), []);
  assert.equal(reader.buffered, MAX_LINE_BYTES);
  // One byte more and no newline yet: already known to be over.
  assert.deepEqual(reader.push(new Uint8Array([0x62])), [{
    kind: "too_large",
    size: MAX_LINE_BYTES + 1,
  }]);
  assert.equal(reader.buffered, 0);
  // The rest of the long line is discarded, then reading resumes.
  assert.deepEqual(reader.push(new Uint8Array(5_000_000).fill(0x63)), []);
  assert.equal(reader.buffered, 0);
  const enc = new TextEncoder();
  assert.deepEqual(
    reader.push(enc.encode('ccc\n{"t":"ping"}\n{"t":"pong"}\n')),
    [
      { kind: "line", bytes: enc.encode('{"t":"ping"}') },
      { kind: "line", bytes: enc.encode('{"t":"pong"}') },
    ],
  );
});

Deno.test("line reader: a too_large line inside one chunk is followed by good lines", () => {
  const enc = new TextEncoder();
  const reader = new LineReader({ maxLineBytes: 8 });
  assert.deepEqual(reader.push(enc.encode("ok\n123456789\nfine\n12345678\n")), [
    { kind: "line", bytes: enc.encode("ok") },
    { kind: "too_large", size: 9 },
    { kind: "line", bytes: enc.encode("fine") },
    { kind: "line", bytes: enc.encode("12345678") },
  ]);
});

Deno.test("line reader: rejects an invalid limit with a clear error", () => {
  assert.throws(
    () => new LineReader({ maxLineBytes: -1 }),
    /invalid maxLineBytes/,
  );
  assert.throws(
    () => new LineReader({ maxLineBytes: 1.5 }),
    /invalid maxLineBytes/,
  );
});

Deno.test("line reader: lines over a real TCP socket on 127.0.0.1", async () => {
  const rand = prng(7);
  const lines = Array.from(
    { length: 300 },
    () => randomLine(rand, rand() < 0.05 ? 200_000 : 300),
  );
  lines.push(new Uint8Array(MAX_LINE_BYTES + 10).fill(0x7a)); // too_large at the end
  lines.push(new TextEncoder().encode("after"));
  const stream = join(lines);
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const received = (async () => {
    const conn = await listener.accept();
    const reader = new LineReader();
    const events: LineEvent[] = [];
    for await (const chunk of conn.readable) events.push(...reader.push(chunk));
    return events;
  })();
  const client = await Deno.connect({
    hostname: "127.0.0.1",
    port: (listener.addr as Deno.NetAddr).port,
  });
  const writer = client.writable.getWriter();
  for (let i = 0; i < stream.length; i += 50_000) {
    await writer.write(stream.subarray(i, i + 50_000));
  }
  await writer.close();
  const events = await received;
  listener.close();
  assert.deepEqual(
    simplify(events, MAX_LINE_BYTES),
    model(lines, MAX_LINE_BYTES),
  );
});

Deno.test("line reader with views: random lines cut at random points come out whole", () => {
  for (let seed = 1; seed <= 60; seed++) {
    const rand = prng(seed);
    const limit = seed % 3 === 0 ? 2000 : MAX_LINE_BYTES;
    const lines = Array.from(
      { length: 80 },
      () => randomLine(rand, rand() < 0.2 ? 5000 : 80),
    );
    const reader = new LineReader({ maxLineBytes: limit, views: true });
    const events = feed(
      reader,
      join(lines),
      rand,
      [7, 3000, 20_000][seed % 3],
      limit,
      true,
    );
    assert.deepEqual(
      simplify(events, limit),
      model(lines, limit),
      `seed ${seed}`,
    );
    assert.equal(reader.buffered, 0);
  }
});

Deno.test("line reader with views: a line whole in its chunk is a view, a split one is gathered", () => {
  const enc = new TextEncoder();
  const reader = new LineReader({ views: true });
  const chunk = enc.encode('{"a":1}\n{"b"');
  const first = reader.push(chunk);
  assert.equal(first.length, 1);
  const line = first[0].kind === "line" ? first[0].bytes : undefined;
  assert.equal(line?.buffer, chunk.buffer); // not copied
  assert.equal(reader.buffered, 4);
  chunk.fill(0); // the caller reuses its buffer: the partial line was kept
  const next = reader.push(enc.encode(':2}\n{"c":3}\n'));
  assert.deepEqual(next, [
    { kind: "line", bytes: enc.encode('{"b":2}') },
    { kind: "line", bytes: enc.encode('{"c":3}') },
  ]);
});
