/**
 * {@link warmHandshake}: a peer's first handshake pays for every first use
 * on its path (V8 compiling each function on its first call, the schema
 * validators, WebCrypto's Ed25519 set-up, xstate resolving the connection
 * chart's transitions): 15–20 ms cold against about 2 ms warm on a shared
 * 2-core machine. One handshake run while the peer opens, between two
 * in-process connections over a loopback TCP socket (made by the real
 * `listen` and `dial`; a pipe in memory when the peer may not use the
 * network), moves that cost out of the first real connection (a driver's
 * `connect`, a listener's first accept);
 * a dialer runs it, and a throwaway supervisor chart takes the events a
 * connection gives the real one, so both charts are warmed too.
 * Nothing touches the peer's store or reaches past 127.0.0.1: both ends use
 * their own {@link MemoryStore}, and the partner has a throwaway key.
 *
 * @module
 */

import { createActor } from "npm:xstate@^5.33.3";
import { Connection } from "./connection.ts";
import { Dialer } from "./dialer.ts";
import { supervisorMachine } from "./supervisor_machine.ts";
import { MemoryStore } from "../storage/memory_store.ts";
import {
  dial,
  listen,
  type Listener,
  type Transport,
  type TransportHandlers,
} from "../net/transport.ts";
import { Signer } from "../wire/keys.ts";

/** One end of a pipe in memory: what one writes, the other reads. */
class PipeEnd implements Transport {
  readonly localAddr = "warm-up";
  readonly remoteAddr = "warm-up";
  other: PipeEnd | undefined;
  #handlers: TransportHandlers | undefined;
  #closed = false;
  /** Reads are handed over one at a time, as a socket's read loop does. */
  #reading: Promise<void> = Promise.resolve();

  get closed(): boolean {
    return this.#closed;
  }

  start(handlers: TransportHandlers): void {
    this.#handlers = handlers;
  }

  write(frame: Uint8Array): Promise<void> {
    if (this.#closed) return Promise.reject(new Error("transport closed"));
    // Delivered on a later turn, as a socket would.
    const to = this.other;
    queueMicrotask(() => to?.receive(frame.slice()));
    return Promise.resolve();
  }

  /** Bytes the other end wrote. */
  receive(bytes: Uint8Array): void {
    this.#reading = this.#reading.then(async () => {
      if (!this.#closed) await this.#handlers?.onData(bytes);
    }).catch(() => this.close());
  }

  flush(): Promise<void> {
    return Promise.resolve();
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#handlers?.onEnd();
    this.other?.close();
  }
}

/** How long the loopback socket pair may take before the pipe is used. */
const LOOPBACK_MS = 1_000;

/**
 * Both ends of one loopback TCP connection, made by the real `listen` and
 * `dial` (so the accept loop, gate, socket transport, batched writer and
 * read loop are warm too), or undefined when the peer may not use the
 * network without asking (no prompt at open) or it fails. Only the socket
 * our own dial made is taken: anything else accepted meanwhile is closed.
 */
async function loopbackEnds(): Promise<
  { ends: [Transport, Transport]; close(): Promise<void> } | undefined
> {
  try {
    const net = Deno.permissions.querySync({ name: "net", host: "127.0.0.1" });
    if (net.state !== "granted") return undefined;
  } catch {
    return undefined;
  }
  const accepted: Transport[] = [];
  let take: ((t: Transport) => void) | undefined;
  let listener: Listener | undefined;
  try {
    listener = await listen("tcp:127.0.0.1:0", (t) => {
      if (take) take(t);
      else accepted.push(t);
    });
    const dialed = await dial(listener.addr);
    const ours = (t: Transport) => t.remoteAddr === dialed.localAddr;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const other = await new Promise<Transport | undefined>((resolve) => {
      take = (t) => ours(t) ? resolve(t) : t.close();
      for (const t of accepted.splice(0)) take(t);
      timer = setTimeout(() => resolve(undefined), LOOPBACK_MS);
    });
    clearTimeout(timer);
    take = (t) => t.close();
    const l = listener;
    const close = async () => {
      l.close();
      await l.done;
    };
    if (!other) {
      dialed.close();
      await close();
      return undefined;
    }
    return { ends: [dialed, other], close };
  } catch {
    listener?.close();
    await listener?.done;
    return undefined;
  }
}

/** Both ends of a pipe in memory. */
function pipeEnds(): [Transport, Transport] {
  const ends = [new PipeEnd(), new PipeEnd()];
  ends[0].other = ends[1];
  ends[1].other = ends[0];
  return [ends[0], ends[1]];
}

/**
 * One handshake between `signer` and a throwaway partner: over a loopback
 * socket when the peer may use the network, else over a pipe in memory.
 */
async function handshakeInMemory(signer: Signer): Promise<void> {
  const stores = [new MemoryStore(), new MemoryStore()];
  const loopback = await loopbackEnds();
  try {
    const partner = await Signer.generate();
    const ends = loopback?.ends ?? pipeEnds();
    // Bounded: a warm-up that cannot finish gives up (and only costs time).
    // Pinging on: entering `open` starts the ping timer, as a real one does.
    const timeouts = { pingInterval: 60_000, handshake: 5_000, resume: 5_000 };
    const conns = [
      new Connection({
        transport: ends[0],
        signer,
        store: stores[0],
        dialed: true,
        timeouts,
      }),
      new Connection({
        transport: ends[1],
        signer: partner,
        store: stores[1],
        dialed: false,
        timeouts,
      }),
    ];
    for (const c of conns) c.start();
    try {
      await Promise.all(conns.map((c) => c.established));
    } finally {
      for (const c of conns) c.close("warm-up done");
      await Promise.all(conns.map((c) => c.closed));
    }
  } finally {
    for (const s of stores) s.close();
    await loopback?.close();
  }
}

/** The supervisor chart's steps for one connection, on a throwaway actor. */
function walkSupervisorChart(): void {
  const conn = {};
  const actor = createActor(supervisorMachine, {
    input: {
      host: {
        activate() {},
        closeDuplicate() {},
        closeReplaced() {},
        refuse() {},
      },
    },
  }).start();
  actor.send({
    type: "AUTHENTICATED",
    peer: "warm-up",
    conn: { conn, dialedBy: "warm-up" },
    at: Date.now(),
    windowMs: 5_000,
  });
  actor.stop();
}

/**
 * Has a dialer run one handshake (hello, auth signed and verified, resume,
 * replay, open, close) between a connection speaking as `signer` and a
 * throwaway partner, in memory. Resolves once both ends closed: true when
 * the handshake opened; never rejects (a failed warm-up only leaves the
 * first real handshake slower).
 *
 * @example
 * ```ts
 * import { warmHandshake } from "./handshake_warmup.ts";
 * import { Signer } from "../wire/keys.ts";
 * console.log(await warmHandshake(await Signer.generate())); // true
 * ```
 */
export function warmHandshake(signer: Signer): Promise<boolean> {
  try {
    walkSupervisorChart();
  } catch { /* only slower */ }
  return new Promise((resolve) => {
    const dialer = new Dialer({
      peer: "warm-up",
      addresses: ["warm-up"],
      connect: () => handshakeInMemory(signer),
      shouldConnect: () => true,
      onChange: (state) => {
        if (state !== "connected" && state !== "backoff") return;
        queueMicrotask(() => dialer.stop());
        resolve(state === "connected");
      },
    });
    dialer.start();
    dialer.wake();
  });
}
