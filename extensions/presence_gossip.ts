/**
 * Presence gossip (extension, NOTES.md "Presence gossip"): the table of the
 * newest document per origin, forwarding, the anti-entropy step on connect,
 * expiry, and publishing this agent's own document on a timer.
 *
 * Publishing timing is a small statechart ({@link presencePublisher}): a
 * change starts a fixed 2 s settle window (a burst becomes one document),
 * and with no change a heartbeat fires every 60 s. The heartbeat also
 * expires old documents, so it runs whether or not this node publishes.
 *
 * Presence never dials: it only writes to the links `peers()` returns, and
 * only to those that listed `presence` in their hello caps.
 *
 * @module
 */

import { type Actor, createActor, setup } from "npm:xstate@^5.33.3";
import type { Store } from "../storage/store.ts";
import type { Signer } from "../wire/keys.ts";
import { canonicalJson } from "../wire/canonical_json.ts";
import { timestamp } from "../wire/time.ts";
import type { Presence } from "../wire/types.ts";
import {
  extractDocText,
  nextPresenceSeq,
  PRESENCE_CAP,
  PRESENCE_FUTURE_MS,
  PRESENCE_MAX_AGE_MS,
  PRESENCE_MAX_HOPS,
  type PresenceDescription,
  type SignedPresence,
  signPresence,
  verifyPresence,
} from "../wire/presence.ts";

export type { PresenceDescription } from "../wire/presence.ts";

/** Meta name under which the last signed `seq` is persisted. */
export const PRESENCE_SEQ_META = "presence_seq";

/** A live connection as presence sees it (a `Connection` fits via {@link presenceLink}). */
export interface PresenceLink {
  /** The remote peer's key. */
  key: string;
  /** The caps of the remote's hello. */
  caps: readonly string[];
  /** Sends one non-outboxed line; `id` and `ts` are filled in by the link. */
  sendLine(message: Record<string, unknown>): void;
}

/** One stored document. */
export interface PresenceRecord {
  /** The key that signed the document. */
  origin: string;
  /** The document's seq (a newer one replaces it). */
  seq: number;
  /** The document's `ts`, ms. */
  time: number;
  /** `hops` of the line it arrived in. */
  hops: number;
  /** The peer it arrived from. */
  via: string;
  /** When it arrived, ms. */
  received: number;
  /** The document, parsed. */
  doc: Presence;
  /** The document exactly as received. */
  text: string;
}

/** What {@link PresenceGossip.onPresence} did with a line. */
export type PresenceOutcome = "stored" | "stale" | `dropped: ${string}`;

/** Something worth a log line: an origin appeared, was updated or left. */
export interface PresenceEvent {
  kind: "joined" | "updated" | "left" | "dropped" | "published";
  origin: string;
  name?: string;
  detail?: string;
}

/** Options of {@link PresenceGossip}. */
export interface PresenceGossipOptions {
  signer: Signer;
  /** Persists the last `seq` (meta `presence_seq`); only meta is used. */
  store: Pick<Store, "getMeta" | "setMeta">;
  /** Forward other agents' documents (default true). */
  relay?: boolean;
  /** Publish our own document (default false: opt-in). */
  publish?: boolean;
  maxHops?: number;
  publishDelayMs?: number;
  heartbeatMs?: number;
  maxAgeMs?: number;
  maxOrigins?: number;
  /** Clock, ms (default Date.now). */
  now?: () => number;
  /** Describes this agent for the next document. */
  describe?(): Promise<PresenceDescription> | PresenceDescription;
  /** The live connections. */
  peers(): Iterable<PresenceLink>;
  /** Log hook. */
  onEvent?(event: PresenceEvent): void;
}

/**
 * The publishing statechart: idle ⇄ pending. The chart is data; `tick`
 * (heartbeat: expire, publish if on) and `publish` are provided by
 * {@link PresenceGossip}. Delays `settle` and `heartbeat` come from input.
 *
 * @example
 * ```ts
 * import { createActor } from "npm:xstate@^5.33.3";
 * import { presencePublisher } from "./presence_gossip.ts";
 * const actor = createActor(presencePublisher, { input: { settleMs: 10, heartbeatMs: 1000 } });
 * actor.start();
 * actor.send({ type: "CHANGED" });
 * console.log(actor.getSnapshot().value); // "pending"
 * actor.stop();
 * ```
 */
export const presencePublisher = setup({
  types: {
    context: {} as { settleMs: number; heartbeatMs: number },
    input: {} as { settleMs: number; heartbeatMs: number },
    events: {} as { type: "CHANGED" },
  },
  actions: {
    publish: () => {},
    tick: () => {},
  },
  delays: {
    settle: ({ context }) => context.settleMs,
    heartbeat: ({ context }) => context.heartbeatMs,
  },
}).createMachine({
  id: "presencePublisher",
  context: ({ input }) => ({ ...input }),
  initial: "idle",
  states: {
    idle: {
      on: { CHANGED: "pending" },
      // Re-entering restarts the heartbeat timer.
      after: { heartbeat: { target: "idle", reenter: true, actions: "tick" } },
    },
    pending: {
      // Further changes fall into the same window: it is not reset.
      after: { settle: { target: "idle", actions: "publish" } },
    },
  },
});

/**
 * Wraps an open `Connection` (or anything with `remote` and `sendLine`) as
 * a {@link PresenceLink}; undefined before its auth completed.
 *
 * @example
 * ```ts
 * import { presenceLink } from "./presence_gossip.ts";
 * console.log(presenceLink({ remote: undefined, sendLine() {} })); // undefined
 * ```
 */
export function presenceLink(
  conn: {
    remote: { key: string; caps: string[] } | undefined;
    sendLine(message: Record<string, unknown>): void;
  },
): PresenceLink | undefined {
  const remote = conn.remote;
  if (!remote) return undefined;
  return {
    key: remote.key,
    caps: remote.caps,
    sendLine: (m) => conn.sendLine(m),
  };
}

function speaks(link: PresenceLink): boolean {
  return Array.isArray(link.caps) && link.caps.includes(PRESENCE_CAP);
}

/**
 * The presence table and its gossip. Feed it received `presence` lines with
 * {@link onPresence}, call {@link onConnected} when a connection opens and
 * {@link changed} when anything this agent describes changes.
 *
 * @example
 * ```ts
 * import { PresenceGossip } from "./presence_gossip.ts";
 * import { MemoryStore } from "../storage/memory_store.ts";
 * import { Signer } from "../wire/keys.ts";
 * const store = new MemoryStore();
 * const gossip = new PresenceGossip({ signer: await Signer.generate(), store, peers: () => [] });
 * const own = await gossip.publish();
 * console.log(own.doc.seq > 0, gossip.documents().length); // true 0
 * gossip.close();
 * store.close();
 * ```
 */
export class PresenceGossip {
  #o: PresenceGossipOptions;
  #relay: boolean;
  #publish: boolean;
  #maxHops: number;
  #maxAge: number;
  #maxOrigins: number;
  #heartbeatMs: number;
  #now: () => number;
  #table = new Map<string, PresenceRecord>();
  #own: SignedPresence | undefined;
  #seq: number | undefined;
  #seqChain: Promise<unknown> = Promise.resolve();
  #rxChain: Promise<unknown> = Promise.resolve();
  #lastDigest = "";
  #lastSent = -Infinity;
  #actor: Actor<typeof presencePublisher>;
  #closed = false;

  /** Starts the publishing statechart (heartbeat runs even when not publishing: it expires). */
  constructor(options: PresenceGossipOptions) {
    this.#o = options;
    this.#relay = options.relay ?? true;
    this.#publish = options.publish ?? false;
    this.#maxHops = options.maxHops ?? PRESENCE_MAX_HOPS;
    this.#maxAge = options.maxAgeMs ?? PRESENCE_MAX_AGE_MS;
    this.#maxOrigins = options.maxOrigins ?? 1000;
    this.#heartbeatMs = options.heartbeatMs ?? 60_000;
    this.#now = options.now ?? Date.now;
    const machine = presencePublisher.provide({
      actions: {
        publish: () => void this.#timed(false),
        tick: () => void this.#timed(true),
      },
    });
    this.#actor = createActor(machine, {
      input: {
        settleMs: options.publishDelayMs ?? 2000,
        heartbeatMs: this.#heartbeatMs,
      },
    });
    this.#actor.start();
  }

  /** Whether this node publishes its own document. */
  get publishing(): boolean {
    return this.#publish;
  }

  /** Whether this node forwards other agents' documents. */
  get relaying(): boolean {
    return this.#relay;
  }

  /** Our last signed document, if any. */
  get own(): SignedPresence | undefined {
    return this.#own;
  }

  /** The publisher's state ("idle" or "pending"), for inspection. */
  get state(): string {
    return String(this.#actor.getSnapshot().value);
  }

  /** Turns publishing on or off at run time; on publishes soon. */
  setPublish(on: boolean): void {
    this.#publish = on;
    if (on) this.changed();
  }

  /** Turns relaying on or off at run time. */
  setRelay(on: boolean): void {
    this.#relay = on;
  }

  /** Something this agent describes changed: publish after the settle delay. */
  changed(): void {
    if (this.#publish && !this.#closed) this.#actor.send({ type: "CHANGED" });
  }

  /**
   * Signs and sends our document now, to every connected peer that speaks
   * presence (hops 0), describing `description` or else `describe()`.
   * Used by the timer; callable directly (`--presence` at start, tests).
   * Throws PresenceError if the document is too large.
   */
  async publish(description?: PresenceDescription): Promise<SignedPresence> {
    description ??= await this.#o.describe?.() ?? {};
    const seq = await this.#nextSeq();
    const signed = await signPresence(this.#o.signer, description, {
      seq,
      ts: timestamp(this.#now()),
    });
    this.#own = signed;
    this.#lastDigest = canonicalJson(description);
    this.#lastSent = this.#now();
    for (const link of this.#o.peers()) {
      if (speaks(link)) this.#send(link, signed.doc, 0);
    }
    this.#o.onEvent?.({
      kind: "published",
      origin: signed.doc.origin,
      name: signed.doc.name,
    });
    return signed;
  }

  /**
   * Handles a received `presence` line from `from`: verifies, stores if
   * newer, forwards. `raw` is the line's exact text, so the document is
   * kept (and forwarded) byte for byte. Never throws: a forged, malformed
   * or oversized document is dropped.
   */
  onPresence(
    from: string,
    message: Record<string, unknown>,
    raw?: string,
  ): Promise<PresenceOutcome> {
    // One at a time: documents are stored and forwarded in arrival order.
    const next = this.#rxChain.then(() => this.#receive(from, message, raw));
    this.#rxChain = next.catch(() => {});
    return next;
  }

  async #receive(
    from: string,
    message: Record<string, unknown>,
    raw?: string,
  ): Promise<PresenceOutcome> {
    const drop = (reason: string): PresenceOutcome => {
      this.#o.onEvent?.({ kind: "dropped", origin: from, detail: reason });
      return `dropped: ${reason}`;
    };
    if (this.#closed) return drop("closed");
    const hops = message.hops;
    if (typeof hops !== "number" || !Number.isSafeInteger(hops) || hops < 0) {
      return drop("hops is not a non-negative integer");
    }
    if (message.doc === null || typeof message.doc !== "object") {
      return drop("no document");
    }
    const text = raw === undefined ? undefined : extractDocText(raw);
    const verdict = await verifyPresence(text ?? message.doc);
    if (!verdict.ok) return drop(verdict.reason);
    const { doc, time } = verdict;
    if (doc.origin === this.#o.signer.key) return drop("our own document");
    const now = this.#now();
    if (now - time > this.#maxAge) return drop("older than the maximum age");
    if (time - now > PRESENCE_FUTURE_MS) return drop("stamped in the future");
    const known = this.#table.get(doc.origin);
    if (known && known.seq >= doc.seq) return "stale";
    this.#table.set(doc.origin, {
      origin: doc.origin,
      seq: doc.seq,
      time,
      hops,
      via: from,
      received: now,
      doc,
      text: verdict.text,
    });
    this.#o.onEvent?.({
      kind: known ? "updated" : "joined",
      origin: doc.origin,
      name: doc.name,
    });
    if (!known) this.#trim();
    if (this.#relay && hops + 1 < this.#maxHops) {
      for (const link of this.#o.peers()) {
        if (link.key === from || link.key === doc.origin || !speaks(link)) {
          continue;
        }
        this.#send(link, doc, hops + 1);
      }
    }
    return "stored";
  }

  /**
   * The anti-entropy step for a newly opened connection: our own document
   * (if publishing) and, when relaying, the newest one we hold per origin.
   */
  onConnected(link: PresenceLink): void {
    if (this.#closed || !speaks(link)) return;
    this.expire();
    if (this.#publish && this.#own) this.#send(link, this.#own.doc, 0);
    if (this.#relay) {
      for (const r of this.#table.values()) {
        if (r.origin === link.key || r.hops + 1 >= this.#maxHops) continue;
        this.#send(link, r.doc, r.hops + 1);
      }
    }
    // Our peers changed (one more is up): describe it soon.
    this.changed();
  }

  /** The stored documents, newest `ts` first (expired ones are forgotten first). */
  documents(): PresenceRecord[] {
    this.expire();
    return [...this.#table.values()].sort((a, b) => b.time - a.time);
  }

  /** The stored document of one origin, if fresh. */
  document(origin: string): PresenceRecord | undefined {
    this.expire();
    return this.#table.get(origin);
  }

  /** Forgets documents older than the maximum age; returns their origins. */
  expire(): string[] {
    const cutoff = this.#now() - this.#maxAge;
    const gone: string[] = [];
    for (const [origin, r] of this.#table) {
      if (r.time < cutoff) {
        this.#table.delete(origin);
        gone.push(origin);
        this.#o.onEvent?.({ kind: "left", origin, name: r.doc.name });
      }
    }
    return gone;
  }

  /** Stops the timers. Idempotent. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#actor.stop();
  }

  #send(link: PresenceLink, doc: Presence, hops: number): void {
    try {
      link.sendLine({ t: PRESENCE_CAP, doc, hops });
    } catch {
      // A link that closed under us: presence is best effort.
    }
  }

  /** Keeps at most maxOrigins, dropping the least recent by `ts`. */
  #trim(): void {
    if (this.#table.size <= this.#maxOrigins) return;
    const byAge = [...this.#table.values()].sort((a, b) => a.time - b.time);
    for (const r of byAge.slice(0, this.#table.size - this.#maxOrigins)) {
      this.#table.delete(r.origin);
    }
  }

  #nextSeq(): Promise<number> {
    const next = this.#seqChain.then(async () => {
      if (this.#seq === undefined) {
        const saved = await this.#o.store.getMeta<number>(PRESENCE_SEQ_META);
        this.#seq = typeof saved === "number" ? saved : 0;
      }
      const seq = nextPresenceSeq(this.#seq, this.#now());
      // Persisted before use, so no later document can reuse it.
      await this.#o.store.setMeta(PRESENCE_SEQ_META, seq);
      this.#seq = seq;
      return seq;
    });
    this.#seqChain = next.catch(() => {});
    return next;
  }

  /** Timer path: skips when nobody listens or nothing changed since a recent send. */
  async #timed(heartbeat: boolean): Promise<void> {
    if (this.#closed) return;
    if (heartbeat) this.expire();
    if (!this.#publish) return;
    if (![...this.#o.peers()].some(speaks)) return;
    try {
      const description = await this.#o.describe?.() ?? {};
      const window = this.#heartbeatMs - Math.min(1000, this.#heartbeatMs / 10);
      const recent = this.#now() - this.#lastSent < window;
      if (canonicalJson(description) === this.#lastDigest && recent) return;
      if (this.#closed) return;
      await this.publish(description);
    } catch (error) {
      this.#o.onEvent?.({
        kind: "dropped",
        origin: this.#o.signer.key,
        detail: `publish failed: ${(error as Error).message}`,
      });
    }
  }
}
