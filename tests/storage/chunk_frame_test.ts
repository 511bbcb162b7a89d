import assert from "node:assert/strict";
import { ChunkFramer } from "../../storage/chunk_frame.ts";
import { BlobSourceError, chunkMessage } from "../../storage/spool.ts";
import type { OutboxEntry } from "../../storage/store.ts";
import { parseLine } from "../../wire/parse.ts";
import { releaseChunkBytes, splitChunkLine } from "../../wire/chunk_line.ts";
import { readFrame } from "../../wire/read_frame.ts";
import { encodeBase64 } from "../../wire/base64.ts";
import { encodeLine } from "../../wire/frame.ts";

const CHUNK = 262144;

function entry(path: string, n: number, last: boolean, size: number) {
  return {
    peer: "ed25519:p",
    id: `01ID${n}`,
    ts: "2026-12-03T00:00:00.000Z",
    t: "chunk",
    th: "thr",
    queuedAt: 0,
    fields: { t: "chunk", th: "thr", ref: "blob_1", n, last },
    chunk: {
      path,
      offset: n * CHUNK,
      length: Math.min(CHUNK, size - n * CHUNK),
    },
  } as OutboxEntry;
}

Deno.test("framed chunk lines are byte for byte the lines chunkMessage + encodeLine make, and split back", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const size = 2 * CHUNK + 1000;
    const bytes = new Uint8Array(size);
    for (let i = 0; i < size; i += 65536) {
      crypto.getRandomValues(bytes.subarray(i, Math.min(size, i + 65536)));
    }
    await Deno.writeFile(`${dir}/blob_1`, bytes);
    const framer = new ChunkFramer();
    for (let n = 0; n < 3; n++) {
      const e = entry(`${dir}/blob_1`, n, n === 2, size);
      const frame = await framer.frame(e);
      const want = encodeLine(await chunkMessage(e));
      assert.deepEqual(frame.bytes, want, `chunk ${n}`);
      assert.equal(frame.line.data, "");
      assert.deepEqual(JSON.parse(frame.raw), frame.line);
      const split = splitChunkLine(frame.bytes.subarray(0, -1));
      if (n === 2) {
        assert.equal(split, undefined, "a short line goes the general way");
        continue;
      }
      assert.ok(split, "our own lines take the fast path");
      const parsed = parseLine(want.subarray(0, -1));
      assert.ok(parsed.ok);
      assert.deepEqual(split.message, { ...parsed.message, data: "" });
      assert.deepEqual(
        split.bytes,
        bytes.subarray(n * CHUNK, Math.min(size, (n + 1) * CHUNK)),
      );
      releaseChunkBytes(split.bytes);
      frame.release();
    }
    framer.close();
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("chunks framed out of order (a replay) read their own bytes", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const size = 3 * CHUNK;
    const bytes = new Uint8Array(size);
    for (let i = 0; i < size; i++) bytes[i] = (i * 7 + (i >> 12)) & 255;
    await Deno.writeFile(`${dir}/blob_1`, bytes);
    const framer = new ChunkFramer();
    for (const n of [0, 1, 0, 2, 1]) {
      const e = entry(`${dir}/blob_1`, n, false, size);
      const frame = await framer.frame(e);
      assert.deepEqual(frame.bytes, encodeLine(await chunkMessage(e)), `${n}`);
      frame.release();
    }
    framer.close();
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a spooled file removed while its chunks are queued stops them", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const size = 2 * CHUNK;
    await Deno.writeFile(`${dir}/blob_1`, new Uint8Array(size));
    const framer = new ChunkFramer();
    (await framer.frame(entry(`${dir}/blob_1`, 0, false, size))).release();
    await Deno.remove(`${dir}/blob_1`); // refused or acked: the spool drops it
    await assert.rejects(
      () => framer.frame(entry(`${dir}/blob_1`, 1, true, size)),
      BlobSourceError,
    );
    framer.close();
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("chunk lines of other shapes take the general parse (undefined here)", () => {
  const enc = new TextEncoder();
  const data = "QUJD".repeat(2000);
  const line = (text: string) => enc.encode(text);
  const base = `"t":"chunk","id":"1","ts":"x","ref":"r","n":0,"last":true`;
  assert.ok(splitChunkLine(line(`{${base},"data":"${data}"}`)));
  for (
    const [why, text] of [
      ["data not last", `{"data":"${data}",${base}}`],
      ["whitespace inside", `{${base},"data":"${data.slice(0, 8)} ${data}"}`],
      ["url alphabet", `{${base},"data":"${data}-_"}`],
      ["url alphabet, whole groups", `{${base},"data":"${data}AB-_"}`],
      ["an escape", `{${base},"data":"${data}\\/"}`],
      ["space after", `{${base},"data":"${data}"} `],
      ["not a chunk", `{"t":"msg","x":1,"data":"${data}"}`],
      ["not JSON before", `{${base},,"data":"${data}"}`],
      ["bad padding", `{${base},"data":"${data}A="}`],
      ["a BOM before the data", `{${base},"data":"\uFEFF${data.slice(4)}"}`],
      ["a letter outside ASCII", `{${base},"data":"${data.slice(4)}QUJé"}`],
      ["data inside a key", `{${base},"x\\"data":"${data}"}`],
      ["data twice", `{${base},"data":"QUJD","data":"${data}"}`],
      ["data in a nested object", `{${base},"o":{"data":"${data}"}`],
    ]
  ) {
    assert.equal(splitChunkLine(line(text)), undefined, why);
  }
});

Deno.test("a key that only contains data is no data: the schema says what is missing", () => {
  const data = "QUJD".repeat(2000);
  const read = readFrame(
    new TextEncoder().encode(
      `{"t":"chunk","id":"01J0000000000000000000000A","ts":"2026-01-01T00:00:00.000Z","ref":"r","n":0,"last":true,"x\\"data":"${data}"}`,
    ),
  );
  assert.ok(read.ok);
  assert.equal(read.frame.bytes, undefined);
  assert.match(read.frame.invalid ?? "", /data/);
});

Deno.test("chunk data that is not UTF-8 takes the general parse, which rejects it", () => {
  const enc = new TextEncoder();
  const head = enc.encode(
    `{"t":"chunk","id":"1","ts":"x","ref":"r","n":0,"last":true,"data":"`,
  );
  const data = enc.encode("QUJD".repeat(2000));
  // A lone continuation byte, then a truncated two-byte sequence.
  for (const bad of [[0x80], [0xc3]]) {
    const body = data.slice();
    body.set([...bad, 0x41, 0x41, 0x41].slice(0, 4), 100);
    const line = new Uint8Array([...head, ...body, 0x22, 0x7d]);
    assert.equal(splitChunkLine(line), undefined, `byte ${bad}`);
    const read = readFrame(line);
    assert.ok(!read.ok, `byte ${bad}`);
    assert.match(read.detail, /UTF-8/);
  }
});

Deno.test("split chunk data decodes like the general path, with and without padding", () => {
  const enc = new TextEncoder();
  for (
    const size of [
      4500,
      4501,
      4502,
      49152,
      49153,
      98305,
      262142,
      262143,
      262144,
    ]
  ) {
    const bytes = crypto.getRandomValues(new Uint8Array(Math.min(size, 65536)));
    const data = new Uint8Array(size);
    for (let i = 0; i < size; i += bytes.length) {
      data.set(bytes.subarray(0, Math.min(bytes.length, size - i)), i);
    }
    const line = enc.encode(
      `{"t":"chunk","id":"1","ts":"x","ref":"r","n":0,"last":true,"data":"${
        encodeBase64(data)
      }"}`,
    );
    const split = splitChunkLine(line);
    assert.ok(split, `size ${size}`);
    assert.deepEqual(split.bytes, data, `size ${size}`);
    releaseChunkBytes(split.bytes);
  }
});

Deno.test("chunk data of many 64 KiB pieces: a flaw in any piece takes the general parse", () => {
  const enc = new TextEncoder();
  const head =
    `{"t":"chunk","id":"1","ts":"x","ref":"r","n":0,"last":true,"data":"`;
  // 200,000 characters: three whole pieces of 65,536 and a short last one.
  const good = "QUJD".repeat(50_000);
  const at = (i: number, put: string) =>
    good.slice(0, i) + put + good.slice(i + put.length);
  const split = splitChunkLine(enc.encode(`${head}${good}"}`));
  assert.ok(split);
  assert.equal(split.bytes.length, 150_000);
  releaseChunkBytes(split.bytes);
  for (
    const [why, data] of [
      ["padding ending the first piece", at(65_532, "QQ==")],
      ["padding inside the second piece", at(70_000, "QQ==")],
      ["whitespace in the first piece", at(100, " QUJ")],
      ["url alphabet in the third piece", at(140_000, "-_AB")],
      // Two bytes in UTF-8 for two characters: the length stays whole.
      [
        "a letter outside ASCII across a piece boundary",
        `${good.slice(0, 65_535)}é${good.slice(65_537)}`,
      ],
    ]
  ) {
    assert.equal(enc.encode(data).length, good.length, why);
    // Compared as a boolean: a failure's message stays one line.
    const got = splitChunkLine(enc.encode(`${head}${data}"}`));
    assert.equal(got === undefined, true, why);
  }
});
