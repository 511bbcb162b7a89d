import assert from "node:assert/strict";
import { createActor } from "npm:xstate@^5.33.3";
import {
  isThreadOpen,
  SOFT_STATES,
  threadEvent,
  threadMachine,
} from "../../actors/thread_machine.ts";
import { KvStore } from "../../storage/kv_store.ts";
import type { ThreadRecord } from "../../storage/store.ts";
import type { Msg, State } from "../../wire/types.ts";

const PEER = "ed25519:BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB";

function msg(id: string, text: string, extra: Partial<Msg> = {}): Msg {
  return {
    t: "msg",
    id,
    ts: "2026-03-01T10:00:00.000Z",
    th: "t1",
    parts: [{ k: "text", text }],
    ...extra,
  };
}

function state(id: string, word: string, note?: string): State {
  const s: State = {
    t: "state",
    id,
    ts: `2026-03-01T10:00:0${id.slice(-1)}.000Z`,
    th: "t1",
    state: word,
  };
  if (note !== undefined) s.note = note;
  return s;
}

function start(record?: ThreadRecord) {
  const actor = createActor(threadMachine, {
    input: {
      peer: PEER,
      th: "t1",
      record,
      created: "2026-03-01T09:00:00.000Z",
    },
  });
  // Nothing should come out: the store writes the record, PeerThreads
  // emits the events.
  const emitted: unknown[] = [];
  actor.on("*", (e) => emitted.push(e));
  actor.start();
  return { actor, emitted };
}

Deno.test("the first msg names the thread; later subjects do not rename it", () => {
  const { actor, emitted } = start();
  assert.deepEqual(actor.getSnapshot().value, { mine: "open", theirs: "open" });
  actor.send({
    type: "MSG_IN",
    message: msg("01", "hi", { subject: "Run the suite" }),
  });
  actor.send({
    type: "MSG_IN",
    message: msg("02", "again", { subject: "Renamed?" }),
  });
  const record = actor.getSnapshot().context.record;
  assert.equal(record.subject, "Run the suite");
  assert.equal(record.peer, PEER);
  assert.equal(record.th, "t1");
  assert.equal(record.created, "2026-03-01T09:00:00.000Z");
  assert.deepEqual(emitted, [], "the actor emits nothing");
  actor.stop();
});

Deno.test("a thread we open takes its subject from our first msg", () => {
  const { actor } = start();
  actor.send({
    type: "MSG_OUT",
    message: msg("01", "please", { subject: "Port auth" }),
  });
  actor.send({
    type: "MSG_IN",
    message: msg("02", "ok", { subject: "Other" }),
  });
  assert.equal(actor.getSnapshot().context.record.subject, "Port auth");
  assert.equal(
    actor.getSnapshot().context.record.unread,
    1,
    "our own msg is not unread",
  );
  actor.stop();
});

Deno.test("received msgs are counted unread until read", () => {
  const { actor } = start();
  const unread: number[] = [];
  for (const id of ["01", "02", "03", "04"]) {
    actor.send({ type: "MSG_IN", message: msg(id, `text ${id}`) });
    unread.push(actor.getSnapshot().context.record.unread);
  }
  assert.deepEqual(unread, [1, 2, 3, 4]);
  actor.send({ type: "READ", count: 3 });
  assert.equal(actor.getSnapshot().context.record.unread, 1);
  actor.send({ type: "READ", count: 10 });
  assert.equal(actor.getSnapshot().context.record.unread, 0);
  actor.send({ type: "MSG_IN", message: msg("05", "more") });
  actor.send({ type: "READ" });
  assert.equal(actor.getSnapshot().context.record.unread, 0);
  actor.stop();
});

Deno.test("a redelivered line is dropped, not counted twice", () => {
  const { actor } = start();
  actor.send({ type: "MSG_IN", message: msg("01", "once") });
  actor.send({ type: "MSG_IN", message: msg("01", "once") });
  actor.send({ type: "STATE_IN", message: state("02", "working") });
  const after = actor.getSnapshot().context.record;
  actor.send({ type: "STATE_IN", message: state("02", "working") });
  assert.equal(actor.getSnapshot().context.record.unread, 1);
  assert.equal(
    actor.getSnapshot().context.record,
    after,
    "the redelivered state changed nothing",
  );
  actor.stop();
});

Deno.test("both sides' states live in the mine and theirs regions, with note and time", () => {
  const { actor } = start();
  actor.send(threadEvent("in", msg("01", "go")));
  actor.send(threadEvent("in", state("02", "working", "cloning")));
  actor.send(threadEvent("out", state("03", "waiting")));
  assert.deepEqual(actor.getSnapshot().value, {
    mine: "waiting",
    theirs: "working",
  });
  const record = actor.getSnapshot().context.record;
  assert.deepEqual(record.theirs, {
    state: "working",
    note: "cloning",
    ts: "2026-03-01T10:00:02.000Z",
  });
  assert.deepEqual(record.mine, {
    state: "waiting",
    ts: "2026-03-01T10:00:03.000Z",
  });
  // Every conventional word is a state of the chart.
  for (const [i, word] of SOFT_STATES.entries()) {
    actor.send(threadEvent("in", state(`1${i}`, word)));
    assert.equal(
      (actor.getSnapshot().value as { theirs: string }).theirs,
      word,
    );
  }
  actor.stop();
});

Deno.test("a custom word is the `other` state, and the context keeps the word", () => {
  const { actor } = start();
  actor.send(
    threadEvent("in", state("01", "reviewing", "looking at the diff")),
  );
  assert.deepEqual(actor.getSnapshot().value, {
    mine: "open",
    theirs: "other",
  });
  assert.equal(actor.getSnapshot().context.record.theirs?.state, "reviewing");
  actor.send(threadEvent("in", state("02", "blocked")));
  assert.equal(actor.getSnapshot().context.record.theirs?.state, "blocked");
  actor.send(threadEvent("in", state("03", "working")));
  assert.deepEqual(actor.getSnapshot().value, {
    mine: "open",
    theirs: "working",
  });
  actor.stop();
});

Deno.test("a stored thread restarts in its stored states", () => {
  const record: ThreadRecord = {
    peer: PEER,
    th: "t1",
    subject: "Old task",
    mine: { state: "done", ts: "2026-03-01T10:00:00.000Z" },
    theirs: { state: "deploying", ts: "2026-03-01T10:00:00.000Z" },
    created: "2026-03-01T09:00:00.000Z",
    updated: "2000-01-01T00:00:00.000Z",
    unread: 2,
  };
  const { actor } = start(record);
  assert.deepEqual(actor.getSnapshot().value, {
    mine: "done",
    theirs: "other",
  });
  actor.send({
    type: "MSG_IN",
    message: msg("09", "late", { subject: "New name" }),
  });
  const now = actor.getSnapshot().context.record;
  assert.equal(now.subject, "Old task");
  assert.equal(now.unread, 3);
  assert.equal(now.created, record.created);
  assert.ok(Date.parse(now.updated) > Date.parse(record.updated));
  actor.stop();
});

Deno.test("isThreadOpen: open until either side says done, failed or closed", () => {
  const base: ThreadRecord = {
    peer: PEER,
    th: "t1",
    created: "2026-03-01T09:00:00.000Z",
    updated: "2026-03-01T09:00:00.000Z",
    unread: 0,
  };
  const at = (word: string) => ({ state: word, ts: base.created });
  assert.equal(isThreadOpen(base), true);
  assert.equal(
    isThreadOpen({ ...base, mine: at("working"), theirs: at("waiting") }),
    true,
  );
  assert.equal(isThreadOpen({ ...base, theirs: at("custom") }), true);
  for (const word of ["done", "failed", "closed"]) {
    assert.equal(
      isThreadOpen({ ...base, mine: at(word) }),
      false,
      `mine ${word}`,
    );
    assert.equal(
      isThreadOpen({ ...base, theirs: at(word) }),
      false,
      `theirs ${word}`,
    );
  }
  const updated = Date.parse(base.updated);
  const day = 86_400_000;
  assert.equal(
    isThreadOpen(base, { retentionMs: 7 * day, now: updated + 6 * day }),
    true,
  );
  assert.equal(
    isThreadOpen(base, { retentionMs: 7 * day, now: updated + 8 * day }),
    false,
  );
});

Deno.test("the actor's record is its state: closing our side closes the thread", () => {
  const { actor } = start();
  actor.send(threadEvent("in", msg("01", "go", { subject: "S" })));
  assert.equal(isThreadOpen(actor.getSnapshot().context.record), true);
  actor.send(threadEvent("out", state("02", "closed")));
  const record = actor.getSnapshot().context.record;
  assert.equal(isThreadOpen(record), false);
  assert.equal(actor.getSnapshot().value.mine, "closed");
  // The record is plain data: it survives JSON (what a store keeps).
  assert.deepEqual(JSON.parse(JSON.stringify(record)), record);
  actor.stop();
});

Deno.test("a thread persisted to a Deno KV file comes back in the same states", async () => {
  const dir = await Deno.makeTempDir({ prefix: "awp-thread-" });
  try {
    let store = await KvStore.open(`${dir}/awp.kv`);
    const { actor } = start();
    actor.send(threadEvent("in", msg("01", "go", { subject: "Build it" })));
    actor.send(threadEvent("in", state("02", "working", "compiling")));
    actor.send(threadEvent("out", state("03", "paused")));
    await store.putThread(actor.getSnapshot().context.record);
    actor.stop();
    store.close();

    store = await KvStore.open(`${dir}/awp.kv`);
    try {
      const record = await store.thread(PEER, "t1");
      assert.ok(record);
      assert.equal(record.subject, "Build it");
      assert.equal(record.unread, 1);
      const again = start(record);
      assert.deepEqual(again.actor.getSnapshot().value, {
        mine: "other",
        theirs: "working",
      });
      assert.equal(
        again.actor.getSnapshot().context.record.theirs?.note,
        "compiling",
      );
      again.actor.stop();
    } finally {
      store.close();
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("STORED puts the store's record in and both regions follow it", () => {
  const { actor } = start();
  actor.send(threadEvent("in", msg("01", "go")));
  actor.send(threadEvent("in", msg("02", "again")));
  const stored: ThreadRecord = {
    peer: PEER,
    th: "t1",
    subject: "From the store",
    mine: { state: "done", ts: "2026-03-01T10:00:00.000Z" },
    theirs: { state: "reviewing", ts: "2026-03-01T10:00:00.000Z" },
    created: "2026-03-01T09:00:00.000Z",
    updated: "2026-03-01T10:00:00.000Z",
    unread: 1,
  };
  actor.send({ type: "STORED", record: stored });
  assert.deepEqual(actor.getSnapshot().context.record, stored);
  assert.deepEqual(actor.getSnapshot().value, {
    mine: "done",
    theirs: "other",
  });
  actor.stop();
});

Deno.test("MSGS_IN takes a committed run of msgs in one step, like MSG_IN one by one", () => {
  const one = start().actor;
  const run = start().actor;
  const msgs = [
    msg("01", "a", { subject: "First" }),
    msg("02", "b", { subject: "ignored" }),
    msg("03", "c"),
  ];
  for (const m of msgs) one.send({ type: "MSG_IN", message: m });
  run.send({ type: "MSGS_IN", messages: msgs });
  // A redelivered msg, alone and within a run, is dropped.
  run.send({ type: "MSGS_IN", messages: [msgs[2], msg("04", "d")] });
  one.send({ type: "MSG_IN", message: msgs[2] });
  one.send({ type: "MSG_IN", message: msg("04", "d") });
  const a = one.getSnapshot().context;
  const b = run.getSnapshot().context;
  assert.equal(b.record.unread, 4);
  assert.equal(b.record.subject, "First");
  assert.deepEqual(
    { unread: b.record.unread, subject: b.record.subject, msgs: b.msgs },
    { unread: a.record.unread, subject: a.record.subject, msgs: a.msgs },
  );
  assert.deepEqual(b.recent, a.recent);
  one.stop();
  run.stop();
});
