import assert from "node:assert/strict";
import { type ByteSource, readAhead } from "../../net/read_ahead.ts";
import { prng } from "../helpers/prng.ts";

const SIZES = { idle: 16, burst: 256, ahead: 200 };

/** Byte `i` of the test stream. */
const byteAt = (i: number) => (i * 31 + (i >> 8)) & 255;

/**
 * A source of `total` bytes of the test stream, each read taking at most
 * `max` bytes and resolving after `delay()` ms (0: at once).
 */
function streamSource(
  total: number,
  max: (room: number) => number,
  delay: () => number = () => 0,
): ByteSource & { reads: number } {
  let at = 0;
  const source = {
    reads: 0,
    closed: false,
    async read(p: Uint8Array): Promise<number | null> {
      const ms = delay();
      if (ms > 0) await new Promise((r) => setTimeout(r, ms));
      if (at >= total) return null;
      const n = Math.min(p.length, max(p.length), total - at);
      for (let k = 0; k < n; k++) p[k] = byteAt(at + k);
      at += n;
      source.reads++;
      return n;
    },
  };
  return source;
}

Deno.test("read ahead: every byte in order, each piece intact until its owner is done", async () => {
  for (let seed = 1; seed <= 30; seed++) {
    const rand = prng(seed);
    const total = 1 + Math.floor(rand() * 5000);
    const source = streamSource(
      total,
      (room) => 1 + Math.floor(rand() * Math.min(room, 300)),
      () => (rand() < 0.3 ? 1 : 0),
    );
    let seen = 0;
    let ends = 0;
    let ended: Error | undefined;
    await readAhead(source, SIZES, {
      async onData(piece) {
        const from = seen;
        seen += piece.length;
        // A slow owner now and then: reads go on meanwhile.
        if (rand() < 0.4) await new Promise((r) => setTimeout(r, 1));
        for (let k = 0; k < piece.length; k++) {
          assert.equal(
            piece[k],
            byteAt(from + k),
            `seed ${seed} at ${from + k}`,
          );
        }
      },
      onEnd(error) {
        ends++;
        ended = error;
      },
    });
    assert.equal(seen, total, `seed ${seed}`);
    assert.equal(ends, 1);
    assert.equal(ended, undefined);
  }
});

Deno.test("read ahead: a busy owner gets what several reads brought, in one piece", async () => {
  const source = streamSource(100_000, () => 100);
  const pieces: number[] = [];
  await readAhead(source, { idle: 16, burst: 4096, ahead: 1000 }, {
    async onData(piece) {
      pieces.push(piece.length);
      await new Promise((r) => setTimeout(r, 2));
    },
    onEnd() {},
  });
  assert.equal(pieces.reduce((a, b) => a + b, 0), 100_000);
  assert.ok(
    pieces.length < source.reads / 5,
    `${pieces.length} pieces for ${source.reads} reads`,
  );
  // Bounded: never more than `ahead` read and not handed over.
  assert.ok(Math.max(...pieces) <= 1000, `${Math.max(...pieces)}`);
});

Deno.test("read ahead: a quiet socket is not waited for once the owner threw, or once stopped", async () => {
  // After two pieces the source goes quiet for good.
  const quiet = (): ByteSource => {
    let n = 0;
    return {
      closed: false,
      read(p) {
        if (n++ >= 2) return new Promise(() => {});
        p.fill(1, 0, 4);
        return Promise.resolve(4);
      },
    };
  };
  let error: Error | undefined;
  await readAhead(quiet(), SIZES, {
    onData() {
      throw new Error("owner broke");
    },
    onEnd(e) {
      error = e;
    },
  });
  assert.equal(error?.message, "owner broke");

  const source = quiet();
  let pieces = 0;
  let ended = false;
  const done = readAhead(source, SIZES, {
    onData() {
      pieces++;
      (source as { closed: boolean }).closed = true; // closed by its owner
    },
    onEnd(e) {
      assert.equal(e, undefined);
      ended = true;
    },
  });
  await done;
  assert.ok(ended);
  assert.equal(pieces, 1);
});

Deno.test("read ahead: a read error ends it after what came before, with the error", async () => {
  let n = 0;
  const source: ByteSource = {
    closed: false,
    read(p) {
      if (n++ === 0) {
        p.fill(7, 0, 10);
        return Promise.resolve(10);
      }
      return Promise.reject(new Error("connection reset"));
    },
  };
  const got: number[] = [];
  let error: Error | undefined;
  await readAhead(source, SIZES, {
    onData: (piece) => void got.push(...piece),
    onEnd(e) {
      error = e;
    },
  });
  assert.deepEqual(got, new Array(10).fill(7));
  assert.equal(error?.message, "connection reset");
});

Deno.test("read ahead over a Unix socket: a slow owner, 8 MiB intact, in fewer pieces than reads", async () => {
  const dir = await Deno.makeTempDir();
  const path = `${dir}/s.sock`;
  const listener = Deno.listen({ transport: "unix", path });
  try {
    const total = 8 * 1024 * 1024;
    const sent = new Uint8Array(total);
    for (let i = 0; i < total; i++) sent[i] = byteAt(i);
    const accepted = listener.accept();
    const client = await Deno.connect({ transport: "unix", path });
    const server = await accepted;
    const writing = (async () => {
      for (let at = 0; at < total;) {
        at += await client.write(sent.subarray(at, at + 300_000));
      }
      client.close();
    })();
    let reads = 0;
    const counted: ByteSource = {
      closed: false,
      read: (p) => server.read(p).then((n) => (n !== null && reads++, n)),
    };
    let seen = 0;
    let pieces = 0;
    await readAhead(
      counted,
      { idle: 1024, burst: 1 << 20, ahead: 512 * 1024 },
      {
        async onData(piece) {
          pieces++;
          for (let k = 0; k < piece.length; k += 4093) {
            assert.equal(piece[k], byteAt(seen + k));
          }
          seen += piece.length;
          await new Promise((r) => setTimeout(r, 1));
        },
        onEnd(e) {
          assert.equal(e, undefined);
        },
      },
    );
    await writing;
    server.close();
    assert.equal(seen, total);
    assert.ok(pieces < reads, `${pieces} pieces for ${reads} reads`);
  } finally {
    listener.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("read ahead: a short read after a long wait shrinks the quiet buffer to `still`, a read that fills it grows it back", async () => {
  // Reads of these sizes, each whole (the source never splits on its own),
  // and how long each waits for its bytes (ms).
  const plan = [40, 20, 50, 100, 10, 64, 5, 5];
  const waits = [0, 30, 0, 0, 30, 30, 0, 0];
  const rooms: number[] = [];
  let at = 0;
  let i = 0;
  let waited = -1;
  const source: ByteSource = {
    closed: false,
    async read(p) {
      rooms.push(p.length);
      if (i >= plan.length) return null;
      if (waited !== i) {
        waited = i;
        if (waits[i] > 0) await new Promise((r) => setTimeout(r, waits[i]));
      }
      // What is left of this step of the plan, as much as fits.
      const n = Math.min(p.length, plan[i]);
      for (let k = 0; k < n; k++) p[k] = byteAt(at + k);
      at += n;
      plan[i] -= n;
      if (plan[i] === 0) i++;
      return n;
    },
  };
  let seen = 0;
  const sizes = {
    idle: 128,
    still: 32,
    stillAfterMs: 20,
    burst: 1024,
    ahead: 1024,
  };
  await readAhead(source, sizes, {
    onData(piece) {
      for (let k = 0; k < piece.length; k++) {
        assert.equal(piece[k], byteAt(seen + k));
      }
      seen += piece.length;
    },
    onEnd(error) {
      assert.equal(error, undefined);
    },
  });
  assert.equal(seen, 40 + 20 + 50 + 100 + 10 + 64 + 5 + 5);
  assert.deepEqual(rooms, [
    128, // 40 at once
    128, // 20 after a wait: idle -> still
    32, // 50 fills it: 32 -> grow
    128, // the 18 left
    128, // 100
    128, // 10 after a wait: still
    32, // 32 of 64 after a wait fills it: grow
    128, // the other 32 at once
    128, // 5 at once: stays
    128, // 5
    128, // EOF
  ]);
});
