/**
 * A coding-agent profile request from the CLI (`awp exec`, `cat`, `put`,
 * `ls`): sends the request msg and waits for what answers it, the result
 * msg (`re` = the request) or an `err` such as `forbidden`.
 *
 * @module
 */

import type { PeerEvent, ReceivedBlob } from "../actors/peer_events.ts";
import type { SendOptions, Sent } from "../actors/peer.ts";
import { type ProfileCap, REQUEST_MIMES } from "../actors/profile.ts";

/** How the request was answered. */
export interface RemoteReply {
  /** The request msg's id and thread. */
  id: string;
  th: string;
  /** The result part's data (`{error}` when the request failed there). */
  result?: Record<string, unknown>;
  /** The result msg's text (one line summary). */
  text?: string;
  /** The result's files, received. */
  blobs?: ReceivedBlob[];
  /** The peer refused the request (`err`, e.g. forbidden). */
  refused?: { code: string; detail: string };
  /** Nothing came back in time. */
  timedOut?: boolean;
}

/** What {@link remoteRequest} needs of the daemon. */
export interface RequestContext {
  /** Sends a msg to the peer (its key). */
  send(to: string, text: string, options: SendOptions): Promise<Sent>;
  /** Calls `listener` with every Peer event until the returned stop is called. */
  subscribe(listener: (ev: PeerEvent) => void): () => void;
}

/**
 * The request mime of a profile capability.
 *
 * @example
 * ```ts
 * import { requestMime } from "./remote_request.ts";
 * console.log(requestMime("exec")); // "application/vnd.awp.exec+json"
 * ```
 */
export function requestMime(cap: ProfileCap): string {
  const found = Object.entries(REQUEST_MIMES).find(([, c]) => c === cap);
  if (!found) throw new TypeError(`no request for ${cap}`);
  return found[0];
}

/**
 * Sends a `cap` request with `data` to `peer` and resolves with the first
 * answer to it, or `timedOut` after `timeoutMs`. Events are watched from
 * before the send, so an answer that races the send is not missed.
 *
 * @example
 * ```ts ignore
 * const reply = await remoteRequest(ctx, key, "fs:read", { path: "a.txt" }, { timeoutMs: 60_000 });
 * ```
 */
export async function remoteRequest(
  ctx: RequestContext,
  peer: string,
  cap: ProfileCap,
  data: Record<string, unknown>,
  options: { timeoutMs: number; signal?: AbortSignal; text?: string },
): Promise<RemoteReply> {
  const answers: PeerEvent[] = [];
  let wake = () => {};
  const stop = ctx.subscribe((ev) => {
    if (ev.peer !== peer) return;
    if (
      (ev.type === "message" && ev.re) || (ev.type === "error" && ev.re)
    ) {
      answers.push(ev);
      wake();
    }
  });
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    const sent = await ctx.send(peer, options.text ?? `${cap} request`, {
      parts: [{ k: "data", mime: requestMime(cap), data }],
    });
    const deadline = Date.now() + options.timeoutMs;
    for (;;) {
      for (const ev of answers) {
        if (ev.type === "error" && ev.re === sent.id) {
          return { ...sent, refused: { code: ev.code, detail: ev.detail } };
        }
        if (ev.type === "message" && ev.re === sent.id) {
          const part = ev.parts.find((p) =>
            p.k === "data" && (p.mime ?? "").endsWith("-result+json")
          );
          const result = part?.k === "data" &&
              typeof part.data === "object" && part.data !== null
            ? part.data as Record<string, unknown>
            : undefined;
          return {
            ...sent,
            ...(result ? { result } : {}),
            text: ev.text,
            blobs: ev.blobs,
          };
        }
      }
      answers.length = 0;
      const left = deadline - Date.now();
      if (left <= 0 || options.signal?.aborted) {
        return { ...sent, timedOut: true };
      }
      await new Promise<void>((resolve) => {
        wake = resolve;
        timer = setTimeout(resolve, left);
        options.signal?.addEventListener("abort", () => resolve(), {
          once: true,
        });
      });
      clearTimeout(timer);
    }
  } finally {
    clearTimeout(timer);
    stop();
  }
}
