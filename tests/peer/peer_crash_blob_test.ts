/**
 * Chunk durability across kill -9: a receiving Peer in its own process is
 * killed at random moments while a file streams in, then restarted on the
 * same home. Chunk bytes are synced to the sink before the chunk commits as
 * seen (Connection's beforeCommit), so no chunk is ever seen but missing:
 * the file must arrive byte-identical, with no blob error, every time.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { Peer } from "../../peer/peer.ts";

const FIXTURE = new URL("../fixtures/blob_receiver.ts", import.meta.url)
  .pathname;

interface Receiver {
  child: Deno.ChildProcess;
  lines: Array<Record<string, unknown>>;
  wait(pred: (l: Record<string, unknown>) => boolean, ms: number): Promise<
    Record<string, unknown>
  >;
  done: Promise<void>;
}

function spawnReceiver(home: string, sock: string): Receiver {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", FIXTURE, "--home", home, "--listen", `unix:${sock}`],
    stdout: "piped",
    stderr: "null",
    stdin: "null",
  }).spawn();
  const lines: Array<Record<string, unknown>> = [];
  const waiters = new Set<() => void>();
  const done = (async () => {
    let buffer = "";
    for await (
      const text of child.stdout.pipeThrough(new TextDecoderStream())
    ) {
      buffer += text;
      let nl;
      while ((nl = buffer.indexOf("\n")) >= 0) {
        const line = buffer.slice(0, nl);
        buffer = buffer.slice(nl + 1);
        try {
          lines.push(JSON.parse(line));
        } catch { /* not ours */ }
        for (const w of waiters) w();
      }
    }
  })();
  return {
    child,
    lines,
    done,
    async wait(pred, ms) {
      const deadline = Date.now() + ms;
      while (true) {
        const hit = lines.find(pred);
        if (hit) return hit;
        if (Date.now() > deadline) {
          throw new Error(
            `receiver: timed out; saw ${lines.map((l) => l.event).join(",")}`,
          );
        }
        await new Promise<void>((resolve) => {
          const t = setTimeout(done, 100);
          function done() {
            clearTimeout(t);
            waiters.delete(done);
            resolve();
          }
          waiters.add(done);
        });
      }
    },
  };
}

async function kill(r: Receiver): Promise<void> {
  try {
    r.child.kill("SIGKILL");
  } catch { /* already gone */ }
  await r.child.status;
  await r.done;
}

Deno.test("kill -9 of the receiver mid-transfer never loses a chunk", async () => {
  const dir = await Deno.makeTempDir({ prefix: "awp-crash-blob-" });
  const home = `${dir}/home`;
  const sock = `${dir}/r.sock`;
  const file = `${dir}/payload.bin`;
  const data = crypto.getRandomValues(new Uint8Array(60_000));
  // Several times the receiver's 4 MiB of lines in flight, so no one batch
  // can take the rest of the file past the next kill point.
  const payload = new Uint8Array(16 * 1024 * 1024);
  for (let i = 0; i < payload.length; i += data.length) {
    payload.set(data.subarray(0, payload.length - i), i);
  }
  await Deno.writeFile(file, payload);
  const want = createHash("sha256").update(payload).digest("hex");

  let receiver = spawnReceiver(home, sock);
  const sender = await Peer.open({
    memory: true,
    name: "sender",
    chunkSize: 16_384, // 1024 chunks: many commit windows to land in
    dialer: { timing: { baseMs: 50, capMs: 200 }, random: () => 0.5 },
  });
  try {
    const ready = await receiver.wait((l) => l.event === "ready", 20_000);
    await sender.connect(String(ready.addr));
    const { id } = await sender.send(String(ready.key), "the payload", {
      files: [file],
    });
    let kills = 0;
    for (const at of [0.2, 0.5, 0.8]) {
      // Kill once a random part of the file is in (bytes synced so far).
      const mark = (at + (Math.random() - 0.5) * 0.2) * payload.length;
      const seen = await receiver.wait(
        (l) =>
          l.event === "message" ||
          (l.event === "progress" && Number(l.bytes) >= mark),
        30_000,
      );
      if (seen.event === "message") break;
      await kill(receiver);
      kills++;
      receiver = spawnReceiver(home, sock);
      await receiver.wait((l) => l.event === "ready", 20_000);
    }
    const message = await receiver.wait(
      (l) => l.event === "message",
      60_000,
    );
    const blobs = message.blobs as Array<Record<string, unknown>>;
    assert.equal(blobs.length, 1);
    assert.equal(blobs[0].status, "complete", String(blobs[0].detail));
    assert.equal(blobs[0].sha256, want);
    const got = await Deno.readFile(String(blobs[0].path));
    assert.equal(got.length, payload.length);
    assert.equal(createHash("sha256").update(got).digest("hex"), want);
    const errors = receiver.lines.filter((l) => l.event === "error");
    // Replayed chunks the sink already had were duplicates, not errors.
    assert.deepEqual(errors, [], "no blob errors after the restarts");
    assert.equal(kills, 3, "the receiver was killed three times");
    await sender.waitAck(id, { timeoutMs: 20_000 });
  } finally {
    await sender.close();
    await kill(receiver);
    await Deno.remove(dir, { recursive: true });
  }
});
