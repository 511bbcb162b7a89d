/**
 * Micro-benchmark of line framing: {@linkcode LineReader} over 1 MiB of
 * mixed lines (short control lines, 100-byte msgs, 64 KiB chunk-sized
 * lines), pushed in 64 KiB reads as a socket would deliver them.
 *
 * @example
 * ```sh
 * deno bench -A bench/line_reader_bench.ts
 * ```
 *
 * @module
 */

import { LineReader } from "../wire/line_reader.ts";
import { encodeLine } from "../wire/frame.ts";

const MIB = 1024 * 1024;

/** 1 MiB (about) of mixed lines, as one byte stream. */
function mixedStream(): Uint8Array {
  const lines: Uint8Array[] = [];
  let size = 0;
  let i = 0;
  while (size < MIB) {
    let line: Uint8Array;
    if (i % 50 === 49) {
      // A chunk-sized line: 48 KiB of base64 is a 36 KiB binary chunk.
      line = encodeLine({
        t: "chunk",
        id: `c${i}`,
        data: "A".repeat(48 * 1024),
      });
    } else if (i % 3 === 0) {
      line = encodeLine({ t: "ack", id: `a${i}`, th: "t1", re: `m${i}` });
    } else {
      line = encodeLine({
        t: "msg",
        id: `m${i}`,
        th: "t1",
        parts: [{ k: "text", text: "x".repeat(100) }],
      });
    }
    lines.push(line);
    size += line.length;
    i++;
  }
  const out = new Uint8Array(size);
  let at = 0;
  for (const line of lines) {
    out.set(line, at);
    at += line.length;
  }
  return out;
}

const stream = mixedStream();

function splitInto(size: number): Uint8Array[] {
  const reads: Uint8Array[] = [];
  for (let at = 0; at < stream.length; at += size) {
    reads.push(stream.subarray(at, at + size));
  }
  return reads;
}

const reads64k = splitInto(64 * 1024);
const reads1k = splitInto(1024);

function run(reads: Uint8Array[]): number {
  const reader = new LineReader();
  let n = 0;
  for (const chunk of reads) n += reader.push(chunk).length;
  if (reader.buffered !== 0) throw new Error("stream did not end on a newline");
  return n;
}

Deno.bench({
  name: "LineReader: 1 MiB mixed lines, 64 KiB reads",
  group: "framing",
  baseline: true,
  fn() {
    run(reads64k);
  },
});

Deno.bench({
  name: "LineReader: 1 MiB mixed lines, 1 KiB reads",
  group: "framing",
  fn() {
    run(reads1k);
  },
});

Deno.bench({
  name: "encodeLine: 100-byte msg",
  group: "encode",
  fn() {
    encodeLine({
      t: "msg",
      id: "01J0000000000000000000000",
      ts: "2026-12-02T15:53:05.123Z",
      th: "t1",
      parts: [{ k: "text", text: "x".repeat(100) }],
    });
  },
});
