import assert from "node:assert/strict";
import {
  BlobSourceError,
  BlobTooLargeError,
  chunkDrafts,
  chunkMessage,
  DEFAULT_CHUNK_SIZE,
  discardSpooled,
  planChunks,
  readChunk,
  snapshotToSpool,
  spooledRecord,
} from "../../storage/spool.ts";
import { decodeBase64 } from "../../wire/base64.ts";
import { pathExists as exists } from "../helpers/path_exists.ts";
import { randomBytes } from "../helpers/random_bytes.ts";
import { sha256Hex as sha256 } from "../helpers/sha256_hex.ts";
import { withTempDir as withTempDirIn } from "../helpers/temp_dir.ts";

function withTempDir(fn: (dir: string) => Promise<void>): Promise<void> {
  return withTempDirIn(fn, { prefix: "awp-spool-" });
}

Deno.test("snapshotToSpool copies the bytes and reports size, sha256 and ref", async () => {
  await withTempDir(async (dir) => {
    const content = randomBytes(300_000);
    await Deno.writeFile(`${dir}/a.bin`, content);
    const blob = await snapshotToSpool(`${dir}/spool`, `${dir}/a.bin`, {
      maxBytes: 1 << 20,
      hash: true,
    });
    assert.equal(blob.size, content.length);
    assert.equal(blob.sha256, sha256(content));
    assert.match(blob.ref, /^blob_[0-9a-f]{24}$/);
    assert.equal(blob.path, `${dir}/spool/${blob.ref}`);
    assert.deepEqual(await Deno.readFile(blob.path), content);
    // No temp file is left next to it.
    const names = [...Deno.readDirSync(`${dir}/spool`)].map((e) => e.name);
    assert.deepEqual(names, [blob.ref]);
  });
});

Deno.test("snapshotToSpool hashes the copy only when asked", async () => {
  await withTempDir(async (dir) => {
    const content = randomBytes(1000);
    await Deno.writeFile(`${dir}/a.bin`, content);
    const blob = await snapshotToSpool(`${dir}/spool`, `${dir}/a.bin`, {
      maxBytes: 1 << 20,
    });
    assert.equal(blob.sha256, undefined);
    assert.equal(blob.size, content.length);
    assert.deepEqual(await Deno.readFile(blob.path), content);
  });
});

Deno.test("snapshotToSpool uses a given ref and refuses an unsafe one", async () => {
  await withTempDir(async (dir) => {
    await Deno.writeTextFile(`${dir}/a.txt`, "x");
    const blob = await snapshotToSpool(`${dir}/spool`, `${dir}/a.txt`, {
      maxBytes: 10,
      ref: "L1",
    });
    assert.equal(blob.path, `${dir}/spool/L1`);
    await assert.rejects(
      snapshotToSpool(`${dir}/spool`, `${dir}/a.txt`, {
        maxBytes: 10,
        ref: "../escape",
      }),
      BlobSourceError,
    );
  });
});

Deno.test("a file over the limit is refused before anything is copied", async () => {
  await withTempDir(async (dir) => {
    await Deno.writeFile(`${dir}/big.bin`, randomBytes(1025));
    const error = await snapshotToSpool(`${dir}/spool`, `${dir}/big.bin`, {
      maxBytes: 1024,
    })
      .then(() => undefined, (e: unknown) => e);
    assert.ok(error instanceof BlobTooLargeError);
    assert.equal(error.size, 1025);
    assert.equal(error.limit, 1024);
    assert.equal(error.message.includes("\n"), false);
    assert.match(error.message, /1025 bytes, over the 1024 byte limit/);
    assert.equal(
      await exists(`${dir}/spool`),
      false,
      "spool dir must not even be created",
    );
    // Exactly at the limit is fine.
    await Deno.writeFile(`${dir}/ok.bin`, randomBytes(1024));
    const ok = await snapshotToSpool(`${dir}/spool`, `${dir}/ok.bin`, {
      maxBytes: 1024,
    });
    assert.equal(ok.size, 1024);
  });
});

Deno.test("missing, directory and unreadable sources give BlobSourceError", async () => {
  await withTempDir(async (dir) => {
    const missing = await snapshotToSpool(`${dir}/spool`, `${dir}/nope`, {
      maxBytes: 10,
    })
      .then(() => undefined, (e: unknown) => e);
    assert.ok(missing instanceof BlobSourceError);
    assert.match(missing.message, /^cannot send .*nope: no such file$/);

    await Deno.mkdir(`${dir}/sub`);
    await assert.rejects(
      snapshotToSpool(`${dir}/spool`, `${dir}/sub`, { maxBytes: 10 }),
      (e: unknown) => e instanceof BlobSourceError && !e.message.includes("\n"),
    );
    assert.equal(await exists(`${dir}/spool`), false);
  });
});

Deno.test("changing or deleting the original after the snapshot changes nothing sent", async () => {
  await withTempDir(async (dir) => {
    const original = randomBytes(DEFAULT_CHUNK_SIZE + 10);
    await Deno.writeFile(`${dir}/f.bin`, original);
    const blob = await snapshotToSpool(`${dir}/spool`, `${dir}/f.bin`, {
      maxBytes: 1 << 20,
    });
    await Deno.writeFile(`${dir}/f.bin`, randomBytes(DEFAULT_CHUNK_SIZE + 10));
    const first = await readChunk(
      planChunks(blob.size, DEFAULT_CHUNK_SIZE, blob.path)[0],
    );
    assert.deepEqual(first, original.subarray(0, DEFAULT_CHUNK_SIZE));
    await Deno.remove(`${dir}/f.bin`);
    const parts = [];
    for (const source of planChunks(blob.size, DEFAULT_CHUNK_SIZE, blob.path)) {
      parts.push(await readChunk(source));
    }
    const sent = new Uint8Array(blob.size);
    let offset = 0;
    for (const p of parts) {
      sent.set(p, offset);
      offset += p.length;
    }
    assert.deepEqual(sent, original);
    assert.equal(sha256(sent), sha256(original));
  });
});

Deno.test("planChunks splits at the chunk size, 0 bytes is one empty chunk", () => {
  assert.deepEqual(planChunks(0), [{ path: "", offset: 0, length: 0 }]);
  assert.deepEqual(planChunks(1, undefined, "/s/b"), [{
    path: "/s/b",
    offset: 0,
    length: 1,
  }]);
  assert.deepEqual(planChunks(262144).map((c) => c.length), [262144]);
  assert.deepEqual(planChunks(262145).map((c) => [c.offset, c.length]), [
    [0, 262144],
    [262144, 1],
  ]);
  assert.equal(planChunks(20 * 1024 * 1024).length, 80);
  assert.deepEqual(planChunks(10, 4).map((c) => c.length), [4, 4, 2]);
  assert.throws(() => planChunks(-1), RangeError);
  assert.throws(() => planChunks(1.5), RangeError);
  assert.throws(() => planChunks(10, 0), RangeError);
});

Deno.test("readChunk reads exactly the range, and fails clearly on a short file", async () => {
  await withTempDir(async (dir) => {
    const content = randomBytes(1000);
    await Deno.writeFile(`${dir}/f`, content);
    assert.deepEqual(
      await readChunk({ path: `${dir}/f`, offset: 990, length: 10 }),
      content.subarray(990),
    );
    assert.deepEqual(
      await readChunk({ path: `${dir}/f`, offset: 5, length: 0 }),
      new Uint8Array(),
    );
    await assert.rejects(
      readChunk({ path: `${dir}/f`, offset: 995, length: 10 }),
      (e: unknown) =>
        e instanceof BlobSourceError && /ends at 1000/.test(e.message),
    );
    await assert.rejects(
      readChunk({ path: `${dir}/gone`, offset: 0, length: 1 }),
      BlobSourceError,
    );
  });
});

Deno.test("chunkDrafts carry th, ref, n and last in order; chunkMessage adds the data", async () => {
  await withTempDir(async (dir) => {
    const content = randomBytes(10);
    await Deno.writeFile(`${dir}/f`, content);
    const blob = await snapshotToSpool(`${dir}/spool`, `${dir}/f`, {
      maxBytes: 100,
      ref: "B",
    });
    const drafts = chunkDrafts(blob, { th: "t1", chunkSize: 4 });
    assert.deepEqual(drafts.map((d) => d.fields), [
      { t: "chunk", th: "t1", ref: "B", n: 0, last: false },
      { t: "chunk", th: "t1", ref: "B", n: 1, last: false },
      { t: "chunk", th: "t1", ref: "B", n: 2, last: true },
    ]);
    assert.equal(
      drafts.some((d) => "data" in d.fields),
      false,
      "bytes stay in the spool",
    );
    const lines = await Promise.all(drafts.map((d, i) =>
      chunkMessage({
        peer: "p",
        id: `0${i}`,
        ts: "2026-01-01T00:00:00.000Z",
        t: "chunk",
        th: "t1",
        fields: d.fields,
        chunk: d.chunk,
        queuedAt: 0,
      })
    ));
    assert.deepEqual(Object.keys(lines[0]), [
      "t",
      "id",
      "ts",
      "th",
      "ref",
      "n",
      "last",
      "data",
    ]);
    for (const line of lines) assert.match(line.data, /^[A-Za-z0-9+/]*={0,2}$/);
    const back = lines.map((l) => [...decodeBase64(l.data)]).flat();
    assert.deepEqual(new Uint8Array(back), content);
    // Without th, no th key at all.
    assert.equal("th" in chunkDrafts(blob)[0].fields, false);
    await discardSpooled(blob.path);
    assert.equal(await exists(blob.path), false);
    await discardSpooled(blob.path);
  });
});

Deno.test("spooledRecord describes a new outgoing transfer", () => {
  const blob = { path: "/spool/b1", size: 7, sha256: "ab", ref: "b1" };
  assert.deepEqual(
    {
      ...spooledRecord("ed25519:p", blob, { th: "t1", name: "x.log" }),
      updated: 0,
    },
    {
      peer: "ed25519:p",
      ref: "b1",
      dir: "out",
      size: 7,
      bytes: 0,
      next: 0,
      status: "active",
      path: "/spool/b1",
      sha256: "ab",
      updated: 0,
      th: "t1",
      name: "x.log",
    },
  );
  assert.equal("mime" in spooledRecord("p", blob), false);
});
