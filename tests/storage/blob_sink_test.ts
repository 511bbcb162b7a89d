import assert from "node:assert/strict";
import {
  BlobSink,
  type ChunkInput,
  PARTIAL_SUFFIX,
} from "../../storage/blob_sink.ts";
import {
  chunkDrafts,
  planChunks,
  readChunk,
  snapshotToSpool,
} from "../../storage/spool.ts";
import { KvStore } from "../../storage/kv_store.ts";
import { encodeBase64 } from "../../wire/base64.ts";
import { pathExists as exists } from "../helpers/path_exists.ts";
import { randomBytes } from "../helpers/random_bytes.ts";
import { sha256Hex as sha256 } from "../helpers/sha256_hex.ts";
import { withTempDir as withTempDirIn } from "../helpers/temp_dir.ts";

const PEER = "ed25519:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";
const KIB = 1024;
const MIB = 1024 * KIB;

function withTempDir(fn: (dir: string) => Promise<void>): Promise<void> {
  return withTempDirIn(fn, { prefix: "awp-sink-" });
}

/** The chunk lines a sender would write for `bytes`, chunked at `size`. */
function chunksOf(ref: string, bytes: Uint8Array, size: number): ChunkInput[] {
  return planChunks(bytes.length, size).map((c, n, all) => ({
    ref,
    n,
    last: n === all.length - 1,
    data: encodeBase64(bytes.subarray(c.offset, c.offset + c.length)),
  }));
}

for (
  const [label, size] of [
    ["0 B", 0],
    ["1 B", 1],
    ["256 KiB exactly", 256 * KIB],
    ["256 KiB + 1", 256 * KIB + 1],
    ["20 MiB", 20 * MIB],
  ] as const
) {
  Deno.test(`round trip of ${label} is byte-identical: spool, chunks, base64, sink`, async () => {
    await withTempDir(async (dir) => {
      const content = randomBytes(size);
      await Deno.writeFile(`${dir}/source.bin`, content);
      const spooled = await snapshotToSpool(
        `${dir}/spool`,
        `${dir}/source.bin`,
        { maxBytes: 50 * MIB, hash: true },
      );
      const sink = await BlobSink.open({
        peer: PEER,
        ref: spooled.ref,
        dir: `${dir}/in`,
        th: "t1",
      });
      const drafts = chunkDrafts(spooled, { th: "t1" });
      assert.equal(drafts.length, Math.max(1, Math.ceil(size / (256 * KIB))));
      let last;
      for (const draft of drafts) {
        // What goes on the wire: the stored fields plus the data read back.
        const data = encodeBase64(await readChunk(draft.chunk!));
        const line = JSON.parse(JSON.stringify({ ...draft.fields, data }));
        last = await sink.write(line);
        assert.notEqual(last.kind, "error", JSON.stringify(last));
      }
      assert.ok(last && last.kind === "complete");
      assert.equal(last.bytes, size);
      assert.equal(last.sha256, spooled.sha256);
      assert.equal(last.sha256, sha256(content));
      assert.equal(last.path, `${dir}/in/${spooled.ref}`);
      assert.deepEqual(await Deno.readFile(last.path), content);
      assert.equal(await exists(last.path + PARTIAL_SUFFIX), false);
      const record = sink.record;
      assert.equal(record.status, "complete");
      assert.equal(record.dir, "in");
      assert.equal(record.th, "t1");
      assert.equal(record.next, drafts.length);
      assert.equal(record.path, last.path);
    });
  });
}

Deno.test("over the limit: refused once, temp file removed, later chunks refused quietly", async () => {
  await withTempDir(async (dir) => {
    const content = randomBytes(100);
    const sink = await BlobSink.open({
      peer: PEER,
      ref: "big",
      dir,
      maxBytes: 64,
    });
    const chunks = chunksOf("big", content, 40);
    const first = await sink.write(chunks[0]);
    assert.equal(first.kind, "accepted");
    assert.equal(await exists(`${dir}/big${PARTIAL_SUFFIX}`), true);
    const refused = await sink.write(chunks[1]);
    assert.equal(refused.kind, "refused");
    assert.equal(refused.kind === "refused" && refused.repeat, false);
    assert.equal(refused.kind === "refused" && refused.limit, 64);
    assert.match(
      refused.kind === "refused" ? refused.detail : "",
      /64 byte limit/,
    );
    assert.equal(sink.status, "refused");
    assert.equal(await exists(`${dir}/big${PARTIAL_SUFFIX}`), false);
    const again = await sink.write(chunks[2]);
    assert.equal(again.kind === "refused" && again.repeat, true);
    assert.equal(sink.record.status, "refused");
    assert.equal(await exists(`${dir}/big`), false);
  });
});

Deno.test("a blob part bigger than the limit refuses before any chunk", async () => {
  await withTempDir(async (dir) => {
    const sink = await BlobSink.open({
      peer: PEER,
      ref: "r",
      dir,
      maxBytes: 1000,
    });
    assert.equal(
      await sink.expect({ size: 500, name: "a.log", mime: "text/plain" }),
      undefined,
    );
    assert.equal(sink.record.size, 500);
    assert.equal(sink.record.name, "a.log");
    const result = await sink.expect({ size: 5000 });
    assert.equal(result?.kind, "refused");
    assert.equal(result?.kind === "refused" && result.repeat, false);
    const next = await sink.write({ ref: "r", n: 0, last: true, data: "" });
    assert.equal(next.kind === "refused" && next.repeat, true);
  });
});

Deno.test("out of order, gap and after-complete chunks are non-fatal errors", async () => {
  await withTempDir(async (dir) => {
    const content = randomBytes(30);
    const chunks = chunksOf("r", content, 10);
    const sink = await BlobSink.open({ peer: PEER, ref: "r", dir });

    const gap = await sink.write(chunks[1]);
    assert.deepEqual(
      {
        kind: gap.kind,
        code: gap.kind === "error" && gap.code,
        failed: gap.kind === "error" && gap.failed,
      },
      { kind: "error", code: "gap", failed: false },
    );
    assert.equal(sink.next, 0);
    assert.equal((await sink.write(chunks[0])).kind, "accepted");
    const dup = await sink.write(chunks[0]);
    assert.equal(dup.kind === "error" && dup.code, "out_of_order");
    assert.equal(dup.kind === "error" && dup.detail.includes("\n"), false);
    const skip = await sink.write(chunks[2]);
    assert.equal(skip.kind === "error" && skip.code, "gap");
    assert.equal(sink.status, "active");
    assert.equal(sink.bytes, 10);
    const wrongRef = await sink.write({ ...chunks[1], ref: "other" });
    assert.equal(wrongRef.kind === "error" && wrongRef.code, "ref_mismatch");
    assert.equal((await sink.write(chunks[1])).kind, "accepted");
    assert.equal((await sink.write(chunks[2])).kind, "complete");
    const after = await sink.write(chunks[2]);
    assert.equal(after.kind === "error" && after.code, "after_complete");
    assert.equal(after.kind === "error" && after.failed, false);
    assert.deepEqual(await Deno.readFile(`${dir}/r`), content);
  });
});

Deno.test("bad base64 and a size mismatch fail the transfer, nothing throws", async () => {
  await withTempDir(async (dir) => {
    const bad = await BlobSink.open({ peer: PEER, ref: "bad", dir });
    const result = await bad.write({
      ref: "bad",
      n: 0,
      last: false,
      data: "**not base64**",
    });
    assert.equal(result.kind === "error" && result.code, "bad_data");
    assert.equal(result.kind === "error" && result.failed, true);
    assert.equal(bad.status, "failed");
    assert.equal(await exists(`${dir}/bad${PARTIAL_SUFFIX}`), false);
    const later = await bad.write({ ref: "bad", n: 1, last: true, data: "" });
    assert.equal(later.kind === "error" && later.code, "after_failed");

    const short = await BlobSink.open({ peer: PEER, ref: "short", dir });
    await short.expect({ size: 20 });
    const end = await short.write({
      ref: "short",
      n: 0,
      last: true,
      data: encodeBase64(randomBytes(10)),
    });
    assert.equal(end.kind === "error" && end.code, "size_mismatch");
    assert.equal(short.status, "failed");

    // Chunks first, then a blob part that disagrees with what arrived.
    const late = await BlobSink.open({ peer: PEER, ref: "late", dir });
    await late.write({
      ref: "late",
      n: 0,
      last: true,
      data: encodeBase64(randomBytes(10)),
    });
    assert.equal(late.status, "complete");
    const mismatch = await late.expect({ size: 11 });
    assert.equal(mismatch?.kind === "error" && mismatch.code, "size_mismatch");
    assert.equal(await exists(`${dir}/late`), false);
  });
});

Deno.test("interleaved chunks of several blobs land in their own files", async () => {
  await withTempDir(async (dir) => {
    const a = randomBytes(25);
    const b = randomBytes(17);
    const sinks = {
      a: await BlobSink.open({ peer: PEER, ref: "a", dir }),
      b: await BlobSink.open({ peer: PEER, ref: "b", dir }),
    };
    const ca = chunksOf("a", a, 5);
    const cb = chunksOf("b", b, 5);
    const order: ChunkInput[] = [];
    for (let i = 0; i < Math.max(ca.length, cb.length); i++) {
      if (cb[i]) order.push(cb[i]);
      if (ca[i]) order.push(ca[i]);
    }
    const results = await Promise.all(
      order.map((c) => sinks[c.ref as "a" | "b"].write(c)),
    );
    assert.equal(results.filter((r) => r.kind === "complete").length, 2);
    assert.equal(results.filter((r) => r.kind === "error").length, 0);
    assert.deepEqual(await Deno.readFile(`${dir}/a`), a);
    assert.deepEqual(await Deno.readFile(`${dir}/b`), b);
    assert.equal(sinks.a.sha256, sha256(a));
  });
});

Deno.test("resume continues a partial temp file at the recorded chunk and byte count", async () => {
  await withTempDir(async (dir) => {
    const content = randomBytes(50_000);
    const chunks = chunksOf("r", content, 8192);
    const first = await BlobSink.open({ peer: PEER, ref: "r", dir, th: "t9" });
    for (const c of chunks.slice(0, 3)) await first.write(c);
    // The record as it would have been persisted, round-tripped through JSON.
    const stored = JSON.parse(JSON.stringify(first.record));
    assert.equal(stored.bytes, 3 * 8192);
    assert.equal(stored.next, 3);
    assert.equal(stored.path, `${dir}/r${PARTIAL_SUFFIX}`);
    // Chunk 3 reached the disk but the process died before recording it.
    await first.write(chunks[3]);

    const resumed = await BlobSink.resume(stored);
    assert.equal(resumed.status, "active");
    assert.equal(resumed.next, 3);
    assert.equal(resumed.bytes, 3 * 8192);
    assert.equal(
      (await Deno.stat(resumed.path)).size,
      3 * 8192,
      "unrecorded tail dropped",
    );
    const out = await resumed.write(chunks[4]);
    assert.equal(out.kind === "error" && out.code, "gap");
    let last;
    for (const c of chunks.slice(3)) last = await resumed.write(c);
    assert.equal(last?.kind, "complete");
    assert.equal(last?.kind === "complete" && last.sha256, sha256(content));
    assert.deepEqual(await Deno.readFile(`${dir}/r`), content);
    assert.equal(resumed.record.th, "t9");

    // A complete record resumes as complete.
    const done = await BlobSink.resume(resumed.record);
    assert.equal(done.status, "complete");
    const again = await done.write(chunks[0]);
    assert.equal(again.kind === "error" && again.code, "after_complete");
  });
});

Deno.test("resume after a kill between the last rename and storing the record finds the blob complete", async () => {
  await withTempDir(async (dir) => {
    const content = randomBytes(20_000);
    const chunks = chunksOf("k", content, 8192);
    const sink = await BlobSink.open({ peer: PEER, ref: "k", dir });
    for (const c of chunks.slice(0, -1)) await sink.write(c);
    // What the caller stored before the last chunk; then it died after the
    // sink renamed the finished file.
    const stored = JSON.parse(JSON.stringify(sink.record));
    const last = await sink.write(chunks.at(-1)!);
    assert.equal(last.kind, "complete");

    const resumed = await BlobSink.resume(stored);
    assert.equal(resumed.status, "complete");
    assert.equal(resumed.sha256, sha256(content));
    assert.equal(resumed.bytes, content.length);
    // The replayed last chunk is already there: a duplicate, not a failure.
    const replayed = await resumed.write(chunks.at(-1)!);
    assert.equal(replayed.kind === "error" && replayed.code, "after_complete");
    assert.deepEqual(await Deno.readFile(`${dir}/k`), content);
  });
});

Deno.test("resume of a lost or truncated temp file comes back failed", async () => {
  await withTempDir(async (dir) => {
    const sink = await BlobSink.open({ peer: PEER, ref: "r", dir });
    await sink.write({
      ref: "r",
      n: 0,
      last: false,
      data: encodeBase64(randomBytes(100)),
    });
    const record = sink.record;
    await Deno.truncate(record.path, 50);
    const short = await BlobSink.resume(record);
    assert.equal(short.status, "failed");
    assert.match(short.detail ?? "", /50 bytes, 100 were recorded/);
    await Deno.remove(record.path);
    const gone = await BlobSink.resume(record);
    assert.equal(gone.status, "failed");
    const result = await gone.write({ ref: "r", n: 1, last: true, data: "" });
    assert.equal(result.kind === "error" && result.code, "after_failed");
  });
});

Deno.test("a ref that is not a safe file name cannot escape the directory", async () => {
  await withTempDir(async (dir) => {
    await Deno.mkdir(`${dir}/in`);
    const sink = await BlobSink.open({
      peer: PEER,
      ref: "../../etc/x",
      dir: `${dir}/in`,
    });
    const r = await sink.write({
      ref: "../../etc/x",
      n: 0,
      last: true,
      data: "aGk=",
    });
    assert.equal(r.kind, "complete");
    const names = [...Deno.readDirSync(`${dir}/in`)].map((e) => e.name);
    assert.equal(names.length, 1);
    assert.match(names[0], /^ref-[0-9a-f]{32}$/);
    assert.deepEqual([...Deno.readDirSync(dir)].map((e) => e.name), ["in"]);
  });
});

Deno.test("a transfer survives a restart through its record in a Deno KV file", async () => {
  await withTempDir(async (dir) => {
    const content = randomBytes(40_000);
    const chunks = chunksOf("kvref", content, 16_384);
    let store = await KvStore.open(`${dir}/awp.kv`);
    const sink = await BlobSink.open({
      peer: PEER,
      ref: "kvref",
      dir: `${dir}/in`,
      th: "t2",
    });
    await sink.expect({
      size: content.length,
      name: "out.log",
      mime: "text/plain",
    });
    // Each chunk is synced before its record is committed, as before an ack.
    for (const c of chunks.slice(0, 2)) {
      await sink.write(c);
      await store.putBlob(sink.record);
    }
    store.close();

    store = await KvStore.open(`${dir}/awp.kv`);
    try {
      const record = await store.blob(PEER, "kvref", "in");
      assert.ok(record);
      assert.equal(record.size, content.length);
      assert.equal(record.name, "out.log");
      const resumed = await BlobSink.resume(record);
      assert.equal(resumed.next, 2);
      const last = await resumed.write(chunks[2]);
      assert.equal(last.kind, "complete");
      await store.putBlob(resumed.record);
      const done = await store.blob(PEER, "kvref", "in");
      assert.equal(done?.status, "complete");
      assert.equal(done?.sha256, sha256(content));
      assert.deepEqual(await Deno.readFile(done!.path), content);
    } finally {
      store.close();
    }
  });
});

Deno.test("append writes now, sync later: each append's record says its chunk; a resume keeps only what a record says", async () => {
  await withTempDir(async (dir) => {
    const content = randomBytes(5 * 1000);
    const chunks = chunksOf("app", content, 1000);
    const sink = await BlobSink.open({ peer: PEER, ref: "app", dir });
    const appended = await Promise.all(
      chunks.slice(0, 3).map((c) => sink.append(c)),
    );
    assert.deepEqual(appended.map((a) => a.result.kind), [
      "accepted",
      "accepted",
      "accepted",
    ]);
    assert.deepEqual(appended.map((a) => a.record.next), [1, 2, 3]);
    assert.equal(sink.unsynced, 3000);
    // A later append overlaps the sync; the sync covers the first three.
    const fourth = sink.append(chunks[3]);
    const synced = await sink.sync();
    assert.equal(synced.ok, true);
    await fourth;
    // Killed now: the store holds the record of chunk 1 (the batch's last).
    const resumed = await BlobSink.resume(appended[1].record);
    assert.equal(resumed.next, 2);
    assert.equal(resumed.bytes, 2000);
    for (const c of chunks.slice(2)) await resumed.write(c);
    assert.equal(resumed.status, "complete");
    assert.deepEqual(await Deno.readFile(resumed.path), content);
  });
});

Deno.test("chunks of any size land at their offsets, a sync between them", async () => {
  await withTempDir(async (dir) => {
    // One byte, odd sizes, the usual 256 KiB, and chunks bigger than
    // that (a line may carry up to ~768 KiB).
    const sizes = [1, 65536, 65537, 262144, 700001, 3 * 65536 + 7, 524288, 9];
    const parts = sizes.map((n) => randomBytes(n));
    const content = new Uint8Array(sizes.reduce((a, b) => a + b, 0));
    let at = 0;
    for (const p of parts) {
      content.set(p, at);
      at += p.length;
    }
    const chunks: ChunkInput[] = parts.map((p, n) => ({
      ref: "odd",
      n,
      last: n === parts.length - 1,
      data: "",
      bytes: p,
    }));
    const sink = await BlobSink.open({ peer: PEER, ref: "odd", dir });
    // Queued back to back, a sync in the middle (a new handle after it,
    // which seeks first), as the receiver does on arrival.
    const first = chunks.slice(0, 4).map((c) => sink.append(c));
    const synced = sink.sync();
    const rest = chunks.slice(4).map((c) => sink.append(c));
    const results = await Promise.all([...first, ...rest]);
    assert.equal((await synced).ok, true);
    assert.deepEqual(
      results.map((r) => r.result.kind),
      [...Array(sizes.length - 1).fill("accepted"), "complete"],
    );
    assert.deepEqual(
      results.map((r) => r.record.bytes),
      sizes.map((_, i) => sizes.slice(0, i + 1).reduce((a, b) => a + b, 0)),
    );
    const last = results[results.length - 1].result;
    assert.ok(last.kind === "complete");
    const got = await Deno.readFile(last.path);
    // Compared as a boolean: a failing deep-equal of 2 MB would print it.
    assert.equal(got.length, content.length);
    assert.equal(got.every((b, i) => b === content[i]), true);
    assert.equal(last.sha256, sha256(content));
  });
});

Deno.test("syncedBytes says what the last finished sync covered: not appends after it, nor a sync still running", async () => {
  await withTempDir(async (dir) => {
    const content = randomBytes(4 * 1000);
    const chunks = chunksOf("sy", content, 1000);
    const sink = await BlobSink.open({ peer: PEER, ref: "sy", dir });
    assert.equal(sink.syncedBytes, 0);
    await sink.append(chunks[0]);
    await sink.append(chunks[1]);
    assert.equal(sink.syncedBytes, 0);
    const syncing = sink.sync();
    const third = sink.append(chunks[2]);
    assert.equal(sink.syncedBytes, 0); // not finished yet
    assert.equal((await syncing).ok, true);
    await third;
    // The sync took its place before the third chunk: 2,000 bytes.
    assert.equal(sink.syncedBytes, 2000);
    await sink.sync();
    assert.equal(sink.syncedBytes, 3000);
    // A resumed sink starts from its record, which was durable.
    const resumed = await BlobSink.resume(sink.record);
    assert.equal(resumed.syncedBytes, 3000);
  });
});
