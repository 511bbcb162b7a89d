/**
 * {@link ownHello}: the hello line a connection sends (SPEC 7.1), from the
 * peer's options: what the remote learns about us before auth.
 *
 * @module
 */

import type { ConnectionWiring, PeerConfig } from "./peer_config.ts";
import { randomNonce } from "../wire/keys.ts";
import { timestamp } from "../wire/time.ts";
import { PROTOCOL_VERSION } from "../wire/types.ts";

/** The options our hello is made from. */
export type OwnHelloOptions =
  & Pick<PeerConfig, "name" | "about" | "caps" | "addr">
  & Pick<ConnectionWiring, "signer" | "shares">;

/**
 * Our hello, with id `id` and a fresh 32-byte nonce: `caps` default to
 * `["chat"]`; `name`, `about`, `addr` and `shares` only when set.
 *
 * @example
 * ```ts
 * import { ownHello } from "./own_hello.ts";
 * import { Signer } from "../wire/keys.ts";
 * const hello = ownHello({ signer: await Signer.generate(), name: "bob" }, "01");
 * console.log(hello.t, hello.name, hello.caps); // "hello" "bob" ["chat"]
 * ```
 */
export function ownHello(
  o: OwnHelloOptions,
  id: string,
): Record<string, unknown> & { t: "hello" } {
  const hello: Record<string, unknown> & { t: "hello" } = {
    t: "hello",
    id,
    ts: timestamp(),
    v: PROTOCOL_VERSION,
    key: o.signer.key,
    nonce: randomNonce(32),
    caps: o.caps ?? ["chat"],
  };
  if (o.name !== undefined) hello.name = o.name;
  if (o.about !== undefined) hello.about = o.about;
  if (o.addr !== undefined) hello.addr = o.addr;
  const shares = typeof o.shares === "function" ? o.shares() : o.shares;
  if (shares && shares.length > 0) hello.shares = [...shares];
  return hello;
}
