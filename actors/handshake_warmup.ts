/**
 * {@link warmHandshake}: a peer's first handshake pays for every first use
 * on its path (V8 compiling each function on its first call, the schema
 * validators, WebCrypto's Ed25519 set-up, xstate resolving the connection
 * chart's transitions): 15–20 ms cold against about 2 ms warm on a shared
 * 2-core machine. One handshake run while the peer opens, between two
 * in-process connections over a pipe in memory, moves that cost out of the
 * first real connection (a driver's `connect`, a listener's first accept);
 * a dialer runs it, and a throwaway supervisor chart takes the events a
 * connection gives the real one, so both charts are warmed too.
 * Nothing touches the network or the peer's store: both ends use their own
 * {@link MemoryStore}, and the partner has a throwaway key.
 *
 * @module
 */

import { createActor } from "npm:xstate@^5.33.3";
import { Connection } from "./connection.ts";
import { Dialer } from "./dialer.ts";
import { supervisorMachine } from "./supervisor_machine.ts";
import { MemoryStore } from "../storage/memory_store.ts";
import type { Transport, TransportHandlers } from "../net/transport.ts";
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

/** One in-memory handshake between `signer` and a throwaway partner. */
async function handshakeInMemory(signer: Signer): Promise<void> {
  const stores = [new MemoryStore(), new MemoryStore()];
  try {
    const partner = await Signer.generate();
    const ends = [new PipeEnd(), new PipeEnd()];
    ends[0].other = ends[1];
    ends[1].other = ends[0];
    // Bounded: a warm-up that cannot finish gives up (and only costs time).
    const timeouts = { pingInterval: 0, handshake: 5_000, resume: 5_000 };
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
  actor.send({ type: "DEACTIVATED" });
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
