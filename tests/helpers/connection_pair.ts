/**
 * Two {@link Connection}s talking over a real loopback TCP socket, started
 * and past their handshake: for tests of what runs on top of a connection
 * (presence, mirror) without a whole Peer.
 *
 * @module
 */

import type { Connection } from "../../actors/connection.ts";
import type { Transport } from "../../net/transport.ts";
import { transportPair } from "./transport_pair.ts";

/**
 * Makes the dialing side with `dialing` and the accepting side with
 * `accepting` over a fresh TCP transport pair, starts both and resolves
 * once both are established.
 *
 * @example
 * ```ts ignore
 * const [ca, cb] = await establishedPair(
 *   (t) => connection(a, t, true),
 *   (t) => connection(b, t, false),
 * );
 * ```
 */
export async function establishedPair(
  dialing: (transport: Transport) => Connection,
  accepting: (transport: Transport) => Connection,
): Promise<[Connection, Connection]> {
  const { listener, client, server } = await transportPair("tcp:127.0.0.1:0");
  listener.close();
  const ca = dialing(client);
  const cb = accepting(server);
  ca.start();
  cb.start();
  await Promise.all([ca.established, cb.established]);
  return [ca, cb];
}
