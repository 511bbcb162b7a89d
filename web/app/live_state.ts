/**
 * The page's state, fed by the server-sent event stream: a snapshot first,
 * then changes. The browser's EventSource reconnects by itself and sends
 * `Last-Event-ID`, so the server replays what was missed.
 *
 * @module
 */

import { useEffect, useState } from "npm:preact@^10.29.8/hooks";
import type {
  ActivityLine,
  NetPeer,
  PresenceDoc,
  Snapshot,
  ThreadRow,
  ThreadTouch,
  Transfer,
} from "../dashboard_types.ts";

/** Everything the views draw. */
export interface LiveState extends Snapshot {
  /** The stream is open. */
  online: boolean;
  /** `peer th` → how many times the thread changed since load. */
  touched: Record<string, number>;
}

const MAX_ACTIVITY = 2000;

function transferKey(t: Transfer): string {
  return `${t.dir} ${t.peer} ${t.ref}`;
}

/** Subscribes to `/events`; undefined until the first snapshot. */
export function useLiveState(): LiveState | undefined {
  const [state, setState] = useState<LiveState | undefined>(undefined);
  useEffect(() => {
    const source = new EventSource("/events");
    const on = <T>(name: string, apply: (s: LiveState, v: T) => LiveState) =>
      source.addEventListener(name, (e) => {
        const value = JSON.parse((e as MessageEvent<string>).data) as T;
        setState((s) => (s ? apply(s, value) : s));
      });
    source.addEventListener("snapshot", (e) => {
      const snap = JSON.parse((e as MessageEvent<string>).data) as Snapshot;
      setState((s) => ({ ...snap, online: true, touched: s?.touched ?? {} }));
    });
    on<NetPeer[]>("peers", (s, peers) => ({ ...s, peers }));
    on<PresenceDoc[]>("presence", (s, presence) => ({ ...s, presence }));
    on<ThreadRow[]>("threads", (s, threads) => ({ ...s, threads }));
    on<Transfer>("transfer", (s, t) => ({
      ...s,
      transfers: [
        t,
        ...s.transfers.filter((x) => transferKey(x) !== transferKey(t)),
      ],
    }));
    on<ActivityLine>("line", (s, line) => ({
      ...s,
      activity: s.activity.length >= MAX_ACTIVITY
        ? [...s.activity.slice(1 - MAX_ACTIVITY), line]
        : [...s.activity, line],
    }));
    on<ThreadTouch>("touch", (s, t) => {
      const k = `${t.peer} ${t.th}`;
      return { ...s, touched: { ...s.touched, [k]: (s.touched[k] ?? 0) + 1 } };
    });
    source.onopen = () => setState((s) => (s ? { ...s, online: true } : s));
    source.onerror = () => setState((s) => (s ? { ...s, online: false } : s));
    return () => source.close();
  }, []);
  return state;
}

/** The page's write token, when the server allows writes. */
export function writeToken(): string | undefined {
  return document.querySelector<HTMLMetaElement>('meta[name="awp-token"]')
    ?.content || undefined;
}

/** POSTs a write action; resolves with its answer or throws its one line. */
export async function act(
  path: "send" | "state" | "grant",
  body: Record<string, unknown>,
): Promise<unknown> {
  const res = await fetch(`/api/${path}`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      "x-awp-token": writeToken() ?? "",
    },
    body: JSON.stringify(body),
  });
  if (!res.ok) throw new Error((await res.text()).trim());
  return await res.json();
}
