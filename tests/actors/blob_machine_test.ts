import assert from "node:assert/strict";
import { createActor } from "npm:xstate@^5.33.3";
import { getShortestPaths } from "npm:xstate@^5.33.3/graph";
import {
  type BlobProgress,
  chunkSentEvent,
  incomingBlobMachine,
  outgoingBlobMachine,
  PROGRESS_EVERY_MS,
  sinkEvent,
} from "../../actors/blob_machine.ts";
import { BlobSink } from "../../storage/blob_sink.ts";
import {
  chunkDrafts,
  chunkMessage,
  snapshotToSpool,
} from "../../storage/spool.ts";
import type { OutboxEntry } from "../../storage/store.ts";

const PEER = "ed25519:CCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCC";

function outgoing(size: number, stopped: string[] = []) {
  const machine = outgoingBlobMachine.provide({
    actions: {
      stopSending: ({ context }) => void stopped.push(`stop ${context.ref}`),
      releaseSpool: ({ context }) =>
        void stopped.push(`release ${context.ref}`),
    },
  });
  const actor = createActor(machine, {
    input: { peer: PEER, ref: "b1", th: "t1", size },
  });
  const progress: BlobProgress[] = [];
  actor.on("progress", (p) => progress.push(p));
  actor.start();
  return { actor, progress };
}

function chunk(
  n: number,
  offset: number,
  length: number,
  last: boolean,
  at: number,
) {
  return { type: "CHUNK_SENT" as const, n, offset, length, last, at };
}

Deno.test("chunk progress is reported at most every PROGRESS_EVERY_MS; state changes always", () => {
  const { actor, progress } = outgoing(1_000, []);
  actor.send({ type: "START" });
  for (let i = 0; i < 9; i++) {
    actor.send(chunk(i, i * 100, 100, false, 1_000 + i * 30));
  }
  actor.send(chunk(9, 900, 100, true, 1_300));
  // 0 ms, 120 ms, 240 ms: three of nine chunks, then awaitingAck at once.
  assert.deepEqual(
    progress.map((p) => [p.status, p.bytes]),
    [
      ["queued", 0],
      ["sending", 0],
      ["sending", 100],
      ["sending", 500],
      ["sending", 900],
      ["awaitingAck", 1_000],
    ],
  );
  assert.equal(PROGRESS_EVERY_MS, 100);
});

Deno.test("outgoing: queued, sending, awaitingAck, done, with progress and rate", () => {
  const effects: string[] = [];
  const { actor, progress } = outgoing(250, effects);
  assert.equal(actor.getSnapshot().value, "queued");
  actor.send({ type: "START" });
  actor.send(chunk(0, 0, 100, false, 1_000));
  actor.send(chunk(1, 100, 100, false, 2_000));
  assert.equal(actor.getSnapshot().value, "sending");
  assert.equal(
    actor.getSnapshot().context.rate,
    100,
    "100 bytes in the second second",
  );
  actor.send(chunk(2, 200, 50, true, 2_500));
  assert.equal(actor.getSnapshot().value, "awaitingAck");
  assert.equal(actor.getSnapshot().context.bytes, 250);
  actor.send({ type: "ACKED" });
  assert.equal(actor.getSnapshot().value, "done");
  assert.equal(actor.getSnapshot().status, "done");
  assert.deepEqual(
    progress.map((p) => [p.status, p.bytes, p.total]),
    [
      ["queued", 0, 250],
      ["sending", 0, 250],
      ["sending", 100, 250],
      ["sending", 200, 250],
      ["awaitingAck", 250, 250],
      ["done", 250, 250],
    ],
  );
  assert.ok(
    progress.every((p) => p.dir === "out" && p.ref === "b1" && p.th === "t1"),
  );
  assert.deepEqual(effects, ["release b1"]);
});

Deno.test("outgoing: err blob_refused stops the transfer wherever it is", () => {
  const effects: string[] = [];
  const { actor, progress } = outgoing(1000, effects);
  actor.send(chunk(0, 0, 100, false, 0));
  actor.send({ type: "REFUSED", detail: "over 50 MiB" });
  assert.equal(actor.getSnapshot().value, "refused");
  assert.equal(actor.getSnapshot().context.detail, "over 50 MiB");
  assert.deepEqual(effects, ["stop b1", "release b1"]);
  assert.equal(progress.at(-1)?.status, "refused");
  assert.equal(progress.at(-1)?.detail, "over 50 MiB");
  // Final: later events change nothing.
  actor.send(chunk(1, 100, 100, false, 1));
  actor.send({ type: "ACKED" });
  assert.equal(actor.getSnapshot().value, "refused");

  const queued = outgoing(10);
  queued.actor.send({ type: "REFUSED" });
  assert.equal(queued.actor.getSnapshot().value, "refused");
  assert.equal(
    queued.actor.getSnapshot().context.detail,
    "refused by the peer",
  );
});

Deno.test("outgoing: a dropped connection queues it again and a replay restarts the run", () => {
  const { actor } = outgoing(300);
  actor.send(chunk(0, 0, 100, false, 0));
  actor.send(chunk(1, 100, 100, false, 1_000));
  actor.send({ type: "DISCONNECTED" });
  assert.equal(actor.getSnapshot().value, "queued");
  assert.equal(actor.getSnapshot().context.rate, 0);
  // The peer had seen chunk 0 only: the replay starts at chunk 1.
  actor.send({ type: "START" });
  actor.send(chunk(1, 100, 100, false, 5_000));
  assert.equal(actor.getSnapshot().context.bytes, 200);
  assert.equal(
    actor.getSnapshot().context.rate,
    0,
    "a new run has no rate yet",
  );
  actor.send(chunk(2, 200, 100, true, 5_500));
  assert.equal(actor.getSnapshot().context.rate, 200);
  actor.send({ type: "FAILED", detail: "spool file gone" });
  assert.equal(actor.getSnapshot().value, "failed");
});

Deno.test("outgoing: every state is reachable in the chart", () => {
  const paths = getShortestPaths(outgoingBlobMachine, {
    input: { peer: PEER, ref: "r", size: 10 },
    events: [
      { type: "START" },
      chunk(0, 0, 5, false, 0),
      chunk(1, 5, 5, true, 0),
      { type: "ACKED" },
      { type: "REFUSED" },
      { type: "FAILED", detail: "x" },
      { type: "DISCONNECTED" },
    ],
  });
  const reached = new Set(paths.map((p) => String(p.state.value)));
  assert.deepEqual(
    [...reached].sort(),
    ["awaitingAck", "done", "failed", "queued", "refused", "sending"],
  );
});

Deno.test("outgoing fed from real outbox entries of a spooled file", async () => {
  const dir = await Deno.makeTempDir({ prefix: "awp-blobm-" });
  try {
    const bytes = new Uint8Array(600_000);
    crypto.getRandomValues(bytes.subarray(0, 65536));
    await Deno.writeFile(`${dir}/f`, bytes);
    const spooled = await snapshotToSpool(`${dir}/spool`, `${dir}/f`, {
      maxBytes: 1 << 20,
      hash: true,
    });
    const entries: OutboxEntry[] = chunkDrafts(spooled, { th: "t1" }).map((
      d,
      i,
    ) => ({
      peer: PEER,
      id: `0${i}`,
      ts: "2026-01-01T00:00:00.000Z",
      t: d.fields.t,
      th: "t1",
      fields: d.fields,
      chunk: d.chunk,
      queuedAt: 0,
    }));
    const sink = await BlobSink.open({
      peer: PEER,
      ref: spooled.ref,
      dir: `${dir}/in`,
    });
    const out = createActor(outgoingBlobMachine, {
      input: { peer: PEER, ref: spooled.ref, size: spooled.size },
    }).start();
    const incoming = createActor(incomingBlobMachine, {
      input: { peer: PEER, ref: spooled.ref },
    });
    const seen: BlobProgress[] = [];
    incoming.on("progress", (p) => seen.push(p));
    incoming.start();
    out.send({ type: "START" });
    // A second apart: each chunk is due a progress report.
    for (const [i, entry] of entries.entries()) {
      const line = await chunkMessage(entry);
      out.send(chunkSentEvent(entry, 1_000 * (i + 1))!);
      const event = sinkEvent(
        await sink.write(line as unknown as Parameters<BlobSink["write"]>[0]),
        1_000 * (i + 1),
      );
      if (event) incoming.send(event);
    }
    assert.equal(out.getSnapshot().value, "awaitingAck");
    out.send({ type: "ACKED" });
    assert.equal(out.getSnapshot().value, "done");
    const snap = incoming.getSnapshot();
    assert.equal(snap.value, "complete");
    assert.equal(snap.context.bytes, 600_000);
    assert.equal(snap.context.total, 600_000);
    assert.equal(snap.context.sha256, spooled.sha256);
    assert.deepEqual(seen.map((p) => p.bytes), [262144, 524288, 600000]);
    assert.deepEqual(seen.map((p) => p.status), [
      "receiving",
      "receiving",
      "complete",
    ]);
    assert.equal(
      chunkSentEvent({ ...entries[0], t: "msg", chunk: undefined }),
      undefined,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("incoming: size from the blob part, refusal and failure are final", async () => {
  const a = createActor(incomingBlobMachine, {
    input: { peer: PEER, ref: "a" },
  }).start();
  assert.equal(a.getSnapshot().context.total, -1);
  a.send({ type: "DESCRIBED", total: 50, name: "log.txt" });
  assert.equal(a.getSnapshot().context.total, 50);
  assert.equal(a.getSnapshot().context.name, "log.txt");
  a.send({ type: "CHUNK", bytes: 20, at: 0 });
  a.send({ type: "CHUNK", bytes: 40, at: 2_000 });
  assert.equal(a.getSnapshot().context.rate, 10);
  a.send({ type: "REFUSED", detail: "over the limit" });
  assert.equal(a.getSnapshot().value, "refused");
  a.send({ type: "COMPLETE", bytes: 50, path: "/x", sha256: "00" });
  assert.equal(a.getSnapshot().value, "refused");

  // A real sink's failure maps to FAILED; a non-fatal error maps to nothing.
  const dir = await Deno.makeTempDir({ prefix: "awp-blobm-" });
  try {
    const sink = await BlobSink.open({ peer: PEER, ref: "b", dir });
    assert.equal(
      sinkEvent(await sink.write({ ref: "b", n: 3, last: false, data: "" })),
      undefined,
    );
    const failure = sinkEvent(
      await sink.write({ ref: "b", n: 0, last: false, data: "!!" }),
    );
    assert.equal(failure?.type, "FAILED");
    const discarded: string[] = [];
    const b = createActor(
      incomingBlobMachine.provide({
        actions: {
          discardPartial: ({ context }) => void discarded.push(context.ref),
        },
      }),
      { input: { peer: PEER, ref: "b", bytes: 0 } },
    ).start();
    b.send(failure!);
    assert.equal(b.getSnapshot().value, "failed");
    assert.deepEqual(discarded, ["b"]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
