/**
 * What a new connection's resume relies on from the connections before it
 * (ReceiveCommitter.previousSettled and quietMark), over a real store: two
 * committers for the same remote, one per connection.
 */

import assert from "node:assert/strict";
import {
  type CommitterHost,
  ReceiveCommitter,
} from "../../actors/receive_committer.ts";
import { MemoryStore } from "../../storage/memory_store.ts";
import { readFrame } from "../../wire/read_frame.ts";

const REMOTE = "ed25519:BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB";

/** A host that delivers nowhere and fails the test on a failure. */
function quietHost(): CommitterHost {
  return {
    remoteKey: () => REMOTE,
    beforeCommit: () => undefined,
    takeChunk: () => {},
    needsBeforeCommit: () => false,
    deliver: () => {},
    fail: (detail) => assert.fail(detail),
  };
}

function committer(store: MemoryStore, acked: string[]): ReceiveCommitter {
  return new ReceiveCommitter(store, quietHost(), {
    writeLine: (line) => void acked.push(String(line.re)),
  });
}

function msg(id: string) {
  const line = JSON.stringify({
    t: "msg",
    id,
    ts: "2026-01-01T00:00:00.000Z",
    th: "t1",
    parts: [{ k: "text", text: "hi" }],
  });
  const read = readFrame(new TextEncoder().encode(line));
  assert.ok(read.ok);
  return read.frame;
}

Deno.test("quietMark: a seen read ahead stays current only while no earlier connection's lines are in flight or queued since", async () => {
  const store = new MemoryStore();
  const acked: string[] = [];
  try {
    const old = committer(store, acked);
    const fresh = committer(store, acked);
    const mark = fresh.quietMark();
    assert.notEqual(mark, undefined, "nothing in flight: a mark");
    // The old connection reads a line after the mark and commits it.
    old.stage(msg("01J0000000000000000000001"));
    const committed = old.commit();
    assert.equal(fresh.quietMark(), undefined, "its line is in flight");
    const waited = fresh.previousSettled();
    await committed;
    await waited;
    assert.deepEqual(acked, ["01J0000000000000000000001"]);
    // Settled, but a line was queued since the mark: the read ahead is stale.
    assert.notEqual(fresh.quietMark(), undefined);
    assert.notEqual(fresh.quietMark(), mark);
    assert.deepEqual(await store.seen(REMOTE), {
      t1: "01J0000000000000000000001",
    });
    // Nothing more received: marks taken now stay equal.
    assert.equal(fresh.quietMark(), fresh.quietMark());
  } finally {
    store.close();
  }
});

Deno.test("a commit's acks are written inside one corked call (one socket write), a lone ack as it comes", async () => {
  const store = new MemoryStore();
  const writes: string[][] = [];
  let open: string[] | undefined;
  const c = new ReceiveCommitter(store, quietHost(), {
    writeLine(line) {
      if (open) open.push(String(line.re));
      else writes.push([String(line.re)]);
    },
    corked(writeLines) {
      open = [];
      writeLines();
      writes.push(open);
      open = undefined;
    },
  });
  try {
    c.stage(msg("01J0000000000000000000001"));
    await c.commit();
    for (const n of [2, 3, 4]) c.stage(msg(`01J000000000000000000000${n}`));
    await c.commit();
    assert.deepEqual(writes, [
      ["01J0000000000000000000001"],
      [
        "01J0000000000000000000002",
        "01J0000000000000000000003",
        "01J0000000000000000000004",
      ],
    ]);
  } finally {
    store.close();
  }
});
