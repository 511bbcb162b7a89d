/**
 * The shared state of one conformance run: the runner's identity and ids,
 * the current connection to the peer under test, dialing it or accepting
 * its connections, and the teardown at the end.
 *
 * @module
 */

import { dial, type Transport } from "../net/transport.ts";
import { IdGenerator } from "../wire/id.ts";
import type { Signer } from "../wire/keys.ts";
import { createBye } from "../wire/messages.ts";
import type { PeerInfo } from "./report.ts";
import type { DriverHandle, PeerHello } from "./scenarios.ts";
import { ConformError } from "./conform_error.ts";
import type { ConformOptions } from "./runner.ts";
import type { SpawnedPeer } from "./spawn_peer.ts";
import { Wire } from "./wire.ts";
import { truncate } from "./line_text.ts";
import { errorText } from "../wire/error_text.ts";

/** How long a polite bye may take at the end of a connection. */
const TEARDOWN_MS = 1000;

/**
 * The default per scenario timeout, in ms.
 *
 * @example
 * ```ts
 * import { DEFAULT_TIMEOUT_MS } from "./session.ts";
 * console.log(DEFAULT_TIMEOUT_MS / 1000); // 5
 * ```
 */
export const DEFAULT_TIMEOUT_MS = 5000;

/** Shared state of a run: identity, ids, the current connection. */
export class Session {
  readonly mode: "dial" | "listen";
  readonly signer: Signer;
  readonly ids = new IdGenerator();
  readonly timeoutMs: number;
  readonly trace: ((line: string) => void) | undefined;
  readonly onPeer: ((peer: PeerInfo) => void) | undefined;
  wire: Wire | undefined;
  connections = 0;
  firstPeer: PeerInfo | undefined;
  driver: DriverHandle | undefined;
  #dialAddress: string | undefined;
  #caCerts: string[] | undefined;
  #accepted: Transport[] = [];
  #acceptWaiter: (() => void) | undefined;
  spawned: SpawnedPeer | undefined;

  constructor(
    mode: "dial" | "listen",
    signer: Signer,
    options: ConformOptions,
  ) {
    this.mode = mode;
    this.signer = signer;
    this.timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.trace = options.trace;
    this.onPeer = options.onPeer;
    this.#dialAddress = options.address;
    this.#caCerts = options.caCerts;
  }

  /** Listener callback: queues accepted connections. */
  accept(transport: Transport): void {
    this.#accepted.push(transport);
    const waiter = this.#acceptWaiter;
    this.#acceptWaiter = undefined;
    waiter?.();
  }

  #adopt(transport: Transport): Wire {
    this.connections++;
    this.trace?.(`#${this.connections} connected ${transport.remoteAddr}`);
    this.wire = new Wire(this.connections, transport, this.ids, this.trace);
    return this.wire;
  }

  /** Dial mode: a new connection. */
  async dialNew(): Promise<Wire> {
    try {
      return this.#adopt(
        await dial(this.#dialAddress!, {
          allowPublic: true,
          caCerts: this.#caCerts,
        }),
      );
    } catch (e) {
      throw new ConformError(errorText(e));
    }
  }

  /** Listen mode: the next connection the peer makes, by the deadline. */
  async acceptNext(deadline: number): Promise<Wire | undefined> {
    while (this.#accepted.length === 0) {
      const wait = deadline - Date.now();
      if (wait <= 0) return undefined;
      let timer: ReturnType<typeof setTimeout> | undefined;
      const exited = this.spawned?.exited;
      const outcome = await new Promise<"conn" | "timeout" | "exit">(
        (resolve) => {
          timer = setTimeout(() => resolve("timeout"), wait);
          this.#acceptWaiter = () => resolve("conn");
          exited?.then(() => resolve("exit"));
        },
      );
      clearTimeout(timer);
      this.#acceptWaiter = undefined;
      if (outcome === "exit" && this.#accepted.length === 0) {
        const status = await exited!;
        const tail = this.spawned!.stderrTail.at(-1);
        throw new ConformError(
          `the peer command exited (code ${status.code}) without connecting${
            tail ? `: ${truncate(tail, 200)}` : ""
          }`,
        );
      }
      if (outcome === "timeout") return undefined;
    }
    return this.#adopt(this.#accepted.shift()!);
  }

  /** Closes unclaimed connections (listen mode, at the end). */
  closeAccepted(): void {
    for (const t of this.#accepted.splice(0)) t.close();
  }

  notePeer(hello: PeerHello): void {
    if (this.firstPeer) return;
    this.firstPeer = { key: hello.key, v: hello.v, caps: hello.caps };
    if (hello.name !== undefined) this.firstPeer.name = hello.name;
    if (hello.about !== undefined) this.firstPeer.about = hello.about;
    this.onPeer?.(this.firstPeer);
  }

  /** Ends the current connection politely: bye if open, a short wait, close. */
  async teardown(): Promise<string[]> {
    const wire = this.wire;
    if (!wire) return [];
    this.wire = undefined;
    if (!wire.ended && wire.open && !wire.byeSent) {
      wire.byeSent = true;
      try {
        await wire.write(
          createBye({ id: this.ids.next(), reason: "conformance run over" }),
        );
        const deadline = Date.now() + Math.min(TEARDOWN_MS, this.timeoutMs);
        for (;;) {
          const event = await wire.take(deadline);
          if (!event || event.kind === "end") break;
          if (event.kind === "invalid") {
            wire.close();
            return [event.detail];
          }
        }
      } catch { /* closing anyway */ }
    }
    const invalid = wire.drainInvalid();
    wire.close();
    return invalid;
  }
}
