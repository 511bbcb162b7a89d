/**
 * What the daemon sends for the CLI and waits on: `send` (a msg with its
 * parts and files, streaming the files' progress until the ack), `state`,
 * and `request` (an exec, fs:read or fs:write request of the coding-agent
 * profile, waiting for its answer).
 *
 * @module
 */

import type { Peer } from "../peer/peer.ts";
import type { PeerEvent } from "../peer/peer_events.ts";
import { REQUEST_MIMES, RESULT_MIMES } from "../profile/mimes.ts";
import type { Part } from "../wire/types.ts";
import { ControlError } from "./control.ts";
import { str, strings, usage } from "./control_args.ts";
import type { Inbox } from "./inbox.ts";
import { itemFromEvent } from "./inbox_item.ts";
import type { PeerNames } from "./peer_names.ts";
import type {
  InboxItem,
  ProgressItem,
  RequestResult,
  SendResult,
} from "./protocol.ts";

/**
 * Sends for the CLI through one daemon's {@link Peer}.
 *
 * @example
 * ```ts ignore
 * import { Sender } from "./sender.ts";
 * const sender = new Sender(peer, names, inbox, stopped, () => false);
 * console.log(await sender.state({ thread: "t1", state: "done" }));
 * ```
 */
export class Sender {
  readonly #peer: Peer;
  readonly #names: PeerNames;
  readonly #inbox: Inbox;
  readonly #stopped: Promise<void>;
  readonly #isStopped: () => boolean;

  /** `stopped` resolves when the daemon stops, when `isStopped()` turns true. */
  constructor(
    peer: Peer,
    names: PeerNames,
    inbox: Inbox,
    stopped: Promise<void>,
    isStopped: () => boolean,
  ) {
    this.#peer = peer;
    this.#names = names;
    this.#inbox = inbox;
    this.#stopped = stopped;
    this.#isStopped = isStopped;
  }

  async #unreadNote(key: string, th: string): Promise<string | undefined> {
    const rec = await this.#peer.store.thread(key, th);
    if (!rec || rec.unread === 0) return undefined;
    const age = Math.round((Date.now() - Date.parse(rec.updated)) / 1000);
    return `note: ${rec.unread} unread from ${
      (await this.#names.nameOf(key)) ?? key.slice(0, 16)
    } in this thread (${age}s ago): awp read ${th}`;
  }

  /** The `send` op: a msg (text, parts, files), then its ack for a while. */
  async send(
    a: Record<string, unknown>,
    emit: (item: unknown) => Promise<void>,
    signal: AbortSignal,
  ): Promise<SendResult> {
    const words = strings(a.words);
    const thread = str(a.thread);
    let key: string;
    if (str(a.to)) key = await this.#names.key(str(a.to)!);
    else if (thread) {
      key = "";
      if (words.length >= 2) {
        try {
          key = await this.#names.key(words[0]);
          words.shift();
        } catch { /* the first word is text */ }
      }
      if (!key) key = await this.#names.threadPeer(thread);
    } else {
      if (words.length === 0) throw usage("missing peer and text");
      key = await this.#names.key(words.shift()!);
    }
    const parts = (Array.isArray(a.parts) ? a.parts : []) as Part[];
    const files = strings(a.files);
    const text = words.join(" ");
    if (text === "" && parts.length === 0 && files.length === 0) {
      throw usage("nothing to send: give some text");
    }
    let subject = str(a.subject);
    if (!subject && !thread && text) {
      subject = text.split("\n")[0].slice(0, 120);
    }
    const note = thread ? await this.#unreadNote(key, thread) : undefined;
    const doSend = async (
      flush?: (keep: (i: ProgressItem) => boolean) => Promise<void>,
    ): Promise<SendResult> => {
      const sent = await this.#peer.send(key, text, {
        ...(thread ? { thread } : {}),
        ...(subject ? { subject } : {}),
        ...(str(a.re) ? { re: str(a.re) } : {}),
        parts,
        files,
      });
      const blobs = files.length === 0
        ? []
        : (await this.#peer.store.blobs(key))
          .filter((b) => b.dir === "out" && b.th === sent.th)
          .map((b) => ({
            ref: b.ref,
            size: b.size,
            ...(b.name ? { name: b.name } : {}),
          }));
      const after = flush && blobs.length
        ? await this.#ackWithProgress(key, sent, blobs, a.waitAckMs, {
          flush,
          signal,
        })
        : await this.#afterSend(key, sent, a.waitAckMs);
      return {
        ...after,
        ...(note ? { note } : {}),
        ...(blobs.length ? { blobs } : {}),
      };
    };
    if (a.progress === true && files.length > 0) {
      return await this.#inbox.withProgress(
        (ev) => ev.dir === "out" && ev.peer === key,
        emit,
        doSend,
      );
    }
    return await doSend();
  }

  /**
   * Waits for the ack of a send that carries blobs, streaming their
   * progress, until acked, the peer is gone, the client left or
   * `waitAckMs` (when given) ran out.
   */
  async #ackWithProgress(
    key: string,
    sent: { id: string; th: string },
    blobs: Array<{ ref: string }>,
    waitAckMs: unknown,
    io: {
      flush: (keep: (i: ProgressItem) => boolean) => Promise<void>;
      signal: AbortSignal;
    },
  ): Promise<SendResult> {
    const refs = new Set(blobs.map((b) => b.ref));
    const deadline = typeof waitAckMs === "number"
      ? Date.now() + waitAckMs
      : Infinity;
    const isConnected = async () =>
      (await this.#peer.peers()).some((p) => p.key === key && p.connected);
    let connected = await isConnected();
    let acked = false;
    while (connected && !io.signal.aborted && !this.#isStopped()) {
      try {
        await this.#peer.waitAck(sent.id, {
          timeoutMs: Math.max(1, Math.min(250, deadline - Date.now())),
        });
        acked = true;
      } catch { /* not yet */ }
      await io.flush((i) => refs.has(i.ref));
      if (acked || Date.now() >= deadline) break;
      connected = await isConnected();
    }
    return sendResult(sent, key, acked, connected);
  }

  /** The `state` op: our state of a thread, then its ack for a while. */
  async state(a: Record<string, unknown>): Promise<SendResult> {
    const th = str(a.thread);
    const state = str(a.state);
    if (!th || !state) throw usage("missing thread or state");
    const key = str(a.to)
      ? await this.#names.key(str(a.to)!)
      : await this.#names.threadPeer(th);
    const note = str(a.note);
    const sent = await this.#peer.setState(key, th, state, note);
    const unread = await this.#unreadNote(key, th);
    return {
      ...(await this.#afterSend(key, sent, a.waitAckMs)),
      ...(unread ? { note: unread } : {}),
    };
  }

  async #afterSend(
    key: string,
    sent: { id: string; th: string },
    waitAckMs: unknown,
  ): Promise<SendResult> {
    const connected = (await this.#peer.peers()).some((p) =>
      p.key === key && p.connected
    );
    const wait = typeof waitAckMs === "number"
      ? waitAckMs
      : connected
      ? 1000
      : 0;
    let acked = false;
    if (wait > 0) {
      try {
        await this.#peer.waitAck(sent.id, { timeoutMs: wait });
        acked = true;
      } catch { /* not yet */ }
    }
    return sendResult(sent, key, acked, connected);
  }

  /**
   * The `request` op: sends an exec, fs:read or fs:write request (PROFILE.md)
   * and waits for the answer: the reply msg whose `re` is the request's id,
   * or the `err` (forbidden) that names it, or the timeout.
   */
  async request(
    a: Record<string, unknown>,
    signal: AbortSignal,
  ): Promise<RequestResult> {
    const key = await this.#names.key(str(a.to) ?? "");
    const cap = str(a.cap) ?? "";
    const mime = Object.keys(REQUEST_MIMES).find((m) =>
      REQUEST_MIMES[m] === cap && cap !== "admin"
    );
    if (!mime) {
      throw usage(`unknown request "${cap}": use exec, fs:read or fs:write`);
    }
    if (
      typeof a.data !== "object" || a.data === null || Array.isArray(a.data)
    ) {
      throw usage("a request needs its data as an object");
    }
    const timeoutMs = typeof a.timeoutMs === "number" ? a.timeoutMs : 600_000;
    // Listen before sending: a fast answer may arrive before send resolves.
    const seen: PeerEvent[] = [];
    let wake: (() => void) | undefined;
    const listener = (_item: InboxItem, ev: PeerEvent) => {
      if (ev.peer !== key) return;
      if (ev.type === "message" && ev.re) seen.push(ev);
      else if (ev.type === "error" && ev.remote && ev.re) seen.push(ev);
      else return;
      wake?.();
    };
    const unlisten = this.#inbox.onItem(listener);
    let timer: ReturnType<typeof setTimeout> | undefined;
    try {
      const sent = await this.#peer.send(key, "", {
        ...(str(a.thread) ? { thread: str(a.thread) } : {}),
        ...(str(a.subject) ? { subject: str(a.subject) } : {}),
        parts: [{ k: "data", mime, data: a.data } as Part],
      });
      const base = { id: sent.id, th: sent.th, peer: key, cap };
      const timeout = new Promise<"timeout">((r) =>
        timer = setTimeout(() => r("timeout"), timeoutMs)
      );
      const aborted = new Promise<"abort">((r) => {
        if (signal.aborted) r("abort");
        signal.addEventListener("abort", () => r("abort"), { once: true });
        this.#stopped.then(() => r("abort"));
      });
      while (true) {
        const answer = seen.find((ev) =>
          (ev.type === "message" || ev.type === "error") && ev.re === sent.id
        );
        if (answer?.type === "error") {
          return {
            ...base,
            ok: false,
            error: `${answer.code}: ${answer.detail}`,
          };
        }
        if (answer?.type === "message") {
          await this.#inbox.markRead(key, answer.th);
          const reply = (await itemFromEvent(answer, this.#names))!;
          const result = answer.parts.find((p) =>
            p.k === "data" && typeof p.mime === "string" &&
            p.mime.toLowerCase() === RESULT_MIMES[cap]
          ) as { data?: unknown } | undefined;
          const data = result?.data as Record<string, unknown> | undefined;
          return {
            ...base,
            ok: data !== undefined && typeof data.error !== "string",
            reply,
            ...(data !== undefined ? { result: data } : {}),
            ...(typeof data?.error === "string" ? { error: data.error } : {}),
          };
        }
        const r = await Promise.race([
          timeout,
          aborted,
          new Promise<"event">((res) => wake = () => res("event")),
        ]);
        wake = undefined;
        if (r === "timeout") return { ...base, ok: false, timedOut: true };
        if (r === "abort") throw new ControlError("interrupted");
      }
    } finally {
      clearTimeout(timer);
      unlisten();
    }
  }
}

/** What `send` and `state` answer about a line sent to `key`. */
function sendResult(
  sent: { id: string; th: string },
  key: string,
  acked: boolean,
  connected: boolean,
): SendResult {
  return {
    id: sent.id,
    th: sent.th,
    thread: sent.th,
    peer: key,
    acked,
    connected,
  };
}
