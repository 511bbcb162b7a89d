/**
 * `OutboxWriter` writes a replay page, and a batch of live entries, in one
 * socket write (the transport is corked while they queue: the first line
 * no longer goes alone with the rest behind it), and a lone live entry at
 * once.
 */

import assert from "node:assert/strict";
import {
  OutboxWriter,
  type OutboxWriterHost,
} from "../../actors/outbox_writer.ts";
import { BatchedWriter } from "../../net/batched_writer.ts";
import type { Transport } from "../../net/transport.ts";
import type { OutboxEntry } from "../../storage/store.ts";

/** A transport over a {@link BatchedWriter} whose socket records each write's lines. */
function recordingTransport() {
  const writes: number[] = []; // lines per socket write
  const writer = new BatchedWriter({
    write(bytes: Uint8Array): Promise<number> {
      writes.push(bytes.filter((b) => b === 10).length);
      return Promise.resolve(bytes.length);
    },
  }, { onFail() {} });
  const transport: Transport = {
    localAddr: "test:a",
    remoteAddr: "test:b",
    closed: false,
    start() {},
    write: (frame) => writer.write(frame),
    writeThen: (frame, done, tag) => writer.writeThen(frame, done, tag),
    cork: () => writer.cork(),
    uncork: () => writer.uncork(),
    flush: () => writer.flush(),
    close() {},
  };
  return { writes, transport, writer };
}

function host(sent: string[]): OutboxWriterHost {
  return {
    open: () => true,
    stopped: () => false,
    chain(task) {
      void task();
    },
    wrote() {},
    end(reason) {
      throw new Error(reason);
    },
    sent: (entry) => void sent.push(entry.id),
    note() {},
  };
}

function entry(n: number, th = "t"): OutboxEntry {
  const id = `01J${String(n).padStart(10, "0")}`;
  return {
    peer: "p",
    id,
    ts: "2026-01-01T00:00:00Z",
    t: "msg",
    th,
    fields: { t: "msg", th, parts: [{ k: "text", text: "hi" }] },
    queuedAt: 0,
  };
}

async function* pages(...sizes: number[]): AsyncIterable<OutboxEntry[]> {
  let n = 0;
  for (const size of sizes) {
    yield Array.from({ length: size }, () => entry(++n));
  }
}

Deno.test("each replay page goes out in one socket write", async () => {
  const { writes, transport, writer } = recordingTransport();
  const sent: string[] = [];
  const out = new OutboxWriter(transport, host(sent));
  await out.replay(pages(64, 128, 3));
  await writer.flush();
  assert.deepEqual(writes, [64, 128, 3]);
  assert.equal(sent.length, 195);
});

Deno.test("a lone live entry is written at once; a batch of them in one write", async () => {
  const { writes, transport, writer } = recordingTransport();
  const out = new OutboxWriter(transport, host([]));
  out.send([entry(1)]);
  assert.deepEqual(writes, [1], "written before send returned");
  await writer.flush();
  out.send([entry(2), entry(3), entry(4)]);
  await writer.flush();
  assert.deepEqual(writes, [1, 3]);
});

Deno.test("corked lines are let out before the writer waits for room", async () => {
  const { writes, transport, writer } = recordingTransport();
  // A small bound: the window (half of it) fills after a few lines.
  const out = new OutboxWriter(transport, host([]), 8 * 1024);
  await out.replay(pages(10));
  await writer.flush();
  assert.equal(writes.reduce((a, b) => a + b, 0), 10);
  assert.ok(writes.length > 1, "the page went out in pieces as room came");
});
