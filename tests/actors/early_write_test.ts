import assert from "node:assert/strict";
import {
  type Delivery,
  Supervisor,
  type SupervisorOptions,
} from "../../actors/supervisor.ts";
import { queueLines } from "../../peer/peer_sender.ts";
import { DenoKvBackend, type KvBackend } from "../../storage/kv/kv_backend.ts";
import type { Mutation } from "../../storage/kv/key.ts";
import { KvStore } from "../../storage/kv_store.ts";
import { MemoryStore } from "../../storage/memory_store.ts";
import type { Store } from "../../storage/store.ts";
import { Signer } from "../../wire/keys.ts";

/**
 * Deno KV whose commits wait while `gate` is set (a stalled disk), and
 * whose range reads wait while `listGate` is set (counted in `listsHeld`).
 */
class GatedBackend implements KvBackend {
  #inner: KvBackend;
  gate: Promise<void> | undefined;
  listGate: Promise<void> | undefined;
  listsHeld = 0;
  constructor(inner: KvBackend) {
    this.#inner = inner;
  }
  get(key: Mutation["key"]) {
    return this.#inner.get(key);
  }
  list(range: Parameters<KvBackend["list"]>[0]) {
    const held = this.listGate;
    if (!held) return this.#inner.list(range);
    this.listsHeld++;
    return this.#heldList(held, range);
  }
  async *#heldList(
    held: Promise<void>,
    range: Parameters<KvBackend["list"]>[0],
  ) {
    await held;
    yield* this.#inner.list(range);
  }
  async commit(mutations: Mutation[]) {
    await this.gate;
    await this.#inner.commit(mutations);
  }
  close() {
    this.#inner.close();
  }
}

Deno.test("a msg is written while its commit runs; its ack is taken only once that commit is durable", async () => {
  const backend = new GatedBackend(
    new DenoKvBackend(await Deno.openKv(":memory:")),
  );
  const aStore = new KvStore(backend);
  const bStore = new MemoryStore();
  const acks: string[] = [];
  let open = () => {};
  const got: Delivery[] = [];
  const { a, b, bSigner, stop } = await supervisors(aStore, bStore, got, {
    onAck: (_peer, ack) => acks.push(ack.re),
  });
  try {
    const listener = await b.listen("tcp:127.0.0.1:0");
    await a.connect(listener.addr);
    const draft = (text: string) => ({
      fields: { t: "msg", th: "t", parts: [{ k: "text", text }] },
    });
    // Nothing durable yet: the first msg waits for its commit.
    const [first] = await queueLines(aStore, a, bSigner.key, [draft("one")]);
    await until(() => acks.includes(first.id), "first acked");

    backend.gate = new Promise((resolve) => open = resolve);
    let durable = false;
    const sending = queueLines(aStore, a, bSigner.key, [draft("two")])
      .then(([entry]) => {
        durable = true;
        return entry;
      });
    // The receiver has it (committed, acked) while our commit still runs.
    await until(() => got.length === 2, "second delivered");
    assert.equal(durable, false, "delivered before the sender's commit");
    // Their ack is in, but not taken while our commit is held.
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(acks.length, 1);
    open();
    const second = await sending;
    await until(() => acks.includes(second.id), "second acked");
    // Taken after our own commit, never before (the remote acked earlier).
    assert.equal(durable, true);
    assert.equal(await aStore.inOutbox(bSigner.key, second.id), false);
  } finally {
    open();
    await stop();
  }
});

Deno.test("a msg queued as its connection drops is delivered once durable: the dialer's store read could not see it", async () => {
  const backend = new GatedBackend(
    new DenoKvBackend(await Deno.openKv(":memory:")),
  );
  const aStore = new KvStore(backend);
  const bStore = new MemoryStore();
  let open = () => {};
  const got: Delivery[] = [];
  const { a, b, bSigner, stop } = await supervisors(aStore, bStore, got, {
    dialer: { timing: { baseMs: 20, capMs: 100, graceMs: 20 } },
  });
  try {
    const listener = await b.listen("tcp:127.0.0.1:0");
    await a.connect(listener.addr);
    const dialer = a.reach(bSigner.key, [listener.addr]);
    await until(() => dialer.state === "connected", "dialer connected");

    // The connection drops, and its "still wanted?" read of the store
    // (the peer's threads) stalls; meanwhile a msg is queued, and the
    // commit holding it (its outbox entry and its thread) stalls too.
    let openLists = () => {};
    backend.listGate = new Promise((resolve) => openLists = resolve);
    a.connection(bSigner.key)?.close("dropped for the test");
    await until(() => backend.listsHeld > 0, "the wanted read under way");
    backend.gate = new Promise((resolve) => open = resolve);
    const sending = queueLines(aStore, a, bSigner.key, [{
      fields: { t: "msg", th: "t", parts: [{ k: "text", text: "late" }] },
    }]);
    // The read ends without the msg (not committed): nothing is wanted by
    // its answer, and the dialer settles idle.
    backend.listGate = undefined;
    openLists();
    await until(() => dialer.state === "idle", "dialer idle");

    open();
    const [entry] = await sending;
    // Durable now: the peer is wanted again, redialed, and the msg resumed.
    await until(() => dialer.state === "connected", "dialer connected again");
    await until(() => got.some((d) => d.message.id === entry.id), "delivered");
    await until(
      async () => !(await aStore.inOutbox(bSigner.key, entry.id)),
      "acked",
    );
  } finally {
    open();
    await stop();
  }
});

/**
 * Supervisors "a" (on `aStore`, with `aOptions`, no pings) and "b" (on
 * `bStore`, whose thread deliveries go to `got`); `stop` stops both and
 * closes the stores.
 */
async function supervisors(
  aStore: Store,
  bStore: Store,
  got: Delivery[],
  aOptions: Partial<SupervisorOptions>,
): Promise<
  { a: Supervisor; b: Supervisor; bSigner: Signer; stop(): Promise<void> }
> {
  const a = new Supervisor({
    signer: await Signer.generate(),
    store: aStore,
    timeouts: { pingInterval: 0 },
    ...aOptions,
  });
  const bSigner = await Signer.generate();
  const b = new Supervisor({
    signer: bSigner,
    store: bStore,
    timeouts: { pingInterval: 0 },
    routes: { thread: () => (d) => void got.push(d) },
  });
  const stop = async () => {
    await a.stop();
    await b.stop();
    aStore.close();
    bStore.close();
  };
  return { a, b, bSigner, stop };
}

async function until(
  check: () => boolean | Promise<boolean>,
  what: string,
  ms = 5000,
) {
  const start = Date.now();
  while (!(await check())) {
    if (Date.now() - start > ms) throw new Error(`timed out waiting: ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}
