/**
 * Two {@link Connection}s talking over a real loopback TCP socket: for
 * tests of what runs on top of a connection (presence, mirror, resume and
 * replay) without a whole Peer. {@link establishedPair} starts two made by
 * the caller and waits for their handshake; {@link connectionPair} makes a
 * sender and a receiver over two stores and starts them.
 *
 * @module
 */

import { Connection, type ConnectionOptions } from "../../actors/connection.ts";
import type { Transport } from "../../net/transport.ts";
import type { Store } from "../../storage/store.ts";
import type { Signer } from "../../wire/keys.ts";
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

/** Options one side adds to its connection. */
export type SideOptions = Partial<
  Omit<ConnectionOptions, "transport" | "dialed" | "signer" | "store">
>;

/** A started sender and receiver, and how to end both. */
export interface ConnectionPair {
  sender: Connection;
  receiver: Connection;
  /** Closes both and the listener; resolves once all closed. */
  close(): Promise<void>;
}

/**
 * Starts a sender (dialing, store `a`, `signers[0]`) and a receiver
 * (accepting, store `b`, `signers[1]`) over TCP on loopback.
 *
 * @example
 * ```ts ignore
 * const { sender, close } = await connectionPair(a, b, signers);
 * await sender.established;
 * await close();
 * ```
 */
export async function connectionPair(
  a: Store,
  b: Store,
  signers: [Signer, Signer],
  options: { sender?: SideOptions; receiver?: SideOptions } = {},
): Promise<ConnectionPair> {
  const { listener, client, server } = await transportPair("tcp:127.0.0.1:0");
  listener.close();
  const make = (transport: Transport, dialed: boolean) =>
    new Connection({
      ...(dialed ? options.sender : options.receiver),
      transport,
      dialed,
      signer: signers[dialed ? 0 : 1],
      store: dialed ? a : b,
    });
  const sender = make(client, true);
  const receiver = make(server, false);
  sender.start();
  receiver.start();
  return {
    sender,
    receiver,
    async close() {
      sender.close("test over");
      receiver.close("test over");
      await Promise.all([sender.closed, receiver.closed, listener.done]);
    },
  };
}
