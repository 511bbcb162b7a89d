/**
 * Two real {@link Connection}s over a real TCP socket: the sender dials
 * (store `a`, first signer), the receiver accepts (store `b`, second).
 *
 * @module
 */

import { Connection, type ConnectionOptions } from "../../actors/connection.ts";
import type { Transport } from "../../net/transport.ts";
import type { Store } from "../../storage/store.ts";
import type { Signer } from "../../wire/keys.ts";
import { transportPair } from "./transport_pair.ts";

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
