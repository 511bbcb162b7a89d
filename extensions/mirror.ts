/**
 * Conversation sharing (extension, NOTES.md "Conversation sharing").
 *
 * - {@link MirrorSharer}, on the sharing agent: copies every msg and state
 *   line of its threads, both directions, to each host as a reliable
 *   `mirror` line (outboxed with `store.enqueue`, acked, replayed on
 *   resume); keeps private threads out; withdraws them from the hosts.
 * - {@link MirrorHost}, on a host: keeps mirrored lines apart from its own
 *   conversations (store meta under `mirrored:`), deduplicated by the
 *   original line's id, and deletes a thread on withdraw.
 *
 * The mirror's `line` is the original line as a parsed object; the
 * connection serializes it with `JSON.stringify`, which gives back the
 * received text whenever that text was itself in that form (every line this
 * package writes is).
 *
 * @module
 */

import type { OutboxEntry, Store, ThreadRecord } from "../storage/store.ts";
import { isKey } from "../wire/keys.ts";

/** The parts of a {@link Store} the sharer uses. */
export type SharerStore = Pick<
  Store,
  "enqueue" | "thread" | "peer" | "getMeta" | "setMeta"
>;

/** The parts of a {@link Store} the host uses. */
export type HostStore = Pick<Store, "getMeta" | "setMeta">;

/** Meta name of the remembered host list. */
export const SHARE_WITH_META = "share_with";

/** A msg or state line, parsed. */
export type MirrorableLine = Record<string, unknown> & { t: string };

/** Options of {@link MirrorSharer}. */
export interface MirrorSharerOptions {
  store: SharerStore;
  /** Keys of the hosts to mirror to (see {@link MirrorSharer.savedHosts}). */
  hosts?: readonly string[];
  /** Our own key: sharing with ourselves is refused. */
  self?: string;
  /** Called once entries are durable, to send them now on a live connection. */
  deliver?(peer: string, entries: OutboxEntry[]): void;
}

/** What {@link MirrorSharer.markPrivate} queued. */
export interface PrivateResult {
  /** The `private` line to the other party. */
  private: OutboxEntry;
  /** One withdraw per host. */
  withdraws: OutboxEntry[];
}

function privateName(peer: string, th: string): string {
  return `private:${JSON.stringify([peer, th])}`;
}

function checkHosts(hosts: readonly string[], self?: string): string[] {
  const clean: string[] = [];
  for (const raw of hosts) {
    const key = raw.trim();
    if (key === "") continue;
    if (!isKey(key)) {
      throw new TypeError(
        `share with ${JSON.stringify(raw)}: not an ed25519 key`,
      );
    }
    if (key === self) {
      throw new TypeError(
        "an agent cannot share its conversations with itself",
      );
    }
    if (!clean.includes(key)) clean.push(key);
  }
  return clean;
}

/**
 * The sharing side. Call {@link onLine} for every msg/state line of a
 * thread, sent or received (after it is committed), {@link onPrivate} when
 * the other party sends `private`, and {@link markPrivate} for our own
 * `private TH`. Operations run one at a time, so mirrors keep line order.
 *
 * @example
 * ```ts
 * import { MirrorSharer } from "./mirror.ts";
 * import { MemoryStore } from "../storage/memory_store.ts";
 * const store = new MemoryStore();
 * const host = "ed25519:" + "A".repeat(43);
 * const peer = "ed25519:" + "B".repeat(42) + "A";
 * const sharer = new MirrorSharer({ store, hosts: [host] });
 * const line = { t: "msg", id: "01J0000000000000000000000A", ts: "2026-01-01T00:00:00Z", th: "t1", parts: [] };
 * const queued = await sharer.onLine(peer, "in", line);
 * console.log(queued[0].fields.t, (await store.outbox(host)).length); // mirror 1
 * store.close();
 * ```
 */
export class MirrorSharer {
  #store: SharerStore;
  #hosts: string[];
  #self: string | undefined;
  #deliver: MirrorSharerOptions["deliver"];
  #chain: Promise<unknown> = Promise.resolve();

  /** Throws a one-line TypeError on a bad host key. */
  constructor(options: MirrorSharerOptions) {
    this.#store = options.store;
    this.#self = options.self;
    this.#hosts = checkHosts(options.hosts ?? [], options.self);
    this.#deliver = options.deliver;
  }

  /** The host list remembered by {@link setHosts} (empty if none). */
  static async savedHosts(store: HostStore): Promise<string[]> {
    const saved = await store.getMeta<string[]>(SHARE_WITH_META);
    return Array.isArray(saved) ? saved.filter((k) => isKey(k)) : [];
  }

  /** The hosts mirrored to (for hello and presence `shares`). */
  get hosts(): string[] {
    return [...this.#hosts];
  }

  /** Replaces the host list (empty stops sharing) and remembers it. */
  setHosts(hosts: readonly string[]): Promise<void> {
    const clean = checkHosts(hosts, this.#self);
    return this.#serial(async () => {
      await this.#store.setMeta(SHARE_WITH_META, clean);
      this.#hosts = clean;
    });
  }

  /** Whether the thread `th` with `peer` is kept out of sharing. */
  isPrivate(peer: string, th: string): Promise<boolean> {
    return this.#store.getMeta<number>(privateName(peer, th)).then((v) =>
      v !== undefined
    );
  }

  /**
   * Queues a mirror of one msg or state line of the thread with `peer` to
   * every host but `peer` itself, unless the thread is private. `dir` is
   * "out" for a line we sent, "in" for one we received; `line` is the
   * line's text or parsed object; `thread` (if known) gives the subject.
   * Resolves with the queued entries (other line types: none).
   */
  onLine(
    peer: string,
    dir: "in" | "out",
    line: string | MirrorableLine,
    thread?: ThreadRecord,
  ): Promise<OutboxEntry[]> {
    let parsed: MirrorableLine;
    try {
      parsed = typeof line === "string" ? JSON.parse(line) : line;
    } catch {
      return Promise.reject(new TypeError("mirror: line is not JSON"));
    }
    const th = parsed?.th;
    if (
      (parsed?.t !== "msg" && parsed?.t !== "state") ||
      typeof th !== "string" || typeof parsed.id !== "string"
    ) return Promise.resolve([]);
    return this.#serial(async () => {
      const hosts = this.#hosts.filter((h) => h !== peer);
      if (hosts.length === 0 || await this.isPrivate(peer, th)) return [];
      const record = thread ?? await this.#store.thread(peer, th);
      const subject = record?.subject ??
        (typeof parsed.subject === "string" ? parsed.subject : undefined);
      const ofName = (await this.#store.peer(peer))?.name;
      const fields = {
        t: "mirror",
        th,
        of: peer,
        ...(ofName ? { of_name: ofName } : {}),
        ...(subject ? { subject } : {}),
        dir,
        line: parsed,
      };
      return await this.#queue(hosts, () => ({ ...fields }));
    });
  }

  /**
   * The other party asked to keep `th` private: remember it and, the first
   * time, send each host a withdraw. Resolves with the withdraws queued.
   */
  onPrivate(peer: string, th: string): Promise<OutboxEntry[]> {
    return this.#serial(async () => {
      if (await this.isPrivate(peer, th)) return [];
      await this.#store.setMeta(privateName(peer, th), Date.now());
      return await this.#withdraw(peer, th);
    });
  }

  /**
   * Our own `private TH`: remember it, withdraw it from every host, and
   * ask `peer` to do the same with a reliable `private` line.
   */
  markPrivate(peer: string, th: string): Promise<PrivateResult> {
    if (typeof th !== "string" || th === "") {
      return Promise.reject(new TypeError("private: a thread id is required"));
    }
    return this.#serial(async () => {
      await this.#store.setMeta(privateName(peer, th), Date.now());
      const withdraws = await this.#withdraw(peer, th);
      const [entry] = await this.#store.enqueue(peer, [{
        fields: { t: "private", th },
      }]);
      this.#deliver?.(peer, [entry]);
      return { private: entry, withdraws };
    });
  }

  #withdraw(peer: string, th: string): Promise<OutboxEntry[]> {
    const hosts = this.#hosts.filter((h) => h !== peer);
    return this.#queue(
      hosts,
      () => ({ t: "mirror", th, of: peer, withdraw: true }),
    );
  }

  async #queue(
    hosts: string[],
    fields: () => Record<string, unknown> & { t: string; th: string },
  ): Promise<OutboxEntry[]> {
    const queued = await Promise.all(
      hosts.map((host) => this.#store.enqueue(host, [{ fields: fields() }])),
    );
    for (let i = 0; i < hosts.length; i++) {
      this.#deliver?.(hosts[i], queued[i]);
    }
    return queued.flat();
  }

  #serial<T>(work: () => Promise<T>): Promise<T> {
    const next = this.#chain.then(work);
    this.#chain = next.catch(() => {});
    return next;
  }
}

/** A thread another agent mirrors to this host. */
export interface MirroredThread {
  /** The agent that mirrors it. */
  sharer: string;
  /** The other party of the thread. */
  of: string;
  /** The other party's name, when known. */
  of_name?: string;
  /** The thread's id. */
  th: string;
  /** The thread's subject, when known. */
  subject?: string;
  /** Lines held. */
  count: number;
  /** Next line number. */
  next: number;
  /** Last change, ms. */
  updated: number;
}

/** One mirrored line. */
export interface MirroredLine {
  /** The agent that mirrors it. */
  sharer: string;
  /** The other party of the thread. */
  of: string;
  /** The thread's id. */
  th: string;
  /** Position in the thread, as received. */
  n: number;
  /** "out": the sharer wrote it; "in": the other party did. */
  dir: "in" | "out";
  /** Who wrote it. */
  from: string;
  /** The original line's id. */
  id: string;
  /** The original line's type. */
  t: string;
  /** The original line. */
  line: Record<string, unknown>;
  /** Received, ms. */
  at: number;
}

/** What {@link MirrorHost.onMirror} did. */
export type MirrorOutcome =
  | "stored"
  | "duplicate"
  | "withdrawn"
  | `ignored: ${string}`;

type ThreadRef = [sharer: string, of: string, th: string];

const INDEX = "mirrored:index";
const tref = (r: ThreadRef) => JSON.stringify(r);
const threadName = (r: ThreadRef) => `mirrored:thread:${tref(r)}`;
const lineName = (r: ThreadRef, n: number) => `mirrored:line:${tref(r)}:${n}`;
const idName = (r: ThreadRef, id: string) =>
  `mirrored:id:${tref(r)}:${JSON.stringify(id)}`;

/**
 * The host side: stores what agents mirror to it, apart from its own
 * threads (store meta under `mirrored:`), and forgets a thread on withdraw.
 * Feed it the `mirror` lines a connection delivers.
 *
 * @example
 * ```ts
 * import { MirrorHost } from "./mirror.ts";
 * import { MemoryStore } from "../storage/memory_store.ts";
 * const store = new MemoryStore();
 * const host = new MirrorHost({ store });
 * const sharer = "ed25519:" + "A".repeat(43);
 * const of = "ed25519:" + "B".repeat(42) + "A";
 * const line = { t: "msg", id: "01J0000000000000000000000A", ts: "2026-01-01T00:00:00Z", th: "t1", parts: [] };
 * console.log(await host.onMirror(sharer, { t: "mirror", th: "t1", of, dir: "in", line })); // "stored"
 * console.log((await host.lines("t1")).length); // 1
 * store.close();
 * ```
 */
export class MirrorHost {
  #store: HostStore;
  #now: () => number;
  #chain: Promise<unknown> = Promise.resolve();

  /** `now` is the clock for `at`/`updated` (default Date.now). */
  constructor(options: { store: HostStore; now?: () => number }) {
    this.#store = options.store;
    this.#now = options.now ?? Date.now;
  }

  /** Handles one received `mirror` line from `sharer`. Never throws on bad input. */
  onMirror(
    sharer: string,
    message: Record<string, unknown>,
  ): Promise<MirrorOutcome> {
    const { th, of } = message;
    if (typeof th !== "string" || th === "") {
      return Promise.resolve("ignored: mirror without th");
    }
    if (typeof of !== "string" || !isKey(of)) {
      return Promise.resolve("ignored: mirror of is not an ed25519 key");
    }
    const ref: ThreadRef = [sharer, of, th];
    if (message.withdraw === true) {
      return this.#serial(async (): Promise<MirrorOutcome> => {
        await this.#delete(ref);
        return "withdrawn";
      });
    }
    const line = message.line as Record<string, unknown> | undefined;
    if (
      !line || typeof line !== "object" || Array.isArray(line) ||
      (line.t !== "msg" && line.t !== "state") || typeof line.id !== "string"
    ) {
      return Promise.resolve("ignored: mirror line is not a msg or state");
    }
    const dir = message.dir === "in" ? "in" : "out";
    return this.#serial(async (): Promise<MirrorOutcome> => {
      const id = line.id as string;
      if (await this.#store.getMeta<number>(idName(ref, id)) !== undefined) {
        return "duplicate";
      }
      const at = this.#now();
      const head = await this.#store.getMeta<MirroredThread>(threadName(ref));
      const n = head?.next ?? 0;
      const record: MirroredLine = {
        sharer,
        of,
        th,
        n,
        dir,
        from: dir === "in" ? of : sharer,
        id,
        t: line.t as string,
        line,
        at,
      };
      await this.#store.setMeta(lineName(ref, n), record);
      await this.#store.setMeta(idName(ref, id), n);
      const next: MirroredThread = {
        sharer,
        of,
        th,
        count: (head?.count ?? 0) + 1,
        next: n + 1,
        updated: at,
      };
      const ofName = message.of_name ?? head?.of_name;
      const subject = message.subject ?? head?.subject;
      if (typeof ofName === "string") next.of_name = ofName;
      if (typeof subject === "string") next.subject = subject;
      await this.#store.setMeta(threadName(ref), next);
      if (!head) {
        const index = await this.#index();
        index.push(ref);
        await this.#store.setMeta(INDEX, index);
      }
      return "stored";
    });
  }

  /** Mirrored threads, optionally of one sharer. */
  async threads(sharer?: string): Promise<MirroredThread[]> {
    await this.#chain;
    const out: MirroredThread[] = [];
    for (const ref of await this.#index()) {
      if (sharer !== undefined && ref[0] !== sharer) continue;
      const head = await this.#store.getMeta<MirroredThread>(threadName(ref));
      if (head) out.push(head);
    }
    return out;
  }

  /** The mirrored lines of thread `th` (optionally of one sharer/other party), in order. */
  async lines(
    th: string,
    where: { sharer?: string; of?: string } = {},
  ): Promise<MirroredLine[]> {
    await this.#chain;
    const out: MirroredLine[] = [];
    for (const ref of await this.#index()) {
      if (
        ref[2] !== th ||
        (where.sharer !== undefined && ref[0] !== where.sharer) ||
        (where.of !== undefined && ref[1] !== where.of)
      ) continue;
      const head = await this.#store.getMeta<MirroredThread>(threadName(ref));
      for (let n = 0; n < (head?.next ?? 0); n++) {
        const line = await this.#store.getMeta<MirroredLine>(lineName(ref, n));
        if (line) out.push(line);
      }
    }
    return out;
  }

  async #index(): Promise<ThreadRef[]> {
    return await this.#store.getMeta<ThreadRef[]>(INDEX) ?? [];
  }

  async #delete(ref: ThreadRef): Promise<void> {
    const head = await this.#store.getMeta<MirroredThread>(threadName(ref));
    if (head) {
      for (let n = 0; n < head.next; n++) {
        const name = lineName(ref, n);
        const line = await this.#store.getMeta<MirroredLine>(name);
        if (line) await this.#store.setMeta(idName(ref, line.id), undefined);
        await this.#store.setMeta(name, undefined);
      }
      // The head last: until it goes, a crash leaves a withdraw to redo.
      await this.#store.setMeta(threadName(ref), undefined);
    }
    const index = await this.#index();
    const kept = index.filter((r) => tref(r) !== tref(ref));
    if (kept.length !== index.length) await this.#store.setMeta(INDEX, kept);
  }

  #serial<T>(work: () => Promise<T>): Promise<T> {
    const next = this.#chain.then(work);
    this.#chain = next.catch(() => {});
    return next;
  }
}
