/**
 * The options every layer shares, declared once: what a peer says about
 * itself in hello, how its connections are bounded and timed, and the
 * hooks the layers above hear from each connection.
 *
 * `Peer.open` takes {@link PeerConfig} plus options of its own (peer/);
 * {@link Supervisor} takes it plus the routing it owns; each
 * {@link Connection} gets the supervisor's options as they are (callbacks
 * are passed down, not wrapped per layer).
 *
 * @module
 */

import type { ConnectionLimits } from "../net/connection_gate.ts";
import type { OutboxEntry, ReceiveExtras, Store } from "../storage/store.ts";
import type { Signer } from "../wire/keys.ts";
import type { Grant, Message } from "../wire/types.ts";
import type { Connection, ReceivedLine } from "./connection.ts";
import type { RemoteHello } from "./remote_hello.ts";
import type { ConnectionTimeouts } from "./connection_machine.ts";
import type { DialerTiming } from "./dialer_machine.ts";

/**
 * Who we are on the wire and how connections are bounded.
 *
 * @example
 * ```ts
 * import type { PeerConfig } from "./peer_config.ts";
 * const config: PeerConfig = { name: "alice", timeouts: { bye: 1_000 } };
 * console.log(config.name);
 * ```
 */
export interface PeerConfig {
  /** Our name in hello. */
  name?: string;
  /** Our about line in hello. */
  about?: string;
  /** Our caps in hello (a Peer defaults to chat, blob, grant, introduce). */
  caps?: string[];
  /**
   * Our reachable address sent as hello.addr (NOTES item 6), e.g. the
   * public `wss://host/awp` of a reverse proxy in front of a
   * `ws://127.0.0.1` listener. Default: the first listener's address.
   */
  addr?: string;
  /** Connection timeouts in ms (handshake, resume, bye, pingInterval). */
  timeouts?: Partial<ConnectionTimeouts>;
  /**
   * Per connection, bytes queued and not yet written to the socket (a
   * remote that does not read) before the connection is closed; default
   * 8 MiB. Outbox lines stay for the next connection.
   */
  maxUnsentBytes?: number;
  /** Reconnect backoff (and its random source, for tests). */
  dialer?: { timing?: Partial<DialerTiming>; random?: () => number };
  /** Allow plain TCP with public addresses (see net/transport.ts). */
  allowPublic?: boolean;
  /** WebSocket binding: extra CA certificates (PEM) trusted when dialing wss. */
  caCerts?: string[];
  /** WebSocket binding: certificate chain and key (PEM) for wss listeners. */
  tls?: { cert: string; key: string };
  /**
   * Bounds on accepted connections, per listener: open at once, and still
   * in hello/auth in total and per source address (README "Limits").
   */
  limits?: ConnectionLimits;
  /** Outbox retention for "open thread" in ms (7 days). */
  retentionMs?: number;
  /**
   * Return (or resolve with) a refusal detail to refuse a peer after its
   * auth verified (err auth + close, NOTES item 8); undefined admits it.
   */
  admit?(
    remote: RemoteHello,
    context: { dialed: boolean },
  ): string | undefined | Promise<string | undefined>;
}

/** What each connection needs from its owner to speak at all. */
export interface ConnectionWiring {
  /** Our identity: signs the auth transcript. */
  signer: Signer;
  /** Where seen ids, the outbox and received lines are committed. */
  store: Store;
  /**
   * Grants to present in auth: a list, or a function of the remote's hello
   * (its key is claimed, not yet verified) choosing what fits it.
   */
  grants?: Grant[] | ((remote: RemoteHello) => Grant[] | Promise<Grant[]>);
  /** Extension: keys of hosts we mirror to, sent as hello.shares. */
  shares?: string[] | (() => string[]);
}

/**
 * What the layers above hear from every connection, by the remote's key.
 * A connection calls these itself; the supervisor passes them on as given.
 */
export interface ConnectionHooks {
  /**
   * Awaited before received content lines are committed (so before they
   * count as seen): whatever must be durable first (a chunk's bytes) is
   * written here. Called with every line of the batch, duplicates too; a
   * throw closes the connection with `err internal`, nothing committed.
   */
  beforeCommit?(
    peer: string,
    conn: Connection,
    lines: ReceivedLine[],
  ): Promise<ReceiveExtras | void>;
  /**
   * True when a received line (besides a chunk, which always does) must pass
   * {@link beforeCommit} before it commits, with the lines of its thread
   * after it: a msg carrying a request, journaled before it is acked. Other
   * lines commit at once, without waiting for a chunk batch's sync.
   */
  needsBeforeCommit?(peer: string, message: Message): boolean;
  /**
   * A valid chunk line as it arrives, before its batch commits: its bytes
   * may be written now (then dropped from `line.bytes`); `beforeCommit`
   * still makes them durable. A returned promise holds reading until it
   * settles (the lines read so far are handed to the commit first).
   */
  onChunk?(
    peer: string,
    conn: Connection,
    line: ReceivedLine,
  ): Promise<void> | void;
  /** An ack of ours arrived; called once the store has dropped the entry. */
  onAck?(peer: string, ack: { re: string; th?: string }): void;
  /** The peer said bye (with its reason, if any). */
  onBye?(peer: string, reason?: string): void;
  /** An outboxed entry was just written to the socket (sent or replayed). */
  onSent?(peer: string, entry: OutboxEntry): void;
  /**
   * Every line, in and out, for the log or an inspector; `peer` is absent
   * before the remote's hello, `message` for a local note or an unparsable
   * line; `logged` for an outbox entry (the store logged it when queued).
   */
  onLine?(
    peer: string | undefined,
    dir: "in" | "out",
    raw: string,
    message?: Record<string, unknown>,
    logged?: boolean,
  ): void;
}
