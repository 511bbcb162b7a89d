/**
 * Collects a {@link Peer}'s events so a test can wait for conditions on them.
 *
 * @module
 */

import type { Peer } from "../../peer/peer.ts";
import type { PeerEvent, PeerMessageEvent } from "../../peer/peer_events.ts";

/**
 * Every event of one peer, in order, from its construction on.
 *
 * @example
 * ```ts ignore
 * const log = new EventLog(await Peer.open({ home, name: "a" }));
 * await log.until(() => log.messages().length > 0, "a message");
 * ```
 */
export class EventLog {
  /** The events seen so far. */
  readonly list: PeerEvent[] = [];
  /** Settles when the peer's event stream ends. */
  readonly done: Promise<void>;
  #defaultMs: number;

  /** Starts reading `peer.events()`; `until` waits `defaultMs` by default. */
  constructor(peer: Peer, defaultMs = 10_000) {
    this.#defaultMs = defaultMs;
    const it = peer.events();
    this.done = (async () => {
      for await (const e of it) this.list.push(e);
    })();
  }

  /** The events of one type. */
  of<T extends PeerEvent["type"]>(type: T): Extract<PeerEvent, { type: T }>[] {
    return this.list.filter((e) => e.type === type) as Extract<
      PeerEvent,
      { type: T }
    >[];
  }

  /** The message events. */
  messages(): PeerMessageEvent[] {
    return this.of("message");
  }

  /** Polls `check` until true; fails after `ms`, naming `what`. */
  async until(
    check: () => boolean,
    what: string,
    ms = this.#defaultMs,
  ): Promise<void> {
    const start = Date.now();
    while (!check()) {
      if (Date.now() - start > ms) {
        throw new Error(
          `timed out waiting for ${what}; events: ${
            this.list.map((e) => e.type).join(",")
          }`,
        );
      }
      await new Promise((r) => setTimeout(r, 10));
    }
  }

  /** Polls `find` until it returns something; fails after `ms`, naming `what`. */
  async find<T>(
    find: () => T | undefined | false,
    what: string,
    ms = this.#defaultMs,
  ): Promise<T> {
    let found: T | undefined | false;
    await this.until(() => Boolean(found = find()), what, ms);
    return found as T;
  }
}
