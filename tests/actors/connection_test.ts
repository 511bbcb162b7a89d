/**
 * Connection over real sockets (TCP on 127.0.0.1 and unix sockets in a temp
 * dir): two Connections talking, and one Connection driven by hand over a
 * raw socket to check every error code and close rule.
 */

import assert from "node:assert/strict";
import {
  Connection,
  type ConnectionOptions,
  type ReceivedLine,
} from "../../actors/connection.ts";
import { listen, type Listener, type Transport } from "../../net/transport.ts";
import { MemoryStore } from "../../storage/memory_store.ts";
import { KvStore } from "../../storage/kv_store.ts";
import type { Store } from "../../storage/store.ts";
import { randomNonce, Signer } from "../../wire/keys.ts";
import { authTranscript } from "../../wire/transcript.ts";
import { encodeBase64Url } from "../../wire/base64.ts";
import { LineReader } from "../../wire/line_reader.ts";
import { IdGenerator } from "../../wire/id.ts";
import { timestamp } from "../../wire/time.ts";
import { transportPair } from "../helpers/transport_pair.ts";

const enc = new TextEncoder();
const dec = new TextDecoder();
type Obj = Record<string, unknown> & { t: string };

// ---------- helpers ----------

interface Side {
  conn: Connection;
  store: Store;
  signer: Signer;
  delivered: ReceivedLine[];
  lines: Array<{ dir: string; raw: string }>;
}

type SideOptions = Partial<Omit<ConnectionOptions, "transport" | "dialed">>;

function makeSide(
  transport: Transport,
  dialed: boolean,
  signer: Signer,
  store: Store,
  options: SideOptions = {},
): Side {
  const side: Side = {
    store,
    signer,
    delivered: [],
    lines: [],
    conn: undefined as unknown as Connection,
  };
  side.conn = new Connection({
    ...options,
    transport,
    dialed,
    signer,
    store,
    onDeliver: (_c, lines) => side.delivered.push(...lines),
    onLine: (_c, dir, raw) => side.lines.push({ dir, raw }),
  });
  return side;
}

/** Listens on `address`, dials it, and wraps both ends in Connections. */
async function connectPair(
  address: string,
  opts: {
    a?: SideOptions;
    b?: SideOptions;
    storeA?: Store;
    signerA?: Signer;
    signerB?: Signer;
  } = {},
) {
  const { listener, client: ta, server: tb } = await transportPair(address);
  const a = makeSide(
    ta,
    true,
    opts.signerA ?? await Signer.generate(),
    opts.storeA ?? new MemoryStore(),
    opts.a,
  );
  const b = makeSide(
    tb,
    false,
    opts.signerB ?? await Signer.generate(),
    new MemoryStore(),
    opts.b,
  );
  a.conn.start();
  b.conn.start();
  const cleanup = async () => {
    a.conn.close("test over");
    b.conn.close("test over");
    await Promise.all([a.conn.closed, b.conn.closed]);
    listener.close();
    await listener.done;
  };
  return { a, b, cleanup };
}

async function waitFor(check: () => boolean, what: string, ms = 3000) {
  const until = Date.now() + ms;
  while (!check()) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** One side driven by hand over a raw socket. */
class RawPeer {
  #conn: Deno.Conn;
  #reader = new LineReader({ maxLineBytes: 4 * 1024 * 1024 });
  #queue: Uint8Array[] = [];
  #eof = false;
  #buf = new Uint8Array(65536);
  ids = new IdGenerator();
  helloBytes: Uint8Array | undefined;
  theirHello: Uint8Array | undefined;

  constructor(conn: Deno.Conn) {
    this.#conn = conn;
  }

  async sendRaw(text: string): Promise<void> {
    const bytes = enc.encode(text);
    let done = 0;
    while (done < bytes.length) {
      done += await this.#conn.write(bytes.subarray(done));
    }
  }

  send(fields: Record<string, unknown>): Promise<void> {
    return this.sendRaw(JSON.stringify(this.msg(fields)) + "\n");
  }

  msg(fields: Record<string, unknown>): Obj {
    const { t, ...rest } = fields;
    return { t: t as string, id: this.ids.next(), ts: timestamp(), ...rest };
  }

  /** The next line's bytes, or undefined at EOF. */
  async nextBytes(ms = 3000): Promise<Uint8Array | undefined> {
    const until = Date.now() + ms;
    while (this.#queue.length === 0) {
      if (this.#eof) return undefined;
      if (Date.now() > until) throw new Error("raw peer: no line in time");
      let n: number | null;
      try {
        n = await this.#conn.read(this.#buf);
      } catch {
        n = null;
      }
      if (n === null) {
        this.#eof = true;
        break;
      }
      for (const ev of this.#reader.push(this.#buf.subarray(0, n))) {
        if (ev.kind === "line") this.#queue.push(ev.bytes);
      }
    }
    return this.#queue.shift();
  }

  async next(): Promise<Obj | undefined> {
    const bytes = await this.nextBytes();
    return bytes && JSON.parse(dec.decode(bytes));
  }

  /** Next line whose type is `t`, skipping others (pings, acks...). */
  async nextOf(t: string): Promise<Obj> {
    for (;;) {
      const line = await this.next();
      if (!line) throw new Error(`raw peer: EOF while waiting for ${t}`);
      if (line.t === t) return line;
    }
  }

  /** Reads until EOF, returning the lines seen on the way. */
  async untilEof(): Promise<Obj[]> {
    const seen: Obj[] = [];
    for (;;) {
      const line = await this.next();
      if (!line) return seen;
      seen.push(line);
    }
  }

  async hello(signer: Signer, extra: Record<string, unknown> = {}) {
    const hello = this.msg({
      t: "hello",
      v: 0,
      key: signer.key,
      nonce: randomNonce(),
      caps: ["chat"],
      name: "raw",
      ...extra,
    });
    this.helloBytes = enc.encode(JSON.stringify(hello));
    await this.sendRaw(dec.decode(this.helloBytes) + "\n");
    this.theirHello = await this.nextBytes();
    return JSON.parse(dec.decode(this.theirHello!)) as Obj;
  }

  async auth(signer: Signer, corrupt = false) {
    const sig = await signer.sign(
      authTranscript(this.helloBytes!, this.theirHello!),
    );
    if (corrupt) sig[0] ^= 0xff;
    await this.send({ t: "auth", sig: encodeBase64Url(sig) });
  }

  /** Full handshake up to and including both resumes. */
  async handshake(signer: Signer, seen: Record<string, string> = {}) {
    await this.hello(signer);
    await this.auth(signer);
    const auth = await this.nextOf("auth");
    await this.send({ t: "resume", seen });
    const resume = await this.nextOf("resume");
    return { auth, resume };
  }

  close() {
    try {
      this.#conn.close();
    } catch { /* already closed */ }
  }
}

/** A listening Connection with a raw peer dialed into it. */
async function rawPair(options: SideOptions = {}, address = "tcp:127.0.0.1:0") {
  const conns: Side[] = [];
  const store = options.store ?? new MemoryStore();
  const signer = options.signer ?? await Signer.generate();
  const listener: Listener = await listen(address, (t) => {
    const side = makeSide(t, false, signer, store, options);
    conns.push(side);
    side.conn.start();
  });
  const target = listener.addr.startsWith("unix:")
    ? { transport: "unix" as const, path: listener.addr.slice(5) }
    : { hostname: "127.0.0.1", port: Number(listener.addr.split(":").at(-1)) };
  const raw = new RawPeer(await Deno.connect(target as Deno.ConnectOptions));
  await waitFor(() => conns.length === 1, "accept");
  const side = conns[0];
  const cleanup = async () => {
    raw.close();
    side.conn.close("test over");
    await side.conn.closed;
    listener.close();
    await listener.done;
  };
  return { raw, side, cleanup, peerSigner: await Signer.generate() };
}

// ---------- two Connections ----------

for (const kind of ["tcp", "unix"]) {
  Deno.test(`${kind}: handshake, msg and state are acked and delivered`, async () => {
    const dir = await Deno.makeTempDir();
    const address = kind === "tcp" ? "tcp:127.0.0.1:0" : `unix:${dir}/awp.sock`;
    const { a, b, cleanup } = await connectPair(address, {
      a: { name: "alice", caps: ["chat", "blob"] },
      b: { name: "bob" },
    });
    try {
      const [ra, rb] = await Promise.all([
        a.conn.established,
        b.conn.established,
      ]);
      assert.equal(ra.key, b.signer.key);
      assert.equal(rb.key, a.signer.key);
      assert.equal(rb.name, "alice");
      assert.deepEqual(rb.caps, ["chat", "blob"]);
      assert.equal(a.conn.state, "open");
      assert.equal(a.conn.remote?.name, "bob");

      const entries = await a.store.enqueue(b.signer.key, [
        {
          fields: {
            t: "msg",
            th: "t1",
            subject: "hi",
            parts: [{ k: "text", text: "one" }],
          },
        },
        { fields: { t: "state", th: "t1", state: "working" } },
      ]);
      a.conn.sendEntries(entries);
      await waitFor(() => b.delivered.length === 2, "delivery");
      assert.deepEqual(
        b.delivered.map((l) => l.message.id),
        entries.map((e) => e.id),
      );
      assert.equal(b.delivered[0].message.t, "msg");
      // Acks came back: the outbox is empty.
      await waitFor(
        () =>
          a.lines.filter((l) => l.dir === "in" && l.raw.includes('"ack"'))
            .length === 2,
        "acks",
      );
      assert.deepEqual(await a.store.outbox(b.signer.key), []);
      // B committed them: seen covers the thread.
      assert.deepEqual(await b.store.seen(a.signer.key), { t1: entries[1].id });
    } finally {
      await cleanup();
      await Deno.remove(dir, { recursive: true });
    }
  });
}

Deno.test("resume replays unacked outbox entries with original ids, in order (KvStore)", async () => {
  const dir = await Deno.makeTempDir();
  const storeA = await KvStore.open(`${dir}/a.kv`);
  const signerB = await Signer.generate();
  try {
    const queued = await storeA.enqueue(signerB.key, [
      { fields: { t: "msg", th: "t1", parts: [{ k: "text", text: "1" }] } },
      { fields: { t: "msg", th: "t2", parts: [{ k: "text", text: "2" }] } },
      { fields: { t: "state", th: "t1", state: "done" } },
    ]);
    const { a, b, cleanup } = await connectPair("tcp:127.0.0.1:0", {
      storeA,
      signerB,
    });
    try {
      await waitFor(() => b.delivered.length === 3, "replay");
      assert.deepEqual(
        b.delivered.map((l) => l.message.id),
        queued.map((e) => e.id),
      );
      assert.deepEqual(
        b.delivered.map((l) => l.message.ts),
        queued.map((e) => e.ts),
      );
      await waitFor(
        () =>
          a.lines.filter((l) => l.raw.startsWith('{"t":"ack"')).length === 3,
        "acks",
      );
      await new Promise((r) => setTimeout(r, 50));
      assert.deepEqual(await storeA.outbox(signerB.key), []);
    } finally {
      await cleanup();
    }
  } finally {
    storeA.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("resume replays 3,000 queued entries in pages, then lines sent live during the replay, each once and in order (KvStore)", async () => {
  const dir = await Deno.makeTempDir();
  const storeA = await KvStore.open(`${dir}/a.kv`);
  const signerB = await Signer.generate();
  const text = (i: number) => [{ k: "text", text: `${i}` }];
  try {
    const queued = [];
    for (let i = 0; i < 3_000; i += 500) {
      queued.push(
        ...await storeA.enqueue(
          signerB.key,
          Array.from({ length: 500 }, (_, k) => ({
            fields: { t: "msg", th: `t${(i + k) % 3}`, parts: text(i + k) },
          })),
        ),
      );
    }
    const { a, b, cleanup } = await connectPair("tcp:127.0.0.1:0", {
      storeA,
      signerB,
    });
    try {
      await a.conn.established;
      // Sent while the replay's pages are still being listed and written.
      const live = [];
      for (let i = 0; i < 5; i++) {
        const entries = await storeA.enqueue(signerB.key, [
          { fields: { t: "msg", th: `t${i % 3}`, parts: text(-i) } },
        ]);
        a.conn.sendEntries(entries);
        live.push(...entries);
      }
      const all = [...queued, ...live].map((e) => e.id);
      await waitFor(() => b.delivered.length >= all.length, "replay", 30_000);
      await new Promise((r) => setTimeout(r, 100));
      assert.deepEqual(b.delivered.map((l) => l.message.id), all);
      await waitFor(
        () =>
          a.lines.filter((l) => l.raw.startsWith('{"t":"ack"')).length >=
            all.length,
        "acks",
        30_000,
      );
      await new Promise((r) => setTimeout(r, 100));
      assert.equal(await storeA.outboxCount(signerB.key), 0);
    } finally {
      await cleanup();
    }
  } finally {
    storeA.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("chunk entries are read from the spool, delivered and not acked", async () => {
  const dir = await Deno.makeTempDir();
  const signerB = await Signer.generate();
  const storeA = new MemoryStore();
  await Deno.writeTextFile(`${dir}/blob`, "xxhello");
  const queued = await storeA.enqueue(signerB.key, [{
    fields: { t: "chunk", th: "t1", ref: "b1", n: 0, last: true },
    chunk: { path: `${dir}/blob`, offset: 2, length: 5 },
  }]);
  const { a, b, cleanup } = await connectPair("tcp:127.0.0.1:0", {
    storeA,
    signerB,
  });
  try {
    await waitFor(() => b.delivered.length === 1, "chunk");
    const chunk = b.delivered[0].message as unknown as Record<string, unknown>;
    assert.equal(chunk.id, queued[0].id);
    // The data arrives decoded once, in `bytes`; its text is dropped.
    assert.equal(
      new TextDecoder().decode(b.delivered[0].bytes),
      "hello",
    );
    assert.equal(chunk.data, "");
    assert.deepEqual(await b.store.seen(a.signer.key), { t1: queued[0].id });
    assert.ok(
      !b.lines.some((l) => l.dir === "out" && l.raw.startsWith('{"t":"ack"')),
    );
  } finally {
    await cleanup();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("while a chunk batch waits in beforeCommit, a msg of another thread is acked; one of the chunk's thread waits", async () => {
  const dir = await Deno.makeTempDir();
  const signerB = await Signer.generate();
  const storeA = new MemoryStore();
  await Deno.writeFile(`${dir}/blob`, new Uint8Array(8192).fill(7));
  const [chunk] = await storeA.enqueue(signerB.key, [{
    fields: { t: "chunk", th: "blob", ref: "b1", n: 0, last: true },
    chunk: { path: `${dir}/blob`, offset: 0, length: 8192 },
  }]);
  let open!: () => void;
  const gate = new Promise<void>((r) => open = r);
  let syncing = false;
  const acked: string[] = [];
  const { a, b, cleanup } = await connectPair("tcp:127.0.0.1:0", {
    storeA,
    signerB,
    a: { onAck: (_peer, ack) => acked.push(ack.re) },
    b: {
      // As a blob's sync would: the batch with the chunk waits.
      beforeCommit: async (_peer, _c, lines) => {
        if (!lines.some((l) => l.message.t === "chunk")) return;
        syncing = true;
        await gate;
      },
    },
  });
  try {
    await waitFor(() => syncing, "the chunk batch in beforeCommit");
    const text = (t: string) => [{ k: "text", text: t }];
    const [same] = await storeA.enqueue(signerB.key, [{
      fields: { t: "msg", th: "blob", parts: text("with the blob") },
    }]);
    a.conn.sendEntries([same]);
    const [other] = await storeA.enqueue(signerB.key, [{
      fields: { t: "msg", th: "other", parts: text("beside it") },
    }]);
    a.conn.sendEntries([other]);
    await waitFor(() => acked.includes(other.id), "the other thread's ack");
    assert.ok(!acked.includes(same.id), "the blob's thread waits its turn");
    assert.deepEqual(b.delivered.map((l) => l.message.id), [other.id]);
    open();
    await waitFor(() => acked.includes(same.id), "the blob thread's ack");
    assert.deepEqual(
      b.delivered.map((l) => l.message.id),
      [other.id, chunk.id, same.id],
    );
  } finally {
    open();
    await cleanup();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("bye handshake: both sides close with reasons", async () => {
  const { a, b, cleanup } = await connectPair("tcp:127.0.0.1:0");
  try {
    await Promise.all([a.conn.established, b.conn.established]);
    await a.conn.bye("done");
    assert.equal(await a.conn.closed, "bye");
    // The bye carries our reason (SPEC 9.6).
    assert.equal(await b.conn.closed, "peer said bye: done");
    assert.equal(a.conn.state, "closed");
    const out = a.lines.filter((l) => l.dir === "out");
    assert.match(out.at(-1)!.raw, /^\{"t":"bye"/);
  } finally {
    await cleanup();
  }
});

Deno.test("a refusal after a valid auth rejects the dialer's established (NOTES 8)", async () => {
  const { a, b, cleanup } = await connectPair("tcp:127.0.0.1:0", {
    b: { admit: () => "not on the allow list" },
  });
  try {
    await assert.rejects(
      a.conn.established,
      /peer sent err auth: not on the allow list/,
    );
    await assert.rejects(b.conn.established, /auth: not on the allow list/);
  } finally {
    await cleanup();
  }
});

// ---------- raw peer ----------

Deno.test("dedup: the same msg twice is acked twice and delivered once", async () => {
  const { raw, side, cleanup, peerSigner } = await rawPair();
  try {
    await raw.handshake(peerSigner);
    const msg = raw.msg({
      t: "msg",
      th: "t1",
      parts: [{ k: "text", text: "x" }],
    });
    const line = JSON.stringify(msg) + "\n";
    await raw.sendRaw(line);
    const ack1 = await raw.nextOf("ack");
    await raw.sendRaw(line);
    const ack2 = await raw.nextOf("ack");
    assert.equal(ack1.re, msg.id);
    assert.equal(ack2.re, msg.id);
    assert.equal(ack1.th, "t1");
    assert.equal(side.delivered.length, 1);
  } finally {
    await cleanup();
  }
});

Deno.test("a line needsBeforeCommit marks passes beforeCommit (with its thread) before it is acked; others commit at once", async () => {
  const passed: string[] = [];
  let journaled = false;
  const { raw, cleanup, peerSigner } = await rawPair({
    needsBeforeCommit: (_peer, m) =>
      m.t === "msg" && JSON.stringify(m.parts).includes("journal me"),
    beforeCommit: async (_peer, _conn, lines) => {
      passed.push(...lines.map((l) => l.message.id));
      await new Promise((r) => setTimeout(r, 50));
      journaled = true;
    },
  });
  try {
    await raw.handshake(peerSigner);
    const request = raw.msg({
      t: "msg",
      th: "req",
      parts: [{ k: "text", text: "journal me" }],
    });
    const after = raw.msg({
      t: "msg",
      th: "req",
      parts: [{ k: "text", text: "same thread" }],
    });
    const plain = raw.msg({
      t: "msg",
      th: "other",
      parts: [{ k: "text", text: "plain" }],
    });
    await raw.sendRaw(
      [request, after, plain].map((m) => JSON.stringify(m) + "\n").join(""),
    );
    const acks = new Map<string, boolean>();
    for (let i = 0; i < 3; i++) {
      const ack = await raw.nextOf("ack");
      acks.set(ack.re as string, journaled);
    }
    assert.deepEqual(passed, [request.id, after.id] as string[]);
    assert.equal(
      acks.get(request.id as string),
      true,
      "acked after beforeCommit",
    );
    assert.equal(acks.get(after.id as string), true, "its thread waits too");
    assert.equal(
      acks.get(plain.id as string),
      false,
      "another thread commits at once",
    );
  } finally {
    await cleanup();
  }
});

Deno.test("lines arriving together are committed, acked and delivered together", async () => {
  const { raw, side, cleanup, peerSigner } = await rawPair();
  try {
    await raw.handshake(peerSigner);
    const msgs = [1, 2, 3].map((n) =>
      raw.msg({ t: "msg", th: "t", parts: [{ k: "text", text: `${n}` }] })
    );
    await raw.sendRaw(msgs.map((m) => JSON.stringify(m) + "\n").join(""));
    const acks = [
      await raw.nextOf("ack"),
      await raw.nextOf("ack"),
      await raw.nextOf("ack"),
    ];
    assert.deepEqual(acks.map((a) => a.re), msgs.map((m) => m.id));
    assert.deepEqual(
      side.delivered.map((l) => l.message.id),
      msgs.map((m) => m.id),
    );
    assert.deepEqual(await side.store.seen(peerSigner.key), { t: msgs[2].id });
  } finally {
    await cleanup();
  }
});

Deno.test("bad_frame: a non-JSON line gets err bad_frame and the connection closes", async () => {
  const { raw, side, cleanup, peerSigner } = await rawPair();
  try {
    await raw.handshake(peerSigner);
    await raw.sendRaw("this is not json\n");
    const rest = await raw.untilEof();
    assert.equal(rest.at(-1)?.t, "err");
    assert.equal(rest.at(-1)?.code, "bad_frame");
    assert.match(await side.conn.closed, /^bad_frame/);
  } finally {
    await cleanup();
  }
});

Deno.test("version: hello with v=1 gets err version and the connection closes", async () => {
  const { raw, side, cleanup, peerSigner } = await rawPair();
  try {
    await raw.hello(peerSigner, { v: 1 });
    const rest = await raw.untilEof();
    assert.deepEqual(rest.map((l) => [l.t, l.code]), [["err", "version"]]);
    await assert.rejects(side.conn.established, /version/);
  } finally {
    await cleanup();
  }
});

Deno.test("auth: a bad signature gets err auth and the connection closes", async () => {
  const { raw, side, cleanup, peerSigner } = await rawPair();
  try {
    await raw.hello(peerSigner);
    await raw.auth(peerSigner, true);
    const rest = await raw.untilEof();
    // Our auth may or may not have gone out before the bad one was verified
    // (signing is async); either way the last line is the closing err.
    const types = rest.map((l) => l.t);
    assert.ok(
      types.join() === "auth,err" || types.join() === "err",
      `unexpected lines: ${types.join()}`,
    );
    assert.equal(rest.at(-1)?.code, "auth");
    assert.equal(side.conn.remote, undefined);
    await assert.rejects(
      side.conn.established,
      /auth signature does not verify/,
    );
  } finally {
    await cleanup();
  }
});

Deno.test("too_large: a line of 1 MiB + 1 byte gets err too_large and the connection closes", async () => {
  const { raw, side, cleanup, peerSigner } = await rawPair();
  try {
    await raw.handshake(peerSigner);
    const head = '{"t":"msg","x":"';
    const tail = '"}';
    const body = "a".repeat(1048576 + 1 - head.length - tail.length);
    await raw.sendRaw(head + body + tail + "\n");
    const rest = await raw.untilEof();
    assert.equal(rest.at(-1)?.code, "too_large");
    assert.match(await side.conn.closed, /^too_large/);
  } finally {
    await cleanup();
  }
});

Deno.test("unsupported, forbidden, blob_refused and internal received: the connection stays open", async () => {
  const { raw, side, cleanup, peerSigner } = await rawPair();
  try {
    await raw.handshake(peerSigner);
    for (
      const code of ["unsupported", "forbidden", "blob_refused", "internal"]
    ) {
      await raw.send({
        t: "err",
        code,
        detail: "x",
        ...(code === "blob_refused" ? { ref: "b" } : {}),
      });
    }
    // Unknown types and fields are ignored too.
    await raw.send({ t: "later-extension", foo: 1 });
    const ping = raw.msg({ t: "ping", extra: true });
    await raw.sendRaw(JSON.stringify(ping) + "\n");
    const pong = await raw.nextOf("pong");
    assert.equal(pong.re, ping.id);
    assert.equal(side.conn.state, "open");
  } finally {
    await cleanup();
  }
});

Deno.test("a closing err received closes the connection", async () => {
  const { raw, side, cleanup, peerSigner } = await rawPair();
  try {
    await raw.handshake(peerSigner);
    await raw.send({
      t: "err",
      code: "too_large",
      detail: "yours was too big",
    });
    assert.equal(
      await side.conn.closed,
      "peer sent err too_large: yours was too big",
    );
  } finally {
    await cleanup();
  }
});

Deno.test("reflection: a hello carrying our own key gets err auth and close", async () => {
  const signer = await Signer.generate();
  const { raw, side, cleanup } = await rawPair({ signer });
  try {
    await raw.hello(signer);
    const rest = await raw.untilEof();
    assert.deepEqual(rest.map((l) => [l.t, l.code]), [["err", "auth"]]);
    assert.match(await side.conn.closed, /own key/);
  } finally {
    await cleanup();
  }
});

Deno.test("content before auth gets err auth and is never delivered", async () => {
  const { raw, side, cleanup, peerSigner } = await rawPair();
  try {
    await raw.hello(peerSigner);
    await raw.send({
      t: "msg",
      th: "t",
      parts: [{ k: "text", text: "sneaky" }],
    });
    const rest = await raw.untilEof();
    assert.equal(rest.at(-1)?.code, "auth");
    assert.equal(side.delivered.length, 0);
    assert.deepEqual(await side.store.seen(peerSigner.key), {});
  } finally {
    await cleanup();
  }
});

Deno.test("a known type that fails its schema gets err bad_frame and close", async () => {
  const { raw, side, cleanup, peerSigner } = await rawPair();
  try {
    await raw.handshake(peerSigner);
    await raw.send({ t: "msg", parts: [] }); // no th
    const rest = await raw.untilEof();
    assert.equal(rest.at(-1)?.code, "bad_frame");
    assert.equal(side.delivered.length, 0);
  } finally {
    await cleanup();
  }
});

Deno.test("ping/pong keeps the connection; two missed pongs mean dead", async () => {
  const { raw, side, cleanup, peerSigner } = await rawPair({
    timeouts: { pingInterval: 100 },
  });
  try {
    await raw.handshake(peerSigner);
    // Answer three pings: still open.
    for (let i = 0; i < 3; i++) {
      const ping = await raw.nextOf("ping");
      await raw.send({ t: "pong", re: ping.id });
    }
    assert.equal(side.conn.state, "open");
    // Stop answering: two pings go unanswered, then the connection is dead.
    const rest = await raw.untilEof();
    // Two unanswered pings (one more if a pong crossed a ping on a slow box).
    assert.ok(
      rest.length >= 2 && rest.every((l) => l.t === "ping"),
      JSON.stringify(rest),
    );
    assert.match(await side.conn.closed, /dead/);
  } finally {
    await cleanup();
  }
});

Deno.test("a received bye is answered with bye, then close", async () => {
  const { raw, side, cleanup, peerSigner } = await rawPair();
  try {
    await raw.handshake(peerSigner);
    await raw.send({ t: "bye", reason: "done" });
    const rest = await raw.untilEof();
    assert.deepEqual(rest.map((l) => l.t), ["bye"]);
    assert.equal(await side.conn.closed, "peer said bye: done");
  } finally {
    await cleanup();
  }
});

Deno.test("bye timeout: our bye unanswered closes after byeTimeout, sending nothing else", async () => {
  const { raw, side, cleanup, peerSigner } = await rawPair({
    timeouts: { bye: 200 },
  });
  try {
    await raw.handshake(peerSigner);
    const closing = side.conn.bye("leaving");
    await raw.nextOf("bye");
    // A ping after our bye is not answered: nothing is sent after bye.
    await raw.send({ t: "ping" });
    const rest = await raw.untilEof();
    assert.deepEqual(rest, []);
    await closing;
    assert.equal(await side.conn.closed, "bye: no answer in time");
  } finally {
    await cleanup();
  }
});

Deno.test("handshake timeout closes a silent peer", async () => {
  const { raw, side, cleanup } = await rawPair({
    timeouts: { handshake: 150 },
  });
  try {
    const hello = await raw.next();
    assert.equal(hello?.t, "hello");
    assert.equal(await side.conn.closed, "handshake timeout");
    await assert.rejects(side.conn.established, /handshake timeout/);
  } finally {
    await cleanup();
  }
});
