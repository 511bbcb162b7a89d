import assert from "node:assert/strict";
import { Peer, type PeerOptions } from "../../peer/peer.ts";
import { dial, listen, TransportError } from "../../net/transport.ts";
import { MAX_LINE_BYTES } from "../../wire/frame.ts";
import { EventLog } from "../helpers/event_log.ts";

const FAST: Partial<PeerOptions> = {
  timeouts: { pingInterval: 0, bye: 1000 },
  dialer: { timing: { baseMs: 50, capMs: 300, graceMs: 100 } },
};

/** A raw WebSocket client: every message it gets, and how it closed. */
async function rawClient(url: string) {
  const ws = new WebSocket(url);
  const got: Array<string | ArrayBuffer | Blob> = [];
  const closed = new Promise<number>((resolve) =>
    ws.addEventListener("close", (e) => resolve(e.code))
  );
  ws.addEventListener("message", (e) => got.push(e.data));
  await new Promise((resolve, reject) => {
    ws.addEventListener("open", resolve, { once: true });
    ws.addEventListener("error", reject, { once: true });
  });
  return { ws, got, closed };
}

async function until(check: () => boolean, what: string, ms = 10_000) {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

Deno.test("each line is one text message without its newline; frame faults get err and a close", async () => {
  const root = await Deno.makeTempDir();
  const b = await Peer.open({ home: root, name: "bob", ...FAST });
  try {
    const addr = await b.listen("ws://127.0.0.1:0/awp");
    const faults: Array<[string, (ws: WebSocket) => void, string]> = [
      ["binary", (ws) => ws.send(new Uint8Array([123, 125])), "bad_frame"],
      [
        "newline inside",
        (ws) => ws.send('{"t":"ping"}\n{"t":"ping"}'),
        "bad_frame",
      ],
      [
        "over 1 MiB",
        (ws) => ws.send("x".repeat(MAX_LINE_BYTES + 1)),
        "too_large",
      ],
    ];
    for (const [name, fault, code] of faults) {
      const c = await rawClient(addr);
      await until(() => c.got.length >= 1, `${name}: hello`);
      const hello = c.got[0];
      assert.equal(typeof hello, "string", name);
      assert.ok(!(hello as string).includes("\n"), name);
      assert.equal(JSON.parse(hello as string).t, "hello", name);
      fault(c.ws);
      await c.closed;
      const errs = c.got.slice(1).map((m) => JSON.parse(m as string));
      assert.equal(errs.length, 1, `${name}: ${JSON.stringify(errs)}`);
      assert.equal(errs[0].t, "err", name);
      assert.equal(errs[0].code, code, name);
    }
  } finally {
    await b.close();
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("the listener answers plain HTTP with 426 and other paths with 404", async () => {
  const listener = await listen("ws://127.0.0.1:0/awp", (t) => t.close());
  try {
    const http = listener.addr.replace(/^ws:/, "http:");
    const plain = await fetch(http);
    assert.equal(plain.status, 426);
    await plain.body?.cancel();
    const other = await fetch(http.replace("/awp", "/elsewhere"));
    assert.equal(other.status, 404);
    await other.body?.cancel();
    await assert.rejects(
      dial(listener.addr.replace("/awp", "/elsewhere")),
      (e) => e instanceof TransportError && /HTTP 404/.test(e.message),
    );
  } finally {
    listener.close();
    await listener.done;
  }
});

Deno.test("ws: to or on a public address is refused like TCP; wss: is not, and needs a certificate to listen", async () => {
  await assert.rejects(
    dial("ws://8.8.8.8:80/awp"),
    /dial ws:\/\/8\.8\.8\.8:80\/awp: plaintext ws: to a public address refused/,
  );
  await assert.rejects(
    listen("ws://8.8.8.8:0/awp", () => {}),
    /plaintext ws: on a public address refused/,
  );
  await assert.rejects(
    listen("wss://127.0.0.1:0/awp", () => {}),
    /wss: needs a TLS certificate and key/,
  );
  await assert.rejects(dial("ws://127.0.0.1:1/awp"), /connection refused/);
  // wss: is allowed anywhere: not refused (here stopped before any packet).
  const aborted = AbortSignal.abort();
  await assert.rejects(
    dial("wss://8.8.8.8:443/awp", { signal: aborted }),
    /dial wss:\/\/8\.8\.8\.8:443\/awp: aborted/,
  );
  await assert.rejects(
    listen("wss://192.0.2.1:0/awp", () => {}, { cert: "x", key: "y" }),
    (e) => e instanceof TransportError && !/refused/.test(e.message),
  );
});

Deno.test("a dial that gets HTTP 503 is retried with backoff and shown as waking until the host is up", async () => {
  const root = await Deno.makeTempDir();
  let a: Peer | undefined;
  let b: Peer | undefined;
  try {
    a = await Peer.open({ home: `${root}/a`, name: "alice", ...FAST });
    b = await Peer.open({ home: `${root}/b`, name: "bob", ...FAST });
    const addr = await b.listen("ws://127.0.0.1:0/awp");
    const bobKey = await a.connect(addr);
    await b.close();
    const port = Number(new URL(addr).port);
    // The sleeping host's front: HTTP answers, no upgrade.
    let hits = 0;
    const front = Deno.serve(
      { hostname: "127.0.0.1", port, onListen() {} },
      () => {
        hits++;
        return new Response("waking up\n", { status: 503 });
      },
    );
    const sent = await a.send(bobKey, "are you up?");
    await until(() => hits >= 2, "two dials at the front");
    const [info] = (await a.peers()).filter((p) => p.key === bobKey);
    assert.equal(info.connected, false);
    assert.equal(info.waking, true);
    await front.shutdown();
    b = await Peer.open({ home: `${root}/b`, name: "bob", ...FAST });
    const eb = new EventLog(b);
    await b.listen(`ws://127.0.0.1:${port}/awp`);
    await a.waitAck(sent.id, { timeoutMs: 15_000 });
    await eb.until(() => eb.of("message").length === 1, "the msg");
    const [after] = (await a.peers()).filter((p) => p.key === bobKey);
    assert.equal(after.waking, false);
  } finally {
    await a?.close();
    await b?.close();
    await Deno.remove(root, { recursive: true });
  }
});

/** Answers the WebSocket handshake by hand, then never reads again. */
function deafServer() {
  const tcp = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const conns: Deno.Conn[] = [];
  void (async () => {
    for await (const conn of tcp) {
      conns.push(conn);
      const buf = new Uint8Array(4096);
      let text = "";
      while (!text.includes("\r\n\r\n")) {
        const n = await conn.read(buf);
        if (n === null) break;
        text += new TextDecoder().decode(buf.subarray(0, n));
      }
      const key = /sec-websocket-key:\s*(\S+)/i.exec(text)![1];
      const digest = await crypto.subtle.digest(
        "SHA-1",
        new TextEncoder().encode(key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"),
      );
      const accept = btoa(String.fromCharCode(...new Uint8Array(digest)));
      await conn.write(new TextEncoder().encode(
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n" +
          `Connection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\n\r\n`,
      ));
    }
  })().catch(() => {});
  return {
    url: `ws://127.0.0.1:${(tcp.addr as Deno.NetAddr).port}/`,
    close() {
      for (const c of conns) c.close();
      tcp.close();
    },
  };
}

Deno.test("writes wait for the kernel: a fast sender to a reader that stopped reading stays bounded", async () => {
  const server = deafServer();
  const t = await dial(server.url);
  try {
    t.start({ onData() {}, onEnd() {} });
    const line = new TextEncoder().encode(`"${"y".repeat(256 * 1024 - 3)}"\n`);
    const total = 256; // 64 MiB offered
    let written = 0;
    const writes = Array.from(
      { length: total },
      () => t.write(line).then(() => written++, () => {}),
    );
    // Let the socket fill: the kernel takes a few MiB, then writes stop.
    let last = -1;
    while (written !== last) {
      last = written;
      await new Promise((r) => setTimeout(r, 300));
    }
    const accepted = written * line.length;
    assert.ok(written > 0, "some writes went out");
    assert.ok(
      accepted < 24 * 1024 * 1024,
      `accepted ${accepted} bytes with nobody reading`,
    );
    assert.ok(written < total);
    t.close();
    await Promise.all(writes);
  } finally {
    t.close();
    server.close();
  }
});

Deno.test("our client talks to a standard WebSocket server (Deno.upgradeWebSocket): lines both ways", async () => {
  const got: string[] = [];
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    (request) => {
      const { socket, response } = Deno.upgradeWebSocket(request);
      socket.onmessage = (e) => {
        got.push(String(e.data));
        socket.send(`{"echo":${JSON.stringify(String(e.data).length)}}`);
      };
      return response;
    },
  );
  const t = await dial(`ws://127.0.0.1:${server.addr.port}/any`);
  const chunks: string[] = [];
  t.start({
    onData: (c) => void chunks.push(new TextDecoder().decode(c)),
    onEnd() {},
  });
  try {
    const long = `{"t":"x","pad":"${"p".repeat(200_000)}"}`;
    // Two lines in one write, and one line split over two writes.
    await t.write(new TextEncoder().encode('{"a":1}\n{"b":2}\n'));
    await t.write(new TextEncoder().encode(long.slice(0, 1000)));
    await t.write(new TextEncoder().encode(long.slice(1000) + "\n"));
    await until(() => chunks.join("").split("\n").length > 3, "three echoes");
    assert.deepEqual(got, ['{"a":1}', '{"b":2}', long]);
    assert.equal(
      chunks.join(""),
      `{"echo":7}\n{"echo":7}\n{"echo":${long.length}}\n`,
    );
  } finally {
    t.close();
    await server.shutdown();
  }
});

Deno.test("a protocol error (an unmasked frame from a client) ends the connection with 1002 and a read error", async () => {
  let ended: Error | undefined | "no" = "no";
  const listener = await listen("ws://127.0.0.1:0/awp", (t) =>
    t.start({
      onData() {},
      onEnd(error) {
        ended = error;
      },
    }));
  const port = Number(new URL(listener.addr).port);
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  try {
    await conn.write(new TextEncoder().encode(
      "GET /awp HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n",
    ));
    // An unmasked text frame "{}": clients must mask.
    await conn.write(new Uint8Array([0x81, 0x02, 0x7b, 0x7d]));
    const got: number[] = [];
    const buf = new Uint8Array(4096);
    for (;;) {
      const n = await conn.read(buf);
      if (n === null) break;
      got.push(...buf.subarray(0, n));
    }
    const text = new TextDecoder("latin1").decode(new Uint8Array(got));
    assert.match(text, /^HTTP\/1\.1 101 /);
    const frame = got.slice(text.indexOf("\r\n\r\n") + 4);
    assert.deepEqual(frame, [0x88, 0x02, 0x03, 0xea]); // close 1002
    await until(() => ended !== "no", "onEnd");
    assert.match(String(ended), /protocol error: unmasked frame/);
  } finally {
    conn.close();
    listener.close();
    await listener.done;
  }
});

Deno.test("ws listeners keep TCP's connection bounds: over the per-host handshake cap a socket is closed at once", async () => {
  const listener = await listen("ws://127.0.0.1:0/awp", (t) => t.close(), {
    limits: { maxUnauthenticatedPerHost: 1 },
  });
  const port = Number(new URL(listener.addr).port);
  const first = await Deno.connect({ hostname: "127.0.0.1", port });
  const second = await Deno.connect({ hostname: "127.0.0.1", port });
  try {
    // The first is still in its (HTTP) handshake: the second is refused at
    // once (without the cap it would wait for the 10 s upgrade timeout).
    let timer: ReturnType<typeof setTimeout> | undefined;
    const got = await Promise.race([
      second.read(new Uint8Array(16)),
      new Promise<"timeout">((r) =>
        timer = setTimeout(() => r("timeout"), 3000)
      ),
    ]);
    clearTimeout(timer);
    assert.equal(got, null);
  } finally {
    first.close();
    second.close();
    listener.close();
    await listener.done;
  }
});

Deno.test("many big lines both ways, some beside small ones, arrive byte for byte (reused frame and read buffers)", async () => {
  /** Line `i`: a distinct pattern of `size` bytes, no newline. */
  const lineOf = (i: number, size: number) => {
    const line = new Uint8Array(size + 1);
    for (let k = 0; k < size; k++) line[k] = 0x21 + ((k * 7 + i * 13) % 90);
    line[size] = 0x0a;
    return line;
  };
  const sizes = Array.from(
    { length: 40 },
    (_, i) => i % 5 === 4 ? 10 + i : 100_000 + i * 7919,
  );
  const expected = sizes.map((size, i) => lineOf(i, size));
  const stream = (lines: Uint8Array[]) => {
    const out = new Uint8Array(lines.reduce((n, l) => n + l.length, 0));
    let at = 0;
    for (const l of lines) out.set(l, (at += l.length) - l.length);
    return out;
  };
  const want = stream(expected);
  /** Collects a transport's bytes (copies: the views are reused). */
  const collect = (t: Awaited<ReturnType<typeof dial>>) => {
    const pieces: Uint8Array[] = [];
    let total = 0;
    t.start({
      onData(c) {
        pieces.push(c.slice());
        total += c.length;
      },
      onEnd() {},
    });
    return {
      pieces,
      get total() {
        return total;
      },
    };
  };
  let accepted: ReturnType<typeof collect> | undefined;
  let serverSide: Awaited<ReturnType<typeof dial>> | undefined;
  const listener = await listen("ws://127.0.0.1:0/awp", (t) => {
    serverSide = t;
    accepted = collect(t);
  });
  const client = await dial(listener.addr);
  const fromServer = collect(client);
  try {
    // Not awaited one by one: the writer batches what queues up.
    await Promise.all(expected.map((l) => client.write(l)));
    await until(() => accepted?.total === want.length, "all lines at server");
    assert.deepEqual(stream(accepted!.pieces), want);
    await Promise.all(expected.map((l) => serverSide!.write(l)));
    await until(() => fromServer.total === want.length, "all lines at client");
    assert.deepEqual(stream(fromServer.pieces), want);
    // Two big lines in one write are still two messages.
    const two = stream([expected[0], expected[1]]);
    await client.write(two);
    const total = want.length + two.length;
    await until(() => accepted?.total === total, "two lines in one write");
    assert.deepEqual(stream(accepted!.pieces).subarray(want.length), two);
  } finally {
    client.close();
    serverSide?.close();
    listener.close();
    await listener.done;
  }
});
