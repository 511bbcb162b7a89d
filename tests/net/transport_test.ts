import assert from "node:assert/strict";
import {
  bind,
  dial,
  LINGER_MS,
  listen,
  type Listener,
  type Transport,
  TransportError,
} from "../../net/transport.ts";
import { AddressError } from "../../wire/address.ts";
import { transportPair } from "../helpers/transport_pair.ts";

const enc = new TextEncoder();
const dec = new TextDecoder();

/** Collects what a transport reads until its end. */
function collect(t: Transport, slow?: () => Promise<void>) {
  const chunks: Uint8Array[] = [];
  let endCount = 0;
  let endError: Error | undefined;
  let total = 0;
  const ended = new Promise<void>((resolve) => {
    t.start({
      async onData(chunk) {
        // A copy: the transport reads into the same buffer again.
        chunks.push(chunk.slice());
        total += chunk.length;
        if (slow) await slow();
      },
      onEnd(error) {
        endCount++;
        endError = error;
        resolve();
      },
    });
  });
  return {
    ended,
    get total() {
      return total;
    },
    get endCount() {
      return endCount;
    },
    get endError() {
      return endError;
    },
    bytes(): Uint8Array {
      const out = new Uint8Array(total);
      let at = 0;
      for (const c of chunks) {
        out.set(c, at);
        at += c.length;
      }
      return out;
    },
  };
}

async function shutdown(
  listener: Listener,
  ...readers: Array<{ ended: Promise<void> }>
) {
  listener.close();
  await listener.done;
  await Promise.all(readers.map((r) => r.ended));
}

function delay(ms: number) {
  let id: ReturnType<typeof setTimeout> | undefined;
  const p = new Promise<"timeout">((r) =>
    id = setTimeout(() => r("timeout"), ms)
  );
  return { p, cancel: () => clearTimeout(id) };
}

async function exchange(address: string) {
  const { listener, client, server } = await transportPair(address);
  const got = collect(server);
  const lines: string[] = [];
  for (let i = 0; i < 5000; i++) lines.push(`{"t":"msg","n":${i}}\n`);
  // Not awaited one by one: these queue up and go out in batches.
  await Promise.all(lines.map((l) => client.write(enc.encode(l))));
  await client.flush();
  client.close();
  await got.ended;
  assert.equal(dec.decode(got.bytes()), lines.join(""));
  assert.equal(got.endCount, 1);
  assert.equal(got.endError, undefined);
  server.close();
  const clientEnd = collect(client);
  await shutdown(listener, clientEnd);
  return { listener, client, server };
}

Deno.test("tcp 127.0.0.1: many frames arrive in order; addresses reported", async () => {
  const { listener, client, server } = await exchange("tcp:127.0.0.1:0");
  assert.match(listener.addr, /^tcp:127\.0\.0\.1:[1-9]\d*$/);
  assert.equal(client.remoteAddr, listener.addr);
  assert.equal(server.localAddr, listener.addr);
  assert.equal(server.remoteAddr, client.localAddr);
});

Deno.test("an accepted transport offers every operation a dialed one does (the listener's gate forwards them: burst holds, corks)", async () => {
  const { listener, client, server } = await transportPair("tcp:127.0.0.1:0");
  try {
    const operations = [
      "start",
      "write",
      "writeThen",
      "flush",
      "close",
      "holdBursts",
      "cork",
      "uncork",
    ] as const;
    for (const name of operations) {
      if (typeof client[name] !== "function") continue;
      assert.equal(typeof server[name], "function", `accepted ${name}`);
    }
  } finally {
    client.close();
    server.close();
    listener.close();
  }
});

/** Why [::1] cannot be listened on here, or undefined when it can. */
function ipv6Missing(): string | undefined {
  try {
    Deno.listen({ hostname: "::1", port: 0 }).close();
    return undefined;
  } catch (error) {
    return `IPv6 loopback unavailable (${
      error instanceof Error ? error.message : String(error)
    })`;
  }
}

const noIpv6 = ipv6Missing();
if (noIpv6) console.warn(`transport_test: [::1] test ignored: ${noIpv6}`);

Deno.test({
  name: "tcp [::1]: frames arrive in order",
  ignore: noIpv6 !== undefined,
}, async () => {
  const { listener } = await exchange("tcp:[::1]:0");
  assert.match(listener.addr, /^tcp:\[::1\]:\d+$/);
});

Deno.test("unix socket in a temp dir: frames arrive; socket file removed on close", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const path = `${dir}/peer.sock`;
    const { listener } = await exchange(`unix:${path}`);
    assert.equal(listener.addr, `unix:${path}`);
    await assert.rejects(Deno.stat(path), Deno.errors.NotFound);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("large frames (several MiB) arrive intact", async () => {
  const { listener, client, server } = await transportPair("tcp:127.0.0.1:0");
  const got = collect(server);
  const frames: Uint8Array[] = [];
  for (let i = 0; i < 3; i++) {
    const f = new Uint8Array(3 * 1024 * 1024 + i);
    for (let j = 0; j < f.length; j++) f[j] = 97 + ((j * 7 + i) % 26);
    f[f.length - 1] = 10;
    frames.push(f);
  }
  const small = enc.encode('{"t":"ping"}\n');
  await Promise.all([
    client.write(frames[0]),
    client.write(small),
    client.write(frames[1]),
    client.write(frames[2]),
  ]);
  client.close();
  await got.ended;
  const all = got.bytes();
  const expected = [frames[0], small, frames[1], frames[2]];
  let at = 0;
  for (const f of expected) {
    assert.deepEqual(all.subarray(at, at + f.length), f);
    at += f.length;
  }
  assert.equal(at, all.length);
  server.close();
  await shutdown(listener, collect(client));
});

Deno.test("backpressure: writes stall while the reader does not read, then drain", async () => {
  const { listener, client, server } = await transportPair("tcp:127.0.0.1:0");
  const frame = new Uint8Array(64 * 1024).fill(120);
  frame[frame.length - 1] = 10;
  const limit = 512 * 1024 * 1024;
  let written = 0;
  let pending: Promise<void> | undefined;
  // Nobody reads the server side yet: the kernel buffers fill and a write
  // stops resolving. Awaiting writers therefore hold at most one frame.
  while (written < limit) {
    const p = client.write(frame);
    const timer = delay(300);
    const r = await Promise.race([p.then(() => "ok" as const), timer.p]);
    timer.cancel();
    if (r === "timeout") {
      pending = p;
      break;
    }
    written += frame.length;
  }
  assert.ok(pending, "a write stalled");
  assert.ok(written < limit, `stalled after ${written} bytes`);
  // Still pending while nothing is read.
  let settled = false;
  pending.then(() => settled = true, () => settled = true);
  const wait = delay(200);
  await wait.p;
  assert.equal(settled, false);
  // A reader that takes its time: the read loop awaits onData.
  const got = collect(server, () => new Promise((r) => setTimeout(r, 1)));
  await pending;
  written += frame.length;
  await client.flush();
  client.close();
  await got.ended;
  assert.equal(got.total, written);
  server.close();
  await shutdown(listener, collect(client));
});

Deno.test("half-close: EOF from the peer ends reading, writing still works", async () => {
  let accepted!: (t: Transport) => void;
  const serverP = new Promise<Transport>((r) => accepted = r);
  const listener = await listen("tcp:127.0.0.1:0", (t) => accepted(t));
  const port = Number(listener.addr.split(":").at(-1));
  const raw = await Deno.connect({ hostname: "127.0.0.1", port });
  const server = await serverP;
  const got = collect(server);
  await raw.write(enc.encode('{"t":"bye"}\n'));
  await raw.closeWrite();
  await got.ended;
  assert.equal(dec.decode(got.bytes()), '{"t":"bye"}\n');
  assert.equal(got.endError, undefined);
  assert.equal(server.closed, false);
  // Our side can still answer after their EOF.
  await server.write(enc.encode('{"t":"bye","re":"x"}\n'));
  server.close();
  const buf = new Uint8Array(1024);
  let text = "";
  for (;;) {
    const n = await raw.read(buf);
    if (n === null) break;
    text += dec.decode(buf.subarray(0, n));
  }
  raw.close();
  assert.equal(text, '{"t":"bye","re":"x"}\n');
  listener.close();
  await listener.done;
});

Deno.test("close is idempotent; writes after close reject; pending writes are dropped", async () => {
  const { listener, client, server } = await transportPair("tcp:127.0.0.1:0");
  const frame = new Uint8Array(1024 * 1024).fill(65);
  // Queue far more than the kernel buffers hold; nobody reads.
  const writes = Array.from({ length: 64 }, () => client.write(frame));
  const outcomes = Promise.allSettled(writes);
  const flushed = client.flush();
  const clientEnd = collect(client);
  client.close();
  client.close();
  assert.equal(client.closed, true);
  const results = await outcomes;
  assert.ok(results.some((r) => r.status === "rejected"), "some were dropped");
  await flushed;
  await assert.rejects(client.write(frame), /transport closed/);
  await clientEnd.ended;
  assert.equal(clientEnd.endCount, 1);
  assert.equal(clientEnd.endError, undefined);
  const serverEnd = collect(server);
  await serverEnd.ended;
  server.close();
  server.close();
  assert.equal(serverEnd.endCount, 1);
  assert.throws(() => server.start({ onData() {}, onEnd() {} }), /already/);
  await shutdown(listener);
});

Deno.test("a dialed socket closed with a read pending sends its FIN, and its read ends at the peer's FIN, not in an error", async () => {
  let accepted!: (t: Transport) => void;
  const serverP = new Promise<Transport>((r) => accepted = r);
  const listener = await listen("tcp:127.0.0.1:0", (t) => accepted(t));
  const client = await dial(listener.addr);
  const server = await serverP;
  // What the read loop's pending read came to: an EOF, or a rejection (the
  // error Deno builds for a read cut off by closing the socket under it).
  const outcomes: string[] = [];
  const source = client as unknown as {
    read(p: Uint8Array): Promise<number | null>;
  };
  const read = source.read.bind(client);
  source.read = (p) =>
    read(p).then((n) => {
      outcomes.push(n === null ? "eof" : "data");
      return n;
    }, (error) => {
      outcomes.push("rejected");
      throw error;
    });
  const clientEnd = collect(client);
  const serverEnd = collect(server);
  await client.write(enc.encode('{"t":"ping"}\n'));
  while (serverEnd.total === 0) await new Promise((r) => setTimeout(r, 5));
  client.close();
  assert.equal(client.closed, true);
  // The server sees our FIN, and closes in turn: our read ends with an EOF.
  await serverEnd.ended;
  assert.equal(serverEnd.endError, undefined);
  server.close();
  await clientEnd.ended;
  assert.deepEqual(outcomes, ["eof"]);
  assert.equal(clientEnd.endError, undefined);
  await shutdown(listener);
});

Deno.test(`a dialed socket whose peer never closes is closed anyway (after LINGER_MS, ${LINGER_MS} ms)`, async () => {
  const raw = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const held = raw.accept(); // accepted, never read from nor closed
  const client = await dial(`tcp:127.0.0.1:${raw.addr.port}`);
  const peer = await held;
  const clientEnd = collect(client);
  client.close();
  // Ends only once the socket is closed: the linger's timer did it.
  await clientEnd.ended;
  assert.equal(clientEnd.endError, undefined);
  assert.equal(clientEnd.endCount, 1);
  // The socket is closed: the peer reads our FIN, then nothing.
  assert.equal(await peer.read(new Uint8Array(16)), null);
  peer.close();
  raw.close();
});

Deno.test("dial errors are one clear line", async () => {
  // A port that was just free: connection refused.
  const probe = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = probe.addr.port;
  probe.close();
  await assert.rejects(dial(`tcp:127.0.0.1:${port}`), (e: unknown) => {
    assert.ok(e instanceof TransportError);
    assert.equal(
      e.message,
      `dial tcp:127.0.0.1:${port}: connection refused`,
    );
    return true;
  });
  const dir = await Deno.makeTempDir();
  try {
    await assert.rejects(
      dial(`unix:${dir}/none.sock`),
      (e: unknown) => {
        assert.ok(e instanceof TransportError);
        assert.equal(e.message, `dial unix:${dir}/none.sock: no such socket`);
        return true;
      },
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
  await assert.rejects(dial("localhost:80"), AddressError);
  const aborted = new AbortController();
  aborted.abort();
  await assert.rejects(
    dial("tcp:127.0.0.1:1", { signal: aborted.signal }),
    /dial tcp:127\.0\.0\.1:1: aborted/,
  );
});

Deno.test("plaintext TCP to a public address is refused without opt-in", async () => {
  const saved = Deno.env.get("AWP_ALLOW_PLAINTEXT");
  Deno.env.delete("AWP_ALLOW_PLAINTEXT");
  try {
    for (const a of ["tcp:8.8.8.8:53", "tcp:[2001:4860:4860::8888]:53"]) {
      await assert.rejects(dial(a), (e: unknown) => {
        assert.ok(e instanceof TransportError);
        assert.match(
          e.message,
          /^dial .*: plaintext TCP to a public address refused/,
        );
        // What a person at the CLI can do, not the library's option name.
        assert.match(e.message, /AWP_ALLOW_PLAINTEXT=1 awp up/);
        assert.ok(!e.message.includes("\n"));
        return true;
      });
    }
    await assert.rejects(
      listen("tcp:8.8.8.8:0", () => {}),
      /^TransportError: listen tcp:8\.8\.8\.8:0: plaintext TCP on a public address refused|listen tcp:8\.8\.8\.8:0: plaintext/,
    );
    // Opting in lets the dial proceed to the network: with an already
    // aborted signal it stops there, proving the refusal was lifted.
    const aborted = new AbortController();
    aborted.abort();
    Deno.env.set("AWP_ALLOW_PLAINTEXT", "1");
    await assert.rejects(
      dial("tcp:8.8.8.8:53", { signal: aborted.signal }),
      /aborted/,
    );
  } finally {
    if (saved === undefined) Deno.env.delete("AWP_ALLOW_PLAINTEXT");
    else Deno.env.set("AWP_ALLOW_PLAINTEXT", saved);
  }
});

Deno.test("a stale unix socket file is replaced; a live one is in use", async () => {
  const dir = await Deno.makeTempDir();
  const path = `${dir}/stale.sock`;
  try {
    // A real process that listens and is killed -9 leaves its socket file.
    const child = new Deno.Command(Deno.execPath(), {
      args: [
        "eval",
        `Deno.listen({ transport: "unix", path: ${JSON.stringify(path)} });` +
        `console.log("ready"); setInterval(() => {}, 1000);`,
      ],
      stdout: "piped",
      stderr: "null",
    }).spawn();
    const reader = child.stdout.getReader();
    const first = await reader.read();
    assert.match(dec.decode(first.value), /ready/);
    child.kill("SIGKILL");
    await child.status;
    reader.releaseLock();
    await child.stdout.cancel();
    assert.ok((await Deno.stat(path)).isSocket, "stale file left behind");
    await assert.rejects(dial(`unix:${path}`), /connection refused/);

    const listener = await listen(`unix:${path}`, (t) => t.close());
    await assert.rejects(
      listen(`unix:${path}`, () => {}),
      new RegExp(`listen unix:${path}: address already in use`),
    );
    const t = await dial(listener.addr);
    const end = collect(t);
    await end.ended;
    t.close();
    listener.close();
    await listener.done;
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("bind: a dial before listen waits in the backlog and is served once listen takes the socket", async () => {
  const dir = await Deno.makeTempDir();
  try {
    for (const address of ["tcp:127.0.0.1:0", `unix:${dir}/early.sock`]) {
      const bound = await bind(address);
      // Not accepting yet: the dial is answered by the kernel, not refused.
      const client = await dial(bound.addr);
      const served: Transport[] = [];
      let take: (t: Transport) => void = (t) => served.push(t);
      const listener = await listen(bound, (t) => take(t));
      assert.equal(listener.addr, bound.addr);
      const server = served[0] ?? await new Promise<Transport>((resolve) => {
        take = (t) => {
          served.push(t);
          resolve(t);
        };
      });
      assert.equal(served.length, 1);
      const got = collect(server);
      await client.write(enc.encode("early\n"));
      client.close();
      await got.ended;
      assert.equal(dec.decode(got.bytes()), "early\n");
      await assert.rejects(
        listen(bound, () => {}),
        /socket already served/,
      );
      server.close();
      listener.close();
      await listener.done;
    }
    await assert.rejects(Deno.stat(`${dir}/early.sock`), Deno.errors.NotFound);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("bind: a socket never served is closed and its unix file removed; errors as listen's", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const path = `${dir}/unserved.sock`;
    const bound = await bind(`unix:${path}`);
    assert.ok((await Deno.stat(path)).isSocket);
    await assert.rejects(
      bind(`unix:${path}`),
      new RegExp(`listen unix:${path}: address already in use`),
    );
    bound.close();
    bound.close();
    await assert.rejects(Deno.stat(path), Deno.errors.NotFound);
    await assert.rejects(dial(`unix:${path}`), /no such socket/);
    await assert.rejects(bind("tcp:8.8.8.8:0"), /public address refused/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
