import assert from "node:assert/strict";
import {
  acceptKey,
  encodeFrame,
  FrameDecoder,
  OP,
  parseHttpHead,
} from "../../net/websocket_frames.ts";
import { MAX_LINE_BYTES } from "../../wire/frame.ts";

const enc = new TextEncoder();
const dec = new TextDecoder();

/** A frame with explicit FIN and opcode, masked like a client's. */
function frame(opcode: number, payload: Uint8Array, fin = true): Uint8Array {
  const f = encodeFrame(opcode, payload, true);
  if (!fin) f[0] &= 0x7f;
  return f;
}

Deno.test("the accept key of RFC 6455 1.3", async () => {
  assert.equal(
    await acceptKey("dGhlIHNhbXBsZSBub25jZQ=="),
    "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=",
  );
});

Deno.test("parseHttpHead waits for the blank line and keeps what follows", () => {
  const raw = new Uint8Array([
    ...enc.encode(
      "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nX: 1\r\nx: 2\r\n\r\n",
    ),
    0x81,
    0x00,
  ]);
  assert.equal(parseHttpHead(raw.subarray(0, 20)), undefined);
  const parsed = parseHttpHead(raw)!;
  assert.equal(parsed.head.start, "HTTP/1.1 101 Switching Protocols");
  assert.equal(parsed.head.headers.get("upgrade"), "websocket");
  assert.equal(parsed.head.headers.get("x"), "1, 2");
  assert.equal(parsed.rest, raw.length - 2);
});

Deno.test("frames split anywhere, fragmented messages, 16- and 64-bit lengths, pings", () => {
  const big = "a".repeat(70_000); // 64-bit length
  const mid = "b".repeat(300); // 16-bit length
  const stream = new Uint8Array([
    ...frame(OP.text, enc.encode('{"t":"x"}')),
    ...frame(OP.ping, enc.encode("hi")),
    ...frame(OP.text, enc.encode(mid.slice(0, 100)), false),
    ...frame(OP.continuation, enc.encode(mid.slice(100, 200)), false),
    ...frame(OP.pong, new Uint8Array(0)),
    ...frame(OP.continuation, enc.encode(mid.slice(200))),
    ...frame(OP.text, enc.encode(big)),
  ]);
  // Byte by byte and all at once give the same events.
  for (const step of [1, 7, stream.length]) {
    const d = new FrameDecoder("server");
    const events = [];
    for (let at = 0; at < stream.length; at += step) {
      // Text bytes are views, valid until the next push: copied at once.
      for (const e of d.push(stream.subarray(at, at + step))) {
        events.push(e.kind === "text" ? { ...e, bytes: e.bytes.slice() } : e);
      }
    }
    const texts = events.filter((e) => e.kind === "text").map((e) =>
      e.kind === "text" ? dec.decode(e.bytes) : ""
    );
    assert.deepEqual(texts, ['{"t":"x"}', mid, big], `step ${step}`);
    const pings = events.filter((e) => e.kind === "ping");
    assert.equal(pings.length, 1);
  }
});

Deno.test("faults: binary, a newline inside, over 1 MiB from the header alone; protocol errors", () => {
  const cases: Array<[Uint8Array, string, string]> = [
    [frame(OP.binary, new Uint8Array([1])), "fault", "bad_frame"],
    [frame(OP.text, enc.encode("{}\n{}")), "fault", "bad_frame"],
    // Only the header of a 2 MiB frame: too_large before any payload.
    [
      frame(OP.text, new Uint8Array(2 * MAX_LINE_BYTES)).subarray(0, 14),
      "fault",
      "too_large",
    ],
    [
      new Uint8Array([
        ...frame(OP.text, new Uint8Array(MAX_LINE_BYTES).fill(97), false),
        ...frame(OP.continuation, enc.encode("a")).subarray(0, 6),
      ]),
      "fault",
      "too_large",
    ],
    [encodeFrame(OP.text, enc.encode("{}"), false), "protocol", "1002"],
    [frame(OP.continuation, enc.encode("{}")), "protocol", "1002"],
    [frame(0x3, enc.encode("{}")), "protocol", "1002"],
  ];
  for (const [bytes, kind, code] of cases) {
    const events = new FrameDecoder("server").push(bytes);
    const last = events[events.length - 1];
    assert.equal(last.kind, kind, JSON.stringify(last));
    if (last.kind === "fault") assert.equal(last.code, code);
    if (last.kind === "protocol") assert.equal(String(last.status), code);
  }
  // After a fault nothing more is decoded or kept.
  const stopped = new FrameDecoder("server");
  stopped.push(frame(OP.binary, new Uint8Array([1])));
  for (let i = 0; i < 100; i++) {
    assert.deepEqual(stopped.push(new Uint8Array(64 * 1024)), []);
  }
  assert.ok(stopped.space().length <= 128 * 1024, "the buffer did not grow");
  const close = new FrameDecoder("client").push(
    encodeFrame(OP.close, new Uint8Array([0x03, 0xe9])),
  );
  assert.deepEqual(close, [{ kind: "close", status: 1001 }]);
});

Deno.test("a newline anywhere in a message is found, masked or not, at every alignment", () => {
  for (const side of ["server", "client"] as const) {
    for (const size of [1, 2, 3, 4, 5, 7, 8, 9, 63, 64, 65, 300, 4099]) {
      for (let lead = 0; lead < 4; lead++) {
        const spots = [0, 1, 2, 3, size - 1, Math.floor(size / 2)];
        for (const spot of spots.filter((x) => x >= 0 && x < size)) {
          const payload = new Uint8Array(size).fill(0x41);
          payload[spot] = 0x0a;
          const f = encodeFrame(OP.text, payload, side === "server");
          // `lead` bytes before the frame move its payload's alignment.
          const d = new FrameDecoder(side);
          const pad = encodeFrame(
            OP.pong,
            new Uint8Array(lead),
            side === "server",
          );
          const events = d.push(new Uint8Array([...pad, ...f]));
          const last = events[events.length - 1];
          assert.equal(last.kind, "fault", `${side} ${size} ${lead} ${spot}`);
        }
        const clean = new Uint8Array(size).fill(0x0b);
        const d = new FrameDecoder(side);
        const pad = encodeFrame(
          OP.pong,
          new Uint8Array(lead),
          side === "server",
        );
        const events = d.push(
          new Uint8Array([
            ...pad,
            ...encodeFrame(OP.text, clean, side === "server"),
          ]),
        );
        assert.equal(events.length, 1, `${side} ${size} ${lead}`);
        assert.deepEqual(events[0].kind === "text" && events[0].bytes, clean);
      }
    }
  }
});

Deno.test("text events are views until the next push; a frame split over pushes comes whole", () => {
  const d = new FrameDecoder("client");
  const a = enc.encode("x".repeat(3000));
  const b = enc.encode("y".repeat(200_000));
  const stream = new Uint8Array([
    ...encodeFrame(OP.text, a),
    ...encodeFrame(OP.text, b),
  ]);
  const first = d.push(stream.subarray(0, 5000));
  assert.equal(first.length, 1);
  assert.equal(
    first[0].kind === "text" && dec.decode(first[0].bytes),
    dec.decode(a),
  );
  const rest = d.push(stream.subarray(5000));
  assert.equal(rest.length, 1);
  assert.equal(rest[0].kind === "text" && rest[0].bytes.length, b.length);
  assert.ok(rest[0].kind === "text" && rest[0].bytes.every((x) => x === 0x79));
});
