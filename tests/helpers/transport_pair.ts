/**
 * Two connected transports over a real socket.
 *
 * @module
 */

import {
  dial,
  listen,
  type Listener,
  type Transport,
} from "../../net/transport.ts";

/** Both ends of one accepted connection and the listener that took it. */
export interface TransportPair {
  /** Still listening: the caller closes it. */
  listener: Listener;
  /** The dialing end. */
  client: Transport;
  /** The accepted end. */
  server: Transport;
}

/**
 * Listens on `address`, dials it, and resolves the first accepted transport.
 *
 * @example
 * ```ts ignore
 * const { listener, client, server } = await transportPair("tcp:127.0.0.1:0");
 * listener.close();
 * ```
 */
export async function transportPair(address: string): Promise<TransportPair> {
  let accepted!: (t: Transport) => void;
  const serverP = new Promise<Transport>((r) => accepted = r);
  const listener = await listen(address, (t) => accepted(t));
  const client = await dial(listener.addr);
  const server = await serverP;
  return { listener, client, server };
}
