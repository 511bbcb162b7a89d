import assert from "node:assert/strict";
import type { PeerOptions } from "../../peer/peer.ts";
import { openPeerPair } from "../helpers/peer_pair.ts";
import { randomBytes as randomFile } from "../helpers/random_bytes.ts";
import { sha256Hex as sha256 } from "../helpers/sha256_hex.ts";
import { until } from "../helpers/until.ts";

/** Big files take longer: the event logs wait up to 15 s by default. */
function pair(
  root: string,
  alice: Partial<PeerOptions> = {},
  bob: Partial<PeerOptions> = {},
) {
  return openPeerPair(root, { waitMs: 15_000, alice, bob });
}

async function spoolFiles(home: string): Promise<string[]> {
  const out: string[] = [];
  for await (const e of Deno.readDir(`${home}/spool`)) out.push(e.name);
  return out;
}

Deno.test("files of 0 B, 1 B, 256 KiB, 256 KiB + 1 and 5 MiB arrive byte-identical with the msg", async () => {
  const root = await Deno.makeTempDir();
  const { a, b, ea, eb } = await pair(root);
  try {
    const sizes = [0, 1, 262144, 262145, 5 * 1024 * 1024];
    const files: string[] = [];
    const hashes: string[] = [];
    for (const size of sizes) {
      const bytes = randomFile(size);
      const path = `${root}/file-${size}.bin`;
      await Deno.writeFile(path, bytes);
      files.push(path);
      hashes.push(sha256(bytes));
    }
    const sent = await a.send("bob", "five files", { subject: "Files", files });
    // The originals may change once send resolved: the spool has a snapshot.
    await Deno.writeTextFile(files[1], "changed");
    await a.waitAck(sent.id, { timeoutMs: 20_000 });
    await eb.until(() => eb.of("message").length === 1, "the msg");
    const msg = eb.of("message")[0];
    assert.equal(msg.text, "five files");
    assert.equal(msg.id, sent.id);
    assert.equal(msg.blobs.length, 5);
    for (const [i, blob] of msg.blobs.entries()) {
      assert.equal(blob.status, "complete", `${sizes[i]}: ${blob.detail}`);
      assert.equal(blob.size, sizes[i]);
      assert.equal(blob.name, `file-${sizes[i]}.bin`);
      assert.ok(blob.path!.startsWith(`${root}/b/blobs/`), blob.path);
      const got = await Deno.readFile(blob.path!);
      assert.equal(got.length, sizes[i]);
      assert.equal(sha256(got), hashes[i]);
      assert.equal(blob.sha256, hashes[i]);
    }
    // blob events came before the message, one per file.
    const blobEvents = eb.of("blob");
    assert.equal(blobEvents.length, 5);
    assert.ok(eb.list.indexOf(blobEvents[4]) < eb.list.indexOf(msg));
    // Acked: the sender's spool is released.
    await ea.until(() => ea.of("acked").length >= 1, "ack");
    // The release rides a later commit: wait for it rather than a fixed time.
    await until("the spool and outbox to empty", async () => {
      const spool = await spoolFiles(`${root}/a`);
      const outbox = await a.store.outbox(b.key);
      return spool.length === 0 && outbox.length === 0 ? true : undefined;
    }, 10_000);
  } finally {
    await a.close();
    await b.close();
    await Promise.all([ea.done, eb.done]);
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("a file over the receiver's limit is refused with blob_refused; the connection stays and later messages flow", async () => {
  const root = await Deno.makeTempDir();
  const { a, b, ea, eb } = await pair(root, {}, { maxBlobBytes: 300_000 });
  try {
    const big = `${root}/big.bin`;
    await Deno.writeFile(big, randomFile(600_000));
    const small = `${root}/small.txt`;
    await Deno.writeTextFile(small, "fits");
    const sent = await a.send("bob", "too big", { files: [big, small] });
    await a.waitAck(sent.id, { timeoutMs: 10_000 });
    await eb.until(() => eb.of("message").length === 1, "the msg");
    const [refused, fine] = eb.of("message")[0].blobs;
    assert.equal(refused.status, "refused");
    assert.match(refused.detail!, /limit/);
    assert.equal(refused.path, undefined);
    assert.equal(fine.status, "complete");
    assert.equal(await Deno.readTextFile(fine.path!), "fits");
    assert.equal(fine.mime, "text/plain");

    // The sender got err blob_refused with the ref, once.
    await ea.until(() => ea.of("error").length >= 1, "err at a");
    const errs = ea.of("error").filter((e) => e.code === "blob_refused");
    assert.equal(errs.length, 1);
    assert.equal(errs[0].remote, true);
    const ref = (eb.of("message")[0].message.parts.find((p) =>
      p.k === "blob" && p.name === "big.bin"
    ) as { ref: string }).ref;
    assert.equal(errs[0].ref, ref);
    await ea.until(() =>
      ea.of("blob").length === 1, "blob refused at a");
    assert.deepEqual(
      [ea.of("blob")[0].dir, ea.of("blob")[0].status, ea.of("blob")[0].ref],
      ["out", "refused", ref],
    );
    assert.equal((await b.store.blob(a.key, ref, "in"))?.status, "refused");

    // Still the same connection, and more traffic flows.
    const later = await a.send("bob", "still here", { thread: sent.th });
    await a.waitAck(later.id, { timeoutMs: 5000 });
    await eb.until(() => eb.of("message").length === 2, "later msg");
    assert.equal(eb.of("message")[1].text, "still here");
    assert.equal(ea.of("disconnected").length, 0);
    assert.equal(eb.of("disconnected").length, 0);
    assert.equal(ea.of("connected").length, 1);
  } finally {
    await a.close();
    await b.close();
    await Promise.all([ea.done, eb.done]);
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("a file over the sender's own limit is rejected before anything is queued", async () => {
  const root = await Deno.makeTempDir();
  const { a, b, ea, eb } = await pair(root, { maxBlobBytes: 1000 });
  try {
    const ok = `${root}/ok.bin`;
    await Deno.writeFile(ok, randomFile(10));
    const big = `${root}/big.bin`;
    await Deno.writeFile(big, randomFile(1001));
    const before = (await a.store.outbox(b.key)).length;
    await assert.rejects(
      () => a.send("bob", "nope", { files: [ok, big] }),
      (e: Error) =>
        /big\.bin is 1001 bytes, over the 1000 byte limit/.test(e.message) &&
        !e.message.includes("\n"),
    );
    await assert.rejects(
      () => a.send("bob", "nope", { files: [`${root}/missing.bin`] }),
      /cannot send .*missing\.bin: no such file/,
    );
    assert.equal((await a.store.outbox(b.key)).length, before);
    assert.deepEqual(await spoolFiles(`${root}/a`), []);
    assert.equal((await a.store.blobs()).length, 0);
    // Nothing reached b either; a normal send still works.
    const s = await a.send("bob", "fine", { files: [ok] });
    await a.waitAck(s.id, { timeoutMs: 5000 });
    await eb.until(() => eb.of("message").length === 1, "fine msg");
    assert.equal(eb.of("message")[0].text, "fine");
  } finally {
    await a.close();
    await b.close();
    await Promise.all([ea.done, eb.done]);
    await Deno.remove(root, { recursive: true });
  }
});
