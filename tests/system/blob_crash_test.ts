/**
 * Issue 5: a 20 MiB blob cut by kill -9 of either side resumes from the
 * stored chunk index and completes byte-identical.
 *
 * The sender dials a small TCP relay in this process that forwards to the
 * receiver's unix socket and notes the index `n` of every chunk line going
 * through, per connection: that is how the test sees which chunks were sent
 * again after the restart. The receiver advertises its own socket in hello;
 * the sender is pinned to the relay (`--pin`) so redials go through it.
 */

import assert from "node:assert/strict";
import { CrashPeer } from "../fixtures/crash_peer.ts";
import { writeBlobPlan } from "../helpers/blob_plan.ts";
import { sha256Hex as sha256 } from "../helpers/sha256_hex.ts";

const MiB = 1024 * 1024;
const SIZE = 20 * MiB;
const CHUNKS = SIZE / 262144; // the default chunk size
/** Chunks stored before the kill: "after some progress". */
const KILL_AFTER = 12;

const CHUNK_N = /"t":"chunk"[^]*?"n":(\d+)|"n":(\d+)[^]*?"t":"chunk"/;

/**
 * Forwards TCP connections to a unix socket and records, per connection,
 * the `n` of each chunk line flowing from the dialer to the listener.
 */
class ChunkCountingRelay {
  readonly #listener: Deno.TcpListener;
  readonly #path: string;
  readonly #sockets = new Set<Deno.Conn>();
  readonly #tasks = new Set<Promise<void>>();
  readonly #accepting: Promise<void>;
  /** Chunk indexes seen, one list per relayed connection, in order. */
  readonly connections: number[][] = [];

  constructor(path: string) {
    this.#path = path;
    this.#listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    this.#accepting = this.#accept();
  }

  get addr(): string {
    return `tcp:127.0.0.1:${this.#listener.addr.port}`;
  }

  async #accept(): Promise<void> {
    try {
      for await (const down of this.#listener) {
        const task = this.#serve(down);
        this.#tasks.add(task);
        void task.finally(() => this.#tasks.delete(task));
      }
    } catch { /* closed */ }
  }

  async #serve(down: Deno.Conn): Promise<void> {
    this.#sockets.add(down);
    let up: Deno.Conn;
    try {
      up = await Deno.connect({ transport: "unix", path: this.#path });
    } catch {
      this.#close(down);
      return; // the receiver is down: the dialer sees a closed connection
    }
    this.#sockets.add(up);
    const seen: number[] = [];
    this.connections.push(seen);
    const both = () => {
      this.#close(down);
      this.#close(up);
    };
    await Promise.all([
      this.#pipe(down, up, (n) => seen.push(n)).finally(both),
      this.#pipe(up, down).finally(both),
    ]);
  }

  async #pipe(
    from: Deno.Conn,
    to: Deno.Conn,
    onChunk?: (n: number) => void,
  ): Promise<void> {
    const buffer = new Uint8Array(256 * 1024);
    let pieces: Uint8Array[] = [];
    const decoder = new TextDecoder();
    try {
      for (;;) {
        const got = await from.read(buffer);
        if (got === null) return;
        const data = buffer.slice(0, got);
        if (onChunk) {
          let start = 0;
          for (
            let nl = data.indexOf(10);
            nl >= 0;
            nl = data.indexOf(10, start)
          ) {
            pieces.push(data.subarray(start, nl));
            const line = decoder.decode(concat(pieces));
            pieces = [];
            start = nl + 1;
            const m = CHUNK_N.exec(line.length > 0 ? line : "");
            if (m) onChunk(Number(m[1] ?? m[2]));
          }
          pieces.push(data.subarray(start));
        }
        for (let done = 0; done < data.length;) {
          done += await to.write(data.subarray(done));
        }
      }
    } catch { /* a side closed */ }
  }

  #close(conn: Deno.Conn): void {
    if (!this.#sockets.delete(conn)) return;
    try {
      conn.close();
    } catch { /* closed */ }
  }

  /** Chunk indexes relayed on connections opened from index `from` on. */
  chunksSince(from: number): number[] {
    return this.connections.slice(from).flat();
  }

  async close(): Promise<void> {
    this.#listener.close();
    await this.#accepting;
    for (const s of [...this.#sockets]) this.#close(s);
    await Promise.all([...this.#tasks]);
  }
}

function concat(pieces: Uint8Array[]): Uint8Array {
  if (pieces.length === 1) return pieces[0];
  const out = new Uint8Array(pieces.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of pieces) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/** Runs one 20 MiB transfer, kills `victim` mid-way, restarts it, checks. */
async function cutAndResume(victim: "receiver" | "sender"): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "awp-blobcrash-" });
  const want = await writeBlobPlan(dir, SIZE, "twenty MiB");
  const sock = `${dir}/rx.sock`;
  const relay = new ChunkCountingRelay(sock);
  const rxArgs = [
    "--home",
    `${dir}/rx`,
    "--listen",
    `unix:${sock}`,
    "--progress",
    "20",
  ];
  const all: CrashPeer[] = [];
  let rx = CrashPeer.spawn(rxArgs);
  all.push(rx);
  let tx: CrashPeer | undefined;
  try {
    const rxKey = (await rx.waitFor((l) => l.event === "ready", "rx ready"))
      .key as string;
    const txArgs = [
      "--home",
      `${dir}/tx`,
      "--to",
      rxKey,
      "--connect",
      relay.addr,
      "--pin",
      relay.addr,
      "--plan",
      `${dir}/plan.json`,
      "--journal",
      `${dir}/journal.jsonl`,
    ];
    tx = CrashPeer.spawn(txArgs);
    all.push(tx);

    // Some progress stored at the receiver, then the kill.
    const progress = await rx.waitFor(
      (l) =>
        l.event === "stored" && l.dir === "in" &&
        (l.next as number) >= KILL_AFTER,
      `${KILL_AFTER} chunks stored`,
      30_000,
    );
    const target = victim === "receiver" ? rx : tx;
    target.kill9();
    await target.reap();
    const stored = Math.max(
      ...rx.of("stored").filter((l) => l.dir === "in").map((l) =>
        Number(l.next ?? 0)
      ),
    );
    assert.ok(stored >= KILL_AFTER && stored < CHUNKS, `stored ${stored}`);
    // (More of the first run may still be in socket buffers: count later.)
    assert.equal(relay.chunksSince(0)[0], 0, "the first run starts at chunk 0");
    const mark = relay.connections.length;
    if (victim === "receiver") {
      rx = CrashPeer.spawn(rxArgs);
      all.push(rx);
      await rx.waitFor((l) => l.event === "ready", "rx again");
    } else {
      tx = CrashPeer.spawn(txArgs);
      all.push(tx);
      await tx.waitFor((l) => l.event === "ready", "tx again");
    }

    const message = await rx.waitFor(
      (l) => l.event === "message" && l.th === "thr_big",
      "the msg after the resumed transfer",
      45_000,
    );
    const [blob] = message.blobs as Array<
      { status: string; sha256?: string; path?: string; detail?: string }
    >;
    assert.equal(blob.status, "complete", blob.detail);
    assert.equal(blob.sha256, want);
    assert.equal(sha256(await Deno.readFile(blob.path!)), want);

    // Resumed, not restarted: no chunk below the stored index went again.
    const again = relay.chunksSince(mark);
    console.log(
      `${victim} killed at ${progress.next} stored chunks (${stored} seen stored); the first connection relayed ${
        relay.chunksSince(0).length - again.length
      } chunk lines, the second ${again.length} on ${
        relay.connections.length - mark
      } connection(s), from n=${Math.min(...again)}`,
    );
    if (relay.connections.length - mark > 1) {
      // Not a failure, but worth seeing why a live connection dropped.
      console.log(
        "reconnects in the second run:",
        JSON.stringify(
          all.flatMap((p, i) =>
            p.of("disconnected").map((l) =>
              `run ${i} (${
                p === tx ? "tx" : p === rx ? "rx" : "old"
              }): ${l.reason}`
            )
          ),
        ),
      );
    }
    if (Deno.env.get("BLOB_CRASH_DEBUG")) {
      console.log(
        JSON.stringify(
          relay.connections.map((c) => [c.length, c[0], c.at(-1)]),
        ),
        mark,
        JSON.stringify(
          all.map((p) =>
            p.lines.filter((l) =>
              l.event !== "stored" && l.event !== "progress"
            ).map((l) => `${l.event}:${l.reason ?? l.id ?? ""}`)
          ),
        ),
      );
    }
    assert.ok(again.length > 0, "chunks were sent after the restart");
    // The sink stores a chunk (and its record) just before the line is
    // committed as seen; a kill between the two makes the sender replay the
    // chunks of that last commit, which the sink takes as duplicates. One
    // commit holds the chunk lines completed by one 64 KiB read: at most one
    // 350 KB chunk line.
    const COMMIT_WINDOW = 1;
    assert.ok(
      Math.min(...again) >= stored - COMMIT_WINDOW,
      `resent from chunk ${Math.min(...again)}, below the stored ${stored}`,
    );
    // A reconnect during the second run may repeat a chunk or two, not all.
    assert.ok(again.length < CHUNKS, `${again.length} chunk lines resent`);
    assert.ok(again.includes(CHUNKS - 1), "the last chunk came");
    const everyN = new Set(relay.chunksSince(0));
    assert.equal(everyN.size, CHUNKS, "every chunk index went through");
  } finally {
    for (const p of all) {
      if (!p.exited) p.kill9();
      await p.reap().catch(() => {});
    }
    await relay.close();
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("a 20 MiB blob cut by kill -9 of the receiver resumes from the stored chunk and arrives identical", async () => {
  await cutAndResume("receiver");
});

Deno.test("a 20 MiB blob cut by kill -9 of the sender resumes from the stored chunk and arrives identical", async () => {
  await cutAndResume("sender");
});
