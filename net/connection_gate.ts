/**
 * Bounds on what strangers can make a listener hold: connections open at
 * once, and connections still in the handshake (hello/auth) in total and
 * per source address. A connection over a bound is closed as soon as it is
 * accepted, so its file descriptor comes back at once; the handshake
 * timeout (20 s by default) closes the ones that never finish.
 *
 * @module
 */

import { isPrivateHost } from "../wire/address.ts";
import { socketAddressText } from "./socket_text.ts";
import type { Transport, TransportHandlers, WriteDone } from "./transport.ts";

/** The bounds of one listener; see the README's "Limits" table.
 *
 * @example
 * ```ts
 * import type { ConnectionLimits } from "./connection_gate.ts";
 * const limits: ConnectionLimits = { maxConnections: 1000, maxUnauthenticated: 64 };
 * console.log(limits.maxConnections); // 1000
 * ```
 */
export interface ConnectionLimits {
  /** Accepted connections open at once (default {@linkcode DEFAULT_LIMITS}). */
  maxConnections?: number;
  /** Accepted connections still in hello/auth, in total. */
  maxUnauthenticated?: number;
  /** Accepted connections still in hello/auth from one source address. */
  maxUnauthenticatedPerHost?: number;
}

/** The default bounds: 16,384 open (less when the fd limit is lower), 512
 * in the handshake, 128 of them from one address.
 *
 * @example
 * ```ts
 * import { DEFAULT_LIMITS } from "./connection_gate.ts";
 * console.log(DEFAULT_LIMITS.maxUnauthenticatedPerHost); // 128
 * ```
 */
export const DEFAULT_LIMITS: Readonly<Required<ConnectionLimits>> = Object
  .freeze({
    maxConnections: 16_384,
    maxUnauthenticated: 512,
    maxUnauthenticatedPerHost: 128,
  });

/** File descriptors kept free for the store, files and dialing out. */
const FD_RESERVE = 128;

/** One admitted connection's place (both calls are idempotent). */
export interface GateTicket {
  /** The handshake verified: it leaves the pre-auth counts. */
  authenticated(): void;
  /** The connection ended: its place is free. */
  release(): void;
}

/**
 * Counts one listener's connections against {@link ConnectionLimits}.
 *
 * @example
 * ```ts
 * import { ConnectionGate } from "./connection_gate.ts";
 * const gate = new ConnectionGate({ maxUnauthenticatedPerHost: 1 });
 * const first = gate.admit("tcp:127.0.0.1:5000");
 * console.log(first !== undefined, gate.admit("tcp:127.0.0.1:5001")); // true undefined
 * first!.authenticated();
 * console.log(gate.admit("tcp:127.0.0.1:5002") !== undefined); // true
 * ```
 */
export class ConnectionGate {
  readonly #max: number;
  readonly #maxPending: number;
  readonly #maxPendingPerHost: number;
  #open = 0;
  #pending = 0;
  #pendingByHost = new Map<string, number>();
  /** Connections refused by a bound, since the start. */
  refused = 0;

  /** `fdLimit`: the process's soft fd limit, when known (caps the total). */
  constructor(limits: ConnectionLimits = {}, fdLimit?: number) {
    const wanted = limits.maxConnections ?? DEFAULT_LIMITS.maxConnections;
    this.#max = limits.maxConnections === undefined && fdLimit !== undefined
      ? Math.max(16, Math.min(wanted, fdLimit - FD_RESERVE))
      : wanted;
    this.#maxPending = limits.maxUnauthenticated ??
      DEFAULT_LIMITS.maxUnauthenticated;
    this.#maxPendingPerHost = limits.maxUnauthenticatedPerHost ??
      DEFAULT_LIMITS.maxUnauthenticatedPerHost;
  }

  /** Open connections now, and how many of them are in the handshake. */
  get counts(): { open: number; unauthenticated: number } {
    return { open: this.#open, unauthenticated: this.#pending };
  }

  /**
   * A place for a connection from `remoteAddr`, or undefined when a bound
   * is reached (close it).
   */
  admit(remoteAddr: string): GateTicket | undefined {
    const host = hostOf(remoteAddr);
    const fromHost = this.#pendingByHost.get(host) ?? 0;
    if (
      this.#open >= this.#max || this.#pending >= this.#maxPending ||
      fromHost >= this.#maxPendingPerHost
    ) {
      this.refused++;
      return undefined;
    }
    this.#open++;
    this.#pending++;
    this.#pendingByHost.set(host, fromHost + 1);
    return new ConnectionGate.#Ticket(this, host);
  }

  /** A ticket as an object, not closures (10,000 connections hold one each). */
  static #Ticket = class implements GateTicket {
    #gate: ConnectionGate | undefined;
    #host: string | undefined;

    constructor(gate: ConnectionGate, host: string) {
      this.#gate = gate;
      this.#host = host;
    }

    authenticated(): void {
      const host = this.#host;
      if (host === undefined) return;
      this.#host = undefined;
      const gate = this.#gate!;
      gate.#pending--;
      const left = (gate.#pendingByHost.get(host) ?? 1) - 1;
      if (left <= 0) gate.#pendingByHost.delete(host);
      else gate.#pendingByHost.set(host, left);
    }

    release(): void {
      if (this.#gate === undefined) return;
      this.authenticated();
      this.#gate.#open--;
      this.#gate = undefined;
    }
  };

  /**
   * {@link ConnectionGate.admit} for an accepted socket: a TCP peer from a
   * public address (unless `allowPublic`) or one over a bound is closed at
   * once, so its descriptor comes back, and gets no ticket.
   */
  admitSocket(conn: Deno.Conn, allowPublic: boolean): GateTicket | undefined {
    const remote = conn.remoteAddr;
    const ticket = !allowPublic && remote.transport === "tcp" &&
        !isPrivateHost(remote.hostname)
      ? undefined
      : this.admit(socketAddressText(remote));
    if (ticket === undefined) conn.close();
    return ticket;
  }

  /** Wraps `inner` so that its end releases its place. */
  wrap(inner: Transport, ticket: GateTicket): Transport {
    return new GatedTransport(inner, ticket);
  }
}

/** "tcp:1.2.3.4:5" → "tcp:1.2.3.4"; "tcp:[::1]:5" → "tcp:[::1]"; unix as is. */
function hostOf(addr: string): string {
  if (!addr.startsWith("tcp:")) return addr.split(":")[0];
  const cut = addr.lastIndexOf(":");
  return cut > 4 ? addr.slice(0, cut) : addr;
}

/**
 * The owner's handlers, passed on, and its gate place given back at the
 * end: one object, no copy of the owner's (which may be a class instance,
 * its methods on a prototype).
 */
class GatedHandlers implements TransportHandlers {
  readonly #owner: TransportHandlers;
  readonly #ticket: GateTicket;

  constructor(owner: TransportHandlers, ticket: GateTicket) {
    this.#owner = owner;
    this.#ticket = ticket;
  }

  onData(chunk: Uint8Array): void | Promise<void> {
    return this.#owner.onData(chunk);
  }

  onEnd(error?: Error): void {
    this.#ticket.release();
    this.#owner.onEnd(error);
  }

  onFrameError(
    code: "bad_frame" | "too_large",
    detail: string,
  ): void | Promise<void> {
    // As a binding does for an owner without one: end with the fault.
    if (!this.#owner.onFrameError) throw new Error(`WebSocket: ${detail}`);
    return this.#owner.onFrameError(code, detail);
  }
}

/** A transport that gives its gate place back when it ends. */
class GatedTransport implements Transport {
  readonly #inner: Transport;
  readonly #ticket: GateTicket;

  /**
   * The inner transport's `writeThen`, when it has one: absent otherwise,
   * so the writer decides how to write to it (`OutboxWriter`), as it does
   * for any transport without one.
   */
  readonly writeThen?: (
    frame: Uint8Array,
    done: WriteDone,
    tag: number,
  ) => void;

  constructor(inner: Transport, ticket: GateTicket) {
    this.#inner = inner;
    this.#ticket = ticket;
    if (inner.writeThen) this.writeThen = inner.writeThen.bind(inner);
  }

  get localAddr(): string {
    return this.#inner.localAddr;
  }

  get remoteAddr(): string {
    return this.#inner.remoteAddr;
  }

  get closed(): boolean {
    return this.#inner.closed;
  }

  start(handlers: TransportHandlers): void {
    this.#inner.start(new GatedHandlers(handlers, this.#ticket));
  }

  write(frame: Uint8Array): Promise<void> {
    return this.#inner.write(frame);
  }

  holdBursts(on: boolean): void {
    this.#inner.holdBursts?.(on);
  }

  cork(): void {
    this.#inner.cork?.();
  }

  uncork(): void {
    this.#inner.uncork?.();
  }

  flush(): Promise<void> {
    return this.#inner.flush();
  }

  close(): void {
    this.#ticket.release();
    this.#inner.close();
  }

  authenticated(): void {
    this.#ticket.authenticated();
  }
}
