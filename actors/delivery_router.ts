/**
 * Where the supervisor hands each delivered line: to the handler that owns
 * it (a thread by `th`, a blob by `ref`, grant, introduce, the extensions,
 * err), one connection's lines in order even when handlers are async, a
 * throwing handler contained.
 *
 * @module
 */

import type { Connection } from "./connection.ts";
import type { Message } from "../wire/types.ts";
import { SerialQueue } from "./serial_queue.ts";

/** One delivered line and where it came from. */
export interface Delivery {
  /** The remote peer's key. */
  peer: string;
  /** The parsed, schema-valid line. */
  message: Message;
  /** The line exactly as received. */
  raw: string;
  /** The connection it came on (to answer on). */
  connection: Connection;
  /**
   * The traffic-log position the line was committed under (committed
   * content lines, when the store reports one; absent for control lines).
   */
  seq?: number;
}

/** Handles delivered lines; may be async (awaited in order per connection). */
export type DeliveryHandler = (delivery: Delivery) => void | Promise<void>;

/**
 * Where delivered lines go. `thread` and `blob` are registries: asked once
 * per (peer, th) or (peer, ref) for the handler that owns it, which is then
 * cached until {@link DeliveryRouter.forgetThread} (blob handlers are dropped
 * after the chunk with `last: true`).
 */
export interface Routes {
  /** msg and state, by `th`. */
  thread?(peer: string, th: string): DeliveryHandler | undefined;
  /** chunk, by `ref`. */
  blob?(peer: string, ref: string): DeliveryHandler | undefined;
  /** grant lines. */
  grant?: DeliveryHandler;
  /** introduce lines. */
  introduce?: DeliveryHandler;
  /** presence lines (extension). */
  presence?: DeliveryHandler;
  /** mirror lines (extension). */
  mirror?: DeliveryHandler;
  /** private lines (extension). */
  private?: DeliveryHandler;
  /** err lines from the peer. */
  err?: DeliveryHandler;
  /** Anything without a route above. */
  other?: DeliveryHandler;
}

/**
 * Routes delivered lines to {@link Routes}, caching the thread and blob
 * handlers it was given.
 *
 * @example
 * ```ts
 * import { DeliveryRouter } from "./delivery_router.ts";
 * const router = new DeliveryRouter({ other: (d) => console.log(d.message.t) }, () => {});
 * router.forgetThread("ed25519:...", "t1");
 * ```
 */
export class DeliveryRouter {
  #routes: Routes;
  #onError: (peer: string, t: string, error: unknown) => void;
  #threadHandlers = new Map<string, DeliveryHandler>();
  #blobHandlers = new Map<string, DeliveryHandler>();
  /** Each connection's deliveries, in order (gone with the connection). */
  #queues = new WeakMap<Connection, SerialQueue>();

  /** `onError` hears of a handler (or a registry) that threw. */
  constructor(
    routes: Routes,
    onError: (peer: string, t: string, error: unknown) => void,
  ) {
    this.#routes = routes;
    this.#onError = onError;
  }

  /** Forgets a cached thread handler (e.g. when the thread ends). */
  forgetThread(peer: string, th: string): void {
    this.#threadHandlers.delete(`${peer} ${th}`);
  }

  /** Routes one line to the handler that owns it; failures are contained. */
  route(
    conn: Connection,
    message: Message,
    raw: string,
    seq?: number,
  ): void {
    const peer = conn.remote?.key;
    if (!peer) return;
    const routes = this.#routes;
    let handler: DeliveryHandler | undefined;
    try {
      handler = this.#handlerFor(routes, peer, message);
    } catch (error) {
      this.#onError(peer, message.t, error);
      return;
    }
    if (!handler) return;
    const delivery: Delivery = {
      peer,
      message,
      raw,
      connection: conn,
      ...(seq !== undefined ? { seq } : {}),
    };
    let queue = this.#queues.get(conn);
    if (!queue) this.#queues.set(conn, queue = new SerialQueue());
    // In order per connection, even when handlers are async.
    void queue.push(async () => {
      try {
        await handler(delivery);
      } catch (error) {
        this.#onError(peer, message.t, error);
      }
    });
  }

  #handlerFor(
    routes: Routes,
    peer: string,
    message: Message,
  ): DeliveryHandler | undefined {
    const m = message as Message & {
      th?: string;
      ref?: string;
      last?: boolean;
    };
    switch (message.t) {
      case "msg":
      case "state": {
        const key = `${peer} ${m.th}`;
        let h = this.#threadHandlers.get(key);
        if (!h && routes.thread) {
          h = routes.thread(peer, m.th!);
          if (h) this.#threadHandlers.set(key, h);
        }
        return h ?? routes.other;
      }
      case "chunk": {
        const key = `${peer} ${m.ref}`;
        let h = this.#blobHandlers.get(key);
        if (!h && routes.blob) {
          h = routes.blob(peer, m.ref!);
          if (h) this.#blobHandlers.set(key, h);
        }
        if (m.last === true) this.#blobHandlers.delete(key);
        return h ?? routes.other;
      }
      case "grant":
      case "introduce":
      case "presence":
      case "mirror":
      case "private":
      case "err":
        return routes[message.t] ?? routes.other;
      default:
        return routes.other;
    }
  }
}
