// What a remote can make a real daemon keep on disk (issue 25 item 6): the
// traffic log is capped in bytes and keeps no bodies of ignored lines;
// unfinished blobs are capped per peer and expire.

import assert from "node:assert/strict";
import { Connection } from "../../actors/connection.ts";
import { dial } from "../../net/transport.ts";
import { KvStore } from "../../storage/kv_store.ts";
import { MemoryStore } from "../../storage/memory_store.ts";
import { encodeBase64 } from "../../wire/base64.ts";
import { Signer } from "../../wire/keys.ts";
import { startDaemon } from "../helpers/awp_daemon.ts";

/** A raw connection of our own to `addr`, collecting the lines it gets. */
async function rawClient(addr: string): Promise<{
  conn: Connection;
  store: MemoryStore;
  got: Record<string, unknown>[];
  acks: () => number;
  key: string;
}> {
  const signer = await Signer.generate();
  const got: Record<string, unknown>[] = [];
  const store = new MemoryStore();
  let acks = 0;
  const conn = new Connection({
    transport: await dial(addr),
    signer,
    store,
    dialed: true,
    timeouts: { pingInterval: 0 },
    onAck: () => acks++,
    onLine: (_c, dir, raw) => {
      if (dir === "in") got.push(JSON.parse(raw));
    },
  });
  conn.start();
  await conn.established;
  return { conn, store, got, acks: () => acks, key: signer.key };
}

async function until(what: string, test: () => boolean | Promise<boolean>) {
  const deadline = Date.now() + 20_000;
  while (!(await test())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

Deno.test("hostile: the traffic log stays under its byte bound and keeps no body of an ignored line", async () => {
  const home = await Deno.makeTempDir({ prefix: "awp-hostile-log-" });
  const cap = 3 * 1024 * 1024;
  const daemon = await startDaemon(home, ["--max-log-bytes", String(cap)]);
  try {
    const { conn, store, acks } = await rawClient(daemon.addr);
    const msgs = (n: number, size: number) =>
      store.enqueue(
        daemon.key,
        Array.from({ length: n }, () => ({
          fields: {
            t: "msg",
            th: "th-log",
            parts: [{ k: "text", text: "y".repeat(size) }],
          },
        })),
      );
    // 10 msgs of 100 KiB (their bodies are the log's to keep), then 20
    // ignored lines of 900 KiB, then one more msg: all in order on one
    // connection, so its ack means every line before it was handled.
    conn.sendEntries(await msgs(10, 100 * 1024));
    const big = "x".repeat(900 * 1024);
    for (let i = 0; i < 20; i++) conn.sendLine({ t: "junk", body: big });
    conn.sendEntries(await msgs(1, 10));
    await until("every msg acked", () => acks() === 11);
    conn.close("done");
    await conn.closed;
  } finally {
    await daemon.stop();
  }
  const store = await KvStore.open(`${home}/awp.kv`, {
    maxLogBytes: Infinity,
  });
  try {
    const log = await store.readLog({});
    const bytes = log.reduce((n, e) => n + e.line.length, 0);
    assert.ok(bytes <= cap, `log holds ${bytes} bytes, bound ${cap}`);
    const junk = log.filter((e) => e.t === "junk");
    assert.ok(junk.every((e) => e.line.length < 200), "no ignored body kept");
    // The ignored lines took (almost) no room: every msg is still there.
    assert.equal(log.filter((e) => e.t === "msg").length, 11);
  } finally {
    store.close();
    await Deno.remove(home, { recursive: true });
  }
});

Deno.test("hostile: unfinished blobs are capped per peer and expire with their temp files", async () => {
  const home = await Deno.makeTempDir({ prefix: "awp-hostile-blob-" });
  const cap = 4 * 1024 * 1024;
  const daemon = await startDaemon(home, [
    "--max-blob",
    String(1024 * 1024), // the per-peer bound is at least this
    "--max-unfinished-blob-bytes",
    String(cap),
    "--unfinished-blob-ttl",
    "2",
  ]);
  try {
    const { conn, got, key } = await rawClient(daemon.addr);
    const data = encodeBase64(new Uint8Array(256 * 1024).fill(7));
    // 10 blobs of 2 chunks (512 KiB) each begun, none finished: 5 MiB.
    for (let b = 0; b < 10; b++) {
      for (let n = 0; n < 2; n++) {
        conn.sendLine({ t: "chunk", ref: `blob${b}`, n, last: false, data });
      }
    }
    await until(
      "a refusal",
      () => got.some((l) => l.t === "err" && l.code === "blob_refused"),
    );
    const refused = got.find((l) => l.code === "blob_refused")!;
    assert.match(String(refused.detail), /unfinished blobs from this peer/);
    const peerDir = `${home}/blobs/${key.slice("ed25519:".length)}`;
    const held = async () => {
      let total = 0;
      for await (const e of Deno.readDir(peerDir)) {
        // Expiry may remove it meanwhile.
        total += (await Deno.stat(`${peerDir}/${e.name}`).catch(() => ({
          size: 0,
        }))).size;
      }
      return total;
    };
    assert.ok((await held()) <= cap, "no more than the bound on disk");
    // Past the TTL, every unfinished blob's temp file is gone.
    await until(
      "the unfinished blobs to expire",
      async () => (await held()) === 0,
    );
    conn.close("done");
    await conn.closed;
  } finally {
    await daemon.stop();
    await Deno.remove(home, { recursive: true });
  }
});
