import assert from "node:assert/strict";
import type { Key, KeyRange, Mutation } from "../../storage/kv/key.ts";
import type { KvBackend } from "../../storage/kv/kv_backend.ts";
import { KvStore } from "../../storage/kv_store.ts";
import { openStore, StoreUnavailableError } from "../../storage/open_store.ts";
import type { GrantRecord, Store } from "../../storage/store.ts";
import { storeContract, type StoreHarness } from "./store_contract.ts";

storeContract("KvStore", async (options) => {
  const dir = await Deno.makeTempDir({ prefix: "awp-kv-" });
  const path = `${dir}/awp.kv`;
  const harness: StoreHarness = {
    store: await KvStore.open(path, options),
    reopen: async () => {
      harness.store.close();
      harness.store = await KvStore.open(path, options);
      return harness.store;
    },
    cleanup: async () => {
      harness.store.close();
      await Deno.remove(dir, { recursive: true });
    },
  };
  return harness;
}, { durable: true });

Deno.test("KvStore: in-memory KV when no path is given", async () => {
  const store = await KvStore.open();
  try {
    const [e] = await store.enqueue("ed25519:x", [{
      fields: { t: "msg", th: "t", parts: [] },
    }]);
    assert.deepEqual(await store.outbox("ed25519:x"), [e]);
  } finally {
    store.close();
  }
});

Deno.test("KvStore: a split record whose head never got written is cleaned on open", async () => {
  const dir = await Deno.makeTempDir({ prefix: "awp-kv-" });
  const path = `${dir}/awp.kv`;
  try {
    // What a kill -9 between the staging commit and the head commit leaves.
    const kv = await Deno.openKv(path);
    await kv.atomic()
      .set(["pend", "ob", "peer", "01STAGED"], 2)
      .set(["ob", "peer", "01STAGED", 0], new Uint8Array(10))
      .set(["ob", "peer", "01STAGED", 1], new Uint8Array(10))
      .commit();
    kv.close();
    const store = await KvStore.open(path);
    assert.deepEqual(await store.outbox("peer"), []);
    store.close();
    const check = await Deno.openKv(path);
    const left = await Array.fromAsync(check.list({ prefix: [] }));
    check.close();
    assert.deepEqual(
      left.map((e) => e.key).filter((k) => k[0] === "ob" || k[0] === "pend"),
      [],
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("KvStore: a batch bigger than one KV commit is split, in order", async () => {
  const store = await KvStore.open();
  try {
    const text = "x".repeat(50_000);
    // 40 entries of ~50 KB: ~2 MB, several commits.
    const drafts = Array.from(
      { length: 40 },
      (_, i) => ({
        fields: { t: "msg", th: "t", parts: [{ k: "text", text }], i },
      }),
    );
    const entries = await store.enqueue("ed25519:x", drafts);
    const out = await store.outbox("ed25519:x");
    assert.deepEqual(out.map((e) => e.fields.i), drafts.map((_, i) => i));
    assert.deepEqual(out.map((e) => e.id), entries.map((e) => e.id));
  } finally {
    store.close();
  }
});

Deno.test("openStore: home is created 0700 and holds awp.kv", async () => {
  const parent = await Deno.makeTempDir({ prefix: "awp-home-" });
  const home = `${parent}/nested/.awp`;
  try {
    const store: Store = await openStore({ home });
    const [e] = await store.enqueue("ed25519:x", [{
      fields: { t: "msg", th: "t", parts: [] },
    }]);
    store.close();
    assert.equal((await Deno.stat(home)).mode! & 0o777, 0o700);
    assert.ok((await Deno.stat(`${home}/awp.kv`)).isFile);
    const again = await openStore({ home });
    assert.deepEqual((await again.outbox("ed25519:x")).map((x) => x.id), [
      e.id,
    ]);
    again.close();
  } finally {
    await Deno.remove(parent, { recursive: true });
  }
});

Deno.test("openStore: memory, and bad options", async () => {
  const store = await openStore({ memory: true });
  assert.equal(typeof store.nextId(), "string");
  store.close();
  await assert.rejects(openStore({}), /give home, url or memory/);
  await assert.rejects(openStore({ url: "file:///x" }), /http or https/);
});

Deno.test("openStore: without --unstable-kv it says so in one line", async () => {
  const script = new URL("../../storage/open_store.ts", import.meta.url).href;
  // Made (and removed) here: the child exits without cleaning up.
  const home = await Deno.makeTempDir({ prefix: "awp-nokv-" });
  const code = `
    const { openStore, StoreUnavailableError } = await import(${
    JSON.stringify(script)
  });
    try { await openStore({ home: ${
    JSON.stringify(home)
  } }); console.log("opened"); }
    catch (e) { console.log(e instanceof StoreUnavailableError ? "unavailable" : "other"); console.log(e.message); }
  `;
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["eval", "--no-config", code],
    stdout: "piped",
    stderr: "piped",
  }).output().finally(() => Deno.remove(home, { recursive: true }));
  const lines = new TextDecoder().decode(out.stdout).trim().split("\n");
  assert.equal(lines[0], "unavailable", new TextDecoder().decode(out.stderr));
  assert.equal(lines.length, 2);
  assert.match(lines[1], /--unstable-kv/);
  assert.match(lines[1], /memory: true/);
  assert.ok(new StoreUnavailableError().message === lines[1]);
});

/** A real Deno KV backend whose commits the test can hold and count. */
class GatedBackend implements KvBackend {
  commits: number[] = [];
  reads = 0;
  /** Reads started and not yet answered. */
  readsInFlight = 0;
  #kv: Deno.Kv;
  #gate: Promise<void> = Promise.resolve();
  #entered: (() => void) | undefined;

  constructor(kv: Deno.Kv) {
    this.#kv = kv;
  }

  /** Holds the next commits until the returned release is called. */
  hold(): { entered: Promise<void>; release: () => void } {
    let release!: () => void;
    this.#gate = new Promise((r) => release = r);
    const entered = new Promise<void>((r) => this.#entered = r);
    return { entered, release };
  }

  async get(key: Key): Promise<unknown> {
    this.reads++;
    this.readsInFlight++;
    try {
      const e = await this.#kv.get(key as Deno.KvKey);
      return e.versionstamp === null ? undefined : e.value;
    } finally {
      this.readsInFlight--;
    }
  }

  async *list(range: KeyRange): AsyncIterable<{ key: Key; value: unknown }> {
    this.reads++;
    this.readsInFlight++;
    try {
      for await (const e of this.#kv.list(range as Deno.KvListSelector)) {
        yield { key: e.key as Key, value: e.value };
      }
    } finally {
      this.readsInFlight--;
    }
  }

  async commit(mutations: Mutation[]): Promise<void> {
    this.#entered?.();
    await this.#gate;
    const op = this.#kv.atomic();
    for (const m of mutations) {
      m.value === undefined
        ? op.delete(m.key as Deno.KvKey)
        : op.set(m.key as Deno.KvKey, m.value);
    }
    assert.ok((await op.commit()).ok);
    this.commits.push(mutations.length);
  }

  close(): void {
    this.#kv.close();
  }
}

Deno.test("KvStore: peer, grant and revocation reads come from memory, in step with writes", async () => {
  const backend = new GatedBackend(await Deno.openKv(":memory:"));
  const store = new KvStore(backend);
  const grant = (kind: "held" | "issued", hash: string) => ({
    kind,
    hash,
    grant: { v: 0, iss: "ed25519:a", sub: "ed25519:b", caps: ["exec"] },
    storedAt: 1,
  } as unknown as GrantRecord);
  try {
    await store.putPeer({
      key: "ed25519:p",
      addresses: ["tcp:a:1"],
      firstSeen: 1,
      lastSeen: 1,
    });
    await store.putGrant(grant("held", "h1"));
    assert.equal((await store.peer("ed25519:p"))?.addresses[0], "tcp:a:1");
    assert.deepEqual((await store.grants("held")).map((g) => g.hash), ["h1"]);
    assert.equal(await store.isRevoked("h1"), false);
    const reads = backend.reads;
    // A caller may change what it gets: the next read is unaffected.
    (await store.peer("ed25519:p"))!.addresses.push("tcp:b:2");
    (await store.grants()).pop();
    assert.deepEqual((await store.peer("ed25519:p"))?.addresses, ["tcp:a:1"]);
    assert.equal((await store.grants()).length, 1);
    assert.equal(await store.isRevoked("h1"), false);
    assert.equal(backend.reads, reads, "served from memory");
    // Writes show at once, also reads that overlap them.
    const updated = store.updatePeer("ed25519:p", (k) => ({
      ...k!,
      addresses: ["tcp:c:3"],
    }));
    const during = store.peer("ed25519:p");
    await updated;
    await during;
    assert.deepEqual((await store.peer("ed25519:p"))?.addresses, ["tcp:c:3"]);
    await store.putGrant(grant("issued", "i1"));
    assert.deepEqual((await store.grants()).map((g) => g.hash), ["h1", "i1"]);
    assert.deepEqual((await store.grants("issued")).map((g) => g.hash), ["i1"]);
    await store.revoke("h1");
    assert.equal(await store.isRevoked("h1"), true);
    assert.equal(await store.peer("ed25519:q"), undefined);
    await store.putPeer({
      key: "ed25519:q",
      addresses: [],
      firstSeen: 1,
      lastSeen: 1,
    });
    assert.equal((await store.peer("ed25519:q"))?.key, "ed25519:q");
  } finally {
    store.close();
  }
});

Deno.test("KvStore: calls arriving during a commit share the next one", async () => {
  const backend = new GatedBackend(await Deno.openKv(":memory:"));
  const store = new KvStore(backend);
  try {
    const { entered, release } = backend.hold();
    let firstDone = false;
    const first = store.enqueue("ed25519:x", [{
      fields: { t: "msg", th: "t", parts: [] },
    }]).then((e) => {
      firstDone = true;
      return e;
    });
    await entered; // the first commit is in flight, held
    const line = (i: number) => ({
      id: `I${i}`,
      t: "msg",
      th: "t",
      message: {},
      raw: "{}",
    });
    const rest = Promise.all([
      ...Array.from(
        { length: 50 },
        () =>
          store.enqueue("ed25519:x", [{
            fields: { t: "msg", th: "t", parts: [] },
          }]),
      ),
      ...Array.from(
        { length: 50 },
        (_, i) => store.receive("ed25519:x", [line(i)]),
      ),
      store.log([{
        peer: "ed25519:x",
        dir: "out",
        t: "ping",
        line: "{}",
        at: 1,
      }]),
    ]);
    // Until every call's read-ahead is answered and built: a read can take
    // longer than any fixed pause on a busy machine, and a call whose read
    // comes after the release rightly goes into a later commit.
    for (let quietTurns = 0; quietTurns < 3;) {
      await new Promise((r) => setTimeout(r, 10));
      quietTurns = backend.readsInFlight === 0 ? quietTurns + 1 : 0;
    }
    assert.equal(firstDone, false, "resolved before its commit was durable");
    release();
    await first;
    await rest;
    assert.equal(backend.commits.length, 2);
    assert.ok(
      backend.commits[1] > 100,
      `second commit had ${backend.commits[1]} mutations`,
    );
    assert.equal((await store.outbox("ed25519:x")).length, 51);
  } finally {
    store.close();
  }
});

/** Every key under `prefix` in the KV file at `path` (the store closed). */
async function rawKeys(path: string, prefix: string): Promise<Key[]> {
  const kv = await Deno.openKv(path);
  try {
    const out: Key[] = [];
    for await (const e of kv.list({ prefix: [prefix] })) {
      out.push(e.key as Key);
    }
    return out;
  } finally {
    kv.close();
  }
}

Deno.test("KvStore: log trims delete split records' parts and index keys", async () => {
  const dir = await Deno.makeTempDir({ prefix: "awp-kv-" });
  const path = `${dir}/awp.kv`;
  try {
    const store = await KvStore.open(path, { maxLogEntries: 10 });
    const big = "x".repeat(150_000); // 3 parts
    for (let i = 0; i < 30; i++) {
      await store.log([{
        peer: "ed25519:x",
        dir: "out",
        t: "msg",
        th: `t${i % 2}`,
        line: i % 5 === 0 ? big : `{"i":${i}}`,
        at: i,
      }]);
    }
    await store.setMeta("settle", 1);
    const kept = (await store.readLog()).map((e) => e.seq);
    store.close();
    assert.deepEqual(kept, Array.from({ length: 10 }, (_, i) => 21 + i));
    const log = await rawKeys(path, "log");
    assert.ok(log.every((k) => (k[1] as number) > 20), JSON.stringify(log));
    // Heads of 21..30 and 3 parts each of 25 and 30.
    assert.equal(log.length, 10 + 6);
    // No index by peer alone: a thread index row per entry, nothing else.
    assert.deepEqual(await rawKeys(path, "logp"), []);
    assert.equal((await rawKeys(path, "logt")).length, 10);
    assert.deepEqual(await rawKeys(path, "pend"), []);
    // Reopened with a smaller bound: trimmed at open.
    const again = await KvStore.open(path, { maxLogEntries: 3 });
    assert.deepEqual((await again.readLog()).map((e) => e.seq), [28, 29, 30]);
    again.close();
    assert.equal((await rawKeys(path, "logt")).length, 3);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("KvStore: open drops the old log-by-peer index; peer queries scan the log", async () => {
  const dir = await Deno.makeTempDir({ prefix: "awp-kv-" });
  const path = `${dir}/awp.kv`;
  try {
    const first = await KvStore.open(path);
    await first.log([
      { peer: "ed25519:a", dir: "out", t: "msg", th: "t", line: "{}", at: 1 },
      { peer: "ed25519:b", dir: "out", t: "ping", line: "{}", at: 2 },
      { peer: "ed25519:a", dir: "in", t: "ping", line: "{}", at: 3 },
    ]);
    first.close();
    // As the layout before wrote them.
    const kv = await Deno.openKv(path);
    for (const seq of [1, 3]) await kv.set(["logp", "ed25519:a", seq], 1);
    await kv.set(["logp", "ed25519:b", 2], 1);
    kv.close();
    const store = await KvStore.open(path);
    assert.deepEqual(
      (await store.readLog({ peer: "ed25519:a" })).map((e) => e.seq),
      [1, 3],
    );
    assert.deepEqual(
      (await store.readLog({ peer: "ed25519:a", after: 1 })).map((e) => e.at),
      [3],
    );
    store.close();
    assert.deepEqual(await rawKeys(path, "logp"), []);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("KvStore: expireOutbox drops ended threads' markers on disk, not their records", async () => {
  const dir = await Deno.makeTempDir({ prefix: "awp-kv-" });
  const path = `${dir}/awp.kv`;
  try {
    const store = await KvStore.open(path);
    await store.receive("ed25519:x", [
      { id: "A1", t: "msg", th: "a", message: { t: "msg" }, raw: "{}" },
      { id: "B1", t: "msg", th: "b", message: { t: "msg" }, raw: "{}" },
    ]);
    const ts = new Date().toISOString();
    await store.patchThread("ed25519:x", "a", { mine: { state: "done", ts } });
    await store.expireOutbox(Date.now() + 1000);
    store.close();
    const kv = await Deno.openKv(path);
    const rows: Array<[unknown, boolean]> = [];
    for await (const { key, value } of kv.list({ prefix: ["thr"] })) {
      const row = JSON.parse(new TextDecoder().decode(value as Uint8Array));
      rows.push([key[2], row.seen !== undefined && row.created !== undefined]);
    }
    kv.close();
    assert.deepEqual(rows, [["a", false], ["b", true]]);
    assert.deepEqual(await rawKeys(path, "seen"), []);
    assert.deepEqual(await rawKeys(path, "rx"), []);
    assert.deepEqual(await rawKeys(path, "rxq"), []);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("KvStore.open: a bad maxLogEntries is refused in one line", async () => {
  await assert.rejects(
    KvStore.open(undefined, { maxLogEntries: 0 }),
    (e: Error) =>
      e instanceof RangeError &&
      e.message ===
        "maxLogEntries must be a positive integer or Infinity, got 0",
  );
});
