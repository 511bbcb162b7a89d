/**
 * The connecting side of the connection-level workloads, run as its own
 * process against a listening peer: plain {@link Connection}s over real
 * sockets, no Peer around them.
 *
 * Modes (`--mode`):
 * - `handshake`: `--count N` sequential connections (connect + hello + auth
 *   + resume until open), each closed before the next, after one untimed
 *   warm-up; prints `{"event":"handshakes","count","ms","samples":[ms...]}`
 *   (`ms`: the sum of the handshake times, closing excluded).
 * - `idle`: `--count N` connections with distinct keys, `--concurrency C`
 *   at a time, kept open, pinging as any dialer does (after 30 s idle);
 *   prints `{"event":"established","count","failed","ms","rssBefore",
 *   "rssAfter","firstError"?}`, then waits for `close` on
 *   stdin (or stdin's end) and prints `{"event":"closed"}`.
 * - `flood`: one connection, `--count N` msgs of 100 bytes in `--threads T`
 *   threads, sent as fast as accepted; `--inspect` attaches an xstate
 *   inspection hub to the connection actor. Prints `{"event":"flood",
 *   "count","ms","inspected"}` once every msg is acked.
 *
 * @example
 * ```sh
 * deno run -A --unstable-kv bench/conn_client.ts --addr tcp:127.0.0.1:7000 --mode handshake --count 100
 * ```
 *
 * @module
 */

import { Connection } from "../actors/connection.ts";
import { dial } from "../net/transport.ts";
import { MemoryStore } from "../storage/memory_store.ts";
import { Signer } from "../wire/keys.ts";
import { InspectionHub } from "../inspector/inspection_hub.ts";
import { readMemory } from "./proc_memory.ts";
import { errorText } from "../wire/error_text.ts";

function out(value: Record<string, unknown>): void {
  console.log(JSON.stringify(value));
}

function flag(name: string): string | undefined {
  const i = Deno.args.indexOf(`--${name}`);
  return i >= 0 ? Deno.args[i + 1] : undefined;
}

function intFlag(name: string, fallback: number): number {
  const text = flag(name);
  const n = text === undefined ? fallback : Number(text);
  if (!Number.isSafeInteger(n) || n < 1) {
    console.error(`conn_client: --${name} must be a positive integer`);
    Deno.exit(2);
  }
  return n;
}

const addr = flag("addr");
const mode = flag("mode");
if (!addr || !["handshake", "idle", "flood"].includes(mode ?? "")) {
  console.error(
    "usage: conn_client.ts --addr ADDR --mode handshake|idle|flood [--count N] [--concurrency C] [--threads T] [--inspect]",
  );
  Deno.exit(2);
}
const count = intFlag("count", 100);
// Idle connections ping as any dialer does (every 30 s idle: the listener
// only answers); elsewhere no pings, which would skew the timings.
const timeouts = mode === "idle" ? {} : { pingInterval: 0 };

async function open(
  signer: Signer,
  store: MemoryStore,
  extra: Partial<ConstructorParameters<typeof Connection>[0]> = {},
): Promise<Connection> {
  const conn = new Connection({
    transport: await dial(addr!),
    signer,
    store,
    dialed: true,
    name: "bench",
    timeouts,
    ...extra,
  });
  conn.start();
  try {
    await conn.established;
  } catch (error) {
    conn.close("handshake failed");
    throw error;
  }
  return conn;
}

if (mode === "handshake") {
  const signer = await Signer.generate();
  const store = new MemoryStore();
  const samples: number[] = [];
  // One untimed warm-up (first-use costs: JIT, WebCrypto set-up).
  for (let i = -1; i < count; i++) {
    const s = performance.now();
    const conn = await open(signer, store);
    if (i >= 0) samples.push(performance.now() - s);
    conn.close("bench: next handshake");
    await conn.closed;
  }
  const ms = samples.reduce((a, b) => a + b, 0);
  out({ event: "handshakes", count, ms, samples });
  store.close();
} else if (mode === "idle") {
  const concurrency = intFlag("concurrency", 64);
  const store = new MemoryStore();
  const signers = await Promise.all(
    Array.from({ length: count }, () => Signer.generate()),
  );
  const rssBefore = (await readMemory(Deno.pid))?.rssBytes ?? 0;
  const conns: Connection[] = [];
  let failed = 0;
  let firstError: string | undefined;
  let next = 0;
  const t0 = performance.now();
  const worker = async () => {
    while (next < count) {
      const signer = signers[next++];
      try {
        conns.push(await open(signer, store));
      } catch (error) {
        failed++;
        firstError ??= errorText(error);
        // After the first failures (e.g. the fd limit), stop trying.
        if (failed >= 20) next = count;
      }
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  const ms = performance.now() - t0;
  const rssAfter = (await readMemory(Deno.pid))?.rssBytes ?? 0;
  out({
    event: "established",
    count: conns.length,
    failed,
    ms,
    rssBefore,
    rssAfter,
    ...(firstError ? { firstError } : {}),
  });
  // Hold them until told (or stdin ends).
  const reader = Deno.stdin.readable.getReader();
  await reader.read().catch(() => {});
  reader.releaseLock();
  for (const c of conns) c.close("bench: done");
  await Promise.all(conns.map((c) => c.closed));
  out({ event: "closed" });
  store.close();
} else {
  const threads = intFlag("threads", 1);
  const inspected = Deno.args.includes("--inspect");
  const hub = inspected ? new InspectionHub() : undefined;
  const store = new MemoryStore();
  const signer = await Signer.generate();
  let acked = 0;
  let done!: () => void;
  const all = new Promise<void>((r) => done = r);
  const conn = await open(signer, store, {
    inspect: hub ? (e: unknown) => hub.observer.next?.(e as never) : undefined,
    onLine: (_c, dir, raw) => {
      // Acks are small; a substring test avoids parsing every line twice.
      if (dir === "in" && raw.includes('"t":"ack"') && ++acked >= count) done();
    },
  });
  const peer = conn.remote!.key;
  const text = "x".repeat(100);
  const t0 = performance.now();
  // Enqueue in batches of 100: each is one durable commit, sent at once.
  for (let i = 0; i < count; i += 100) {
    const n = Math.min(100, count - i);
    const entries = await store.enqueue(
      peer,
      Array.from({ length: n }, (_, k) => ({
        fields: {
          t: "msg",
          th: `th${(i + k) % threads}`,
          parts: [{ k: "text", text }],
        },
      })),
    );
    conn.sendEntries(entries);
  }
  const timer = setTimeout(() => {
    console.error(`conn_client: only ${acked}/${count} acks after 120 s`);
    Deno.exit(1);
  }, 120_000);
  await all;
  clearTimeout(timer);
  out({ event: "flood", count, ms: performance.now() - t0, inspected });
  conn.close("bench: done");
  await conn.closed;
  store.close();
}
