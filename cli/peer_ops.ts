/**
 * The daemon's control ops about other agents: connecting, the peers and
 * threads listed with their counts, grants, aliases, introductions, bye,
 * blobs, and the presence and mirror extensions (presence, share, private,
 * mirrored). Each is a few calls on the {@link Peer} API.
 *
 * @module
 */

import type { Peer } from "../peer/peer.ts";
import { ENDING_STATES } from "../actors/thread_machine.ts";
import { parseAddress } from "../wire/address.ts";
import { errorText } from "../wire/error_text.ts";
import { grantHash } from "../wire/grant.ts";
import { ControlError } from "./control.ts";
import { str, strings, usage } from "./control_args.ts";
import type { Inbox } from "./inbox.ts";
import type { PeerNames } from "./peer_names.ts";
import { resolvePeer } from "./resolve_peer.ts";
import type { PeerSummary } from "./protocol.ts";

/**
 * Capabilities `grant` accepts.
 *
 * @example
 * ```ts
 * import { GRANT_CAPS } from "./peer_ops.ts";
 * console.log(GRANT_CAPS.has("fs:read")); // true
 * ```
 */
export const GRANT_CAPS: ReadonlySet<string> = new Set([
  "exec",
  "fs:read",
  "fs:write",
  "introduce",
  "admin",
]);

/** What the ops tell about this agent itself. */
export interface SelfInfo {
  /** The name this agent announces. */
  name?: string;
  /** Whether it publishes presence. */
  presence: boolean;
  /** Whether it forwards other agents' presence. */
  relay: boolean;
}

/**
 * The control ops about other agents, over one daemon's {@link Peer}.
 *
 * @example
 * ```ts ignore
 * import { PeerOps } from "./peer_ops.ts";
 * const ops = new PeerOps(peer, names, inbox, { presence: false, relay: true });
 * console.log(await ops.summaries());
 * ```
 */
export class PeerOps {
  readonly #peer: Peer;
  readonly #names: PeerNames;
  readonly #inbox: Inbox;
  readonly #self: SelfInfo;

  constructor(peer: Peer, names: PeerNames, inbox: Inbox, self: SelfInfo) {
    this.#peer = peer;
    this.#names = names;
    this.#inbox = inbox;
    this.#self = self;
  }

  /** The `connect` op: a known peer or an address, dialed (or kept dialing). */
  async connect(a: Record<string, unknown>): Promise<unknown> {
    const target = str(a.target);
    if (!target) throw usage("missing address");
    const timeoutMs = typeof a.timeoutMs === "number" ? a.timeoutMs : 60_000;
    const records = await this.#peer.peers();
    let address: string;
    let r;
    try {
      r = resolvePeer(target, records);
    } catch (error) {
      throw new ControlError(errorText(error));
    }
    if (r.kind === "peer") {
      const known = records.find((p) => p.key === r.peer.key)!;
      if (known.connected) {
        return {
          key: known.key,
          name: known.alias ?? known.name,
          already: true,
        };
      }
      if (known.addresses.length === 0) {
        throw new ControlError(`no address known for ${target}`);
      }
      address = known.addresses[0];
    } else {
      address = r.address;
      try {
        parseAddress(address);
      } catch (error) {
        throw usage(errorText(error));
      }
    }
    let timer: ReturnType<typeof setTimeout> | undefined;
    let key: string;
    try {
      key = await this.#peer.connect(address);
    } catch (error) {
      // Nothing answers (yet): keep dialing in the background, as a dialer
      // does; the command reports it, or waits for it with `wait`.
      const dialing = this.#keepDialing(address);
      if (a.wait !== true) {
        return { address, dialing: true, error: errorText(error) };
      }
      try {
        key = await Promise.race([
          dialing,
          new Promise<never>((_, reject) => {
            timer = setTimeout(
              () =>
                reject(
                  new ControlError(
                    `could not connect to ${address} within ${
                      timeoutMs / 1000
                    }s (still dialing)`,
                    2,
                  ),
                ),
              timeoutMs,
            );
          }),
        ]);
      } catch (error) {
        if (error instanceof ControlError) throw error;
        throw new ControlError(
          `cannot connect to ${address}: ${errorText(error)}`,
        );
      } finally {
        clearTimeout(timer);
      }
    }
    this.#names.forget(key);
    return { key, name: await this.#names.nameOf(key), already: false };
  }

  /** Addresses being dialed until they answer, by `awp connect`. */
  #dialing = new Map<string, Promise<string>>();

  #keepDialing(address: string): Promise<string> {
    let dialing = this.#dialing.get(address);
    if (!dialing) {
      dialing = this.#peer.connect(address, { retry: true });
      this.#dialing.set(address, dialing);
      const done = () => this.#dialing.delete(address);
      dialing.then(done, done);
    }
    return dialing;
  }

  /** The `threads` op: thread rows, with names and refusals, newest first. */
  async threads(peerQuery: string | undefined, open: boolean) {
    const peer = peerQuery ? await this.#names.key(peerQuery) : undefined;
    const all = await this.#peer.threads();
    const refused = new Map<string, string>();
    for (const p of new Set(all.map((t) => t.peer))) {
      if (peer && p !== peer) continue;
      for (const e of await this.#inbox.refusals(p)) {
        const m = JSON.parse(e.line) as { code?: unknown; detail?: unknown };
        refused.set(
          `${p} ${e.th}`,
          `${String(m.code)}${
            typeof m.detail === "string" ? `: ${m.detail}` : ""
          }`,
        );
      }
    }
    const rows = [];
    for (const t of all) {
      if (peer && t.peer !== peer) continue;
      if (
        open &&
        (ENDING_STATES.has(t.mine?.state ?? "") ||
          ENDING_STATES.has(t.theirs?.state ?? ""))
      ) continue;
      rows.push({
        ...t,
        peerName: await this.#names.nameOf(t.peer),
        my_since: t.mine?.ts,
        their_since: t.theirs?.ts,
        ...(refused.has(`${t.peer} ${t.th}`)
          ? { refused: refused.get(`${t.peer} ${t.th}`) }
          : {}),
      });
    }
    return rows.sort((x, y) => y.updated.localeCompare(x.updated));
  }

  /** Every known peer with its counts, as `peers` and `status` list them. */
  async summaries(): Promise<PeerSummary[]> {
    const threads = await this.#peer.threads();
    const grants = await this.#peer.grants("issued");
    const now = Date.now();
    const out: PeerSummary[] = [];
    for (const p of await this.#peer.peers()) {
      const mine = threads.filter((t) => t.peer === p.key);
      const caps = new Set<string>();
      for (const g of grants) {
        if (g.revoked || g.grant.sub !== p.key) continue;
        if (Date.parse(g.grant.exp) <= now) continue;
        for (const c of g.grant.caps) caps.add(c);
      }
      out.push({
        key: p.key,
        ...(p.name ? { name: p.name } : {}),
        ...(p.alias ? { alias: p.alias } : {}),
        ...(p.about ? { about: p.about } : {}),
        connected: p.connected,
        ...(p.waking ? { waking: true } : {}),
        addresses: p.addresses,
        queued: await this.#peer.store.outboxCount(p.key),
        openThreads: mine.filter((t) =>
          !ENDING_STATES.has(t.mine?.state ?? "") &&
          !ENDING_STATES.has(t.theirs?.state ?? "")
        )
          .length,
        unread: mine.reduce((n, t) =>
          n + t.unread, 0),
        caps: [...caps],
        ...(p.unreachable ? { unreachable: p.unreachable } : {}),
      });
    }
    return out;
  }

  /** The `grant` op: a signed grant of capabilities to a peer. */
  async grant(a: Record<string, unknown>): Promise<unknown> {
    const key = await this.#names.key(str(a.to) ?? "");
    const caps = strings(a.caps);
    if (caps.length === 0) throw usage("missing capability");
    for (const c of caps) {
      if (!GRANT_CAPS.has(c)) {
        throw usage(
          `unknown capability "${c}": use ${[...GRANT_CAPS].join(", ")}`,
        );
      }
    }
    const ttlMs = typeof a.ttlMs === "number" ? a.ttlMs : 3_600_000;
    if (ttlMs <= 0) throw usage("--ttl must be positive");
    const grant = await this.#peer.grant(key, caps, { ttlMs });
    return { hash: await grantHash(grant), grant };
  }

  /** The `grants` op: grants issued, held and presented, with names. */
  async grants(): Promise<unknown> {
    const out = [];
    for (const g of await this.#peer.grants()) {
      out.push({
        ...g,
        issName: g.grant.iss === this.#peer.key
          ? this.#self.name
          : await this.#names.nameOf(g.grant.iss),
        subName: g.grant.sub === this.#peer.key
          ? this.#self.name
          : await this.#names.nameOf(g.grant.sub),
      });
    }
    return { grants: out };
  }

  /** The `revoke` op: a grant, by hash or its prefix (6 characters or more). */
  async revoke(a: Record<string, unknown>): Promise<unknown> {
    const q = str(a.hash);
    if (!q) throw usage("missing grant hash");
    const hits = (await this.#peer.store.grants()).filter((g) =>
      g.hash === q || (q.length >= 6 && g.hash.startsWith(q))
    );
    const hashes = [...new Set(hits.map((g) => g.hash))];
    if (hashes.length === 0) throw new ControlError(`no grant with hash ${q}`);
    if (hashes.length > 1) {
      throw new ControlError(`ambiguous grant hash ${q}: give more characters`);
    }
    await this.#peer.store.revoke(hashes[0]);
    return { revoked: hashes[0] };
  }

  /** The `alias` op: a local nickname for a peer. */
  async alias(a: Record<string, unknown>): Promise<unknown> {
    const alias = str(a.alias);
    if (!alias) throw usage("missing alias");
    if (/^(tcp|unix):/.test(alias) || alias.startsWith("ed25519:")) {
      throw usage(`bad alias "${alias}"`);
    }
    const key = await this.#names.key(str(a.peer) ?? "");
    const records = await this.#peer.store.peers();
    const taken = records.find((p) => p.alias === alias && p.key !== key);
    if (taken) {
      throw new ControlError(
        `alias "${alias}" is already used for ${taken.key}`,
      );
    }
    const rec = records.find((p) => p.key === key)!;
    await this.#peer.store.putPeer({ ...rec, alias });
    this.#names.forget(key);
    return { key, alias };
  }

  /** The `presence` op: the presence documents held. */
  async presenceList(): Promise<unknown> {
    const now = Date.now();
    const docs = [];
    for (const r of this.#peer.presence()) {
      docs.push({
        origin: r.origin,
        ...(r.doc.name ? { name: r.doc.name } : {}),
        ...(r.doc.about ? { about: r.doc.about } : {}),
        seq: r.seq,
        hops: r.hops,
        via: r.via,
        ...(r.via ? { viaName: await this.#names.nameOf(r.via) } : {}),
        ts: r.doc.ts,
        age_ms: Math.max(0, now - r.time),
      });
    }
    return {
      publishing: this.#self.presence,
      relaying: this.#self.relay,
      docs,
    };
  }

  /** The `share` op: the hosts this agent mirrors its threads to. */
  async share(a: Record<string, unknown>): Promise<unknown> {
    const hosts = strings(a.hosts);
    if (a.stop === true) {
      if (hosts.length) throw usage("give hosts or --stop, not both");
      await this.#peer.share([]);
    } else if (hosts.length) {
      const keys = [];
      for (const h of hosts) keys.push(await this.#names.key(h));
      await this.#peer.share([...new Set(keys)]);
    }
    const sharing = [];
    for (const key of this.#peer.sharing) {
      const name = await this.#names.nameOf(key);
      sharing.push({ key, ...(name ? { name } : {}) });
    }
    return { sharing };
  }

  /** The `mirrored` op: threads mirrored here, or one thread's lines. */
  async mirrored(a: Record<string, unknown>): Promise<unknown> {
    const sharer = str(a.sharer)
      ? await this.#names.key(str(a.sharer)!)
      : undefined;
    const th = str(a.thread);
    if (th) {
      const lines = await this.#peer.mirroredLines(
        th,
        sharer ? { sharer } : {},
      );
      if (lines.length === 0) {
        throw new ControlError(`no mirrored thread "${th}"`);
      }
      const out = [];
      for (const l of lines) {
        const name = await this.#names.nameOf(l.from);
        out.push({ ...l, ...(name ? { fromName: name } : {}) });
      }
      return { lines: out };
    }
    const threads = [];
    for (const t of await this.#peer.mirrored(sharer)) {
      const sharerName = await this.#names.nameOf(t.sharer);
      threads.push({ ...t, ...(sharerName ? { sharerName } : {}) });
    }
    return { threads: threads.sort((x, y) => y.updated - x.updated) };
  }

  /** The `blobs` op: files sent and received, newest first. */
  async blobs(a: Record<string, unknown>): Promise<unknown> {
    const peer = str(a.peer) ? await this.#names.key(str(a.peer)!) : undefined;
    const blobs = await this.#peer.store.blobs(peer);
    return { blobs: blobs.sort((x, y) => y.updated - x.updated) };
  }

  /** The `introduce` op: tells `to` about `peer`, with a grant bound to it. */
  async introduce(a: Record<string, unknown>): Promise<unknown> {
    const to = await this.#names.key(str(a.to) ?? "");
    const other = await this.#names.key(str(a.peer) ?? "");
    const caps = strings(a.caps);
    for (const c of caps) {
      if (!GRANT_CAPS.has(c)) throw usage(`unknown capability "${c}"`);
    }
    const r = await this.#peer.introduce(to, other, {
      grantCaps: caps,
      ttlMs: typeof a.ttlMs === "number" ? a.ttlMs : undefined,
      thread: str(a.thread),
    });
    return { ...r, to, peer: other };
  }

  /** The `bye` op: closes the connection to a peer gracefully. */
  async bye(a: Record<string, unknown>): Promise<unknown> {
    const key = await this.#names.key(str(a.to) ?? "");
    const connected = (await this.#peer.peers()).some((p) =>
      p.key === key && p.connected
    );
    // Away or not, it is not redialed until something new is sent.
    await this.#peer.bye(key, str(a.reason));
    return { key, name: await this.#names.nameOf(key), connected };
  }

  /** The `private` op: keeps a thread out of sharing, on both sides. */
  async private(a: Record<string, unknown>): Promise<unknown> {
    const th = str(a.thread);
    if (!th) throw usage("missing thread");
    const key = str(a.peer)
      ? await this.#names.key(str(a.peer)!)
      : await this.#names.threadPeer(th);
    const r = await this.#peer.private(key, th);
    return { ...r, peer: key, peerName: await this.#names.nameOf(key) };
  }
}
