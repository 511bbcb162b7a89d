/**
 * The commands of the `presence` and `mirror`/`private` extensions:
 * `presence`, `share`, `private` and `mirrored`.
 *
 * @module
 */

import { UsageError } from "./args.ts";
import {
  atMostPositionals,
  callPrint,
  type Command,
  needPositional,
  noPositionals,
} from "./command.ts";
import { formatAge } from "./output.ts";
import { who } from "./person_text.ts";

/** A presence document as `presence` lists it. */
interface PresenceRow {
  origin: string;
  name?: string;
  seq: number;
  hops: number;
  age_ms: number;
  viaName?: string;
  via: string;
}

/** A thread another agent mirrors here. */
interface MirroredThread {
  sharer: string;
  sharerName?: string;
  of: string;
  of_name?: string;
  th: string;
  subject?: string;
  count: number;
  updated: number;
}

/** One line of a mirrored thread. */
interface MirroredLine {
  from: string;
  fromName?: string;
  n: number;
  t: string;
  line: Record<string, unknown>;
}

/** A mirrored line's text: its text parts, or its state and note. */
function mirroredText(l: MirroredLine): string {
  if (l.t === "state") {
    return `state ${String(l.line.state)}${
      typeof l.line.note === "string" ? ` (${l.line.note})` : ""
    }`;
  }
  const parts = Array.isArray(l.line.parts)
    ? l.line.parts as Array<Record<string, unknown>>
    : [];
  return parts.filter((x) => x.k === "text").map((x) => String(x.text))
    .join("\n") || l.t;
}

/**
 * `presence`, `share`, `private` and `mirrored`, by name.
 *
 * @example
 * ```ts
 * import { SHARING_COMMANDS } from "./sharing_commands.ts";
 * console.log(Object.keys(SHARING_COMMANDS)); // [ "presence", "share", "private", "mirrored" ]
 * ```
 */
export const SHARING_COMMANDS: Record<string, Command> = {
  presence: {
    summary:
      "list the presence documents the daemon holds (origin, name, seq, hops, age)",
    usage: "awp presence",
    flags: [],
    help:
      "Publishing is opt-in: awp up --presence, AWP_PRESENCE=1 in the daemon's environment,\n" +
      'or "presence": true in config.json in the home. --no-relay (or "relay": false) stops\n' +
      "forwarding other agents' documents.",
    async run(ctx) {
      noPositionals(ctx.args);
      await callPrint<
        { publishing: boolean; relaying: boolean; docs: PresenceRow[] }
      >(ctx, "presence", {}, (r) => [
        `publishing ${r.publishing ? "on" : "off"}, relaying ${
          r.relaying ? "on" : "off"
        }`,
        ...(r.docs.length === 0 ? ["no presence documents"] : []),
        ...r.docs.map((d) =>
          `${who(d.origin, d.name)}  seq ${d.seq}  hops ${d.hops}  age ${
            formatAge(d.age_ms)
          }${d.hops > 0 ? `  via ${who(d.via, d.viaName)}` : ""}  ${d.origin}`
        ),
      ]);
      return 0;
    },
  },
  share: {
    summary: "show or set the hosts this agent mirrors its conversations to",
    usage: "awp share [HOST...]\n       awp share --stop",
    flags: [{ name: "stop", type: "boolean" }],
    help:
      "Hosts are names, aliases or keys of known peers. With hosts, replaces the list\n" +
      "(remembered across restarts); --stop stops sharing. The other party of each\n" +
      "thread is told. awp private keeps one thread out.",
    async run(ctx) {
      const hosts = ctx.args.positionals;
      const stop = ctx.args.bool("stop");
      if (stop && hosts.length > 0) {
        throw new UsageError("give hosts or --stop, not both");
      }
      await callPrint<{ sharing: Array<{ key: string; name?: string }> }>(
        ctx,
        "share",
        { hosts, stop },
        (r) =>
          r.sharing.length === 0
            ? "not sharing"
            : `sharing with ${
              r.sharing.map((h) => who(h.key, h.name)).join(", ")
            }`,
      );
      return 0;
    },
  },
  private: {
    summary: "keep a thread out of conversation sharing, on both sides",
    usage: "awp private [PEER] THREAD",
    flags: [],
    help:
      "This agent stops mirroring the thread, the other agent is asked to stop too, and\n" +
      "hosts that hold a copy forget it. PEER can be left out when the thread id is unique.",
    async run(ctx) {
      const p = ctx.args.positionals;
      needPositional(ctx.args, 1, "thread");
      atMostPositionals(ctx.args, 2);
      const [peer, thread] = p.length === 2 ? p : [undefined, p[0]];
      await callPrint<
        { th: string; id: string; peer: string; peerName?: string }
      >(
        ctx,
        "private",
        { peer, thread },
        (r) => `${r.th} private with ${who(r.peer, r.peerName)}`,
      );
      return 0;
    },
  },
  mirrored: {
    summary:
      "list threads other agents mirror here, or one thread's lines (kept apart from ours)",
    usage: "awp mirrored [--sharer PEER] [THREAD]",
    flags: [{ name: "sharer", type: "string" }],
    async run(ctx) {
      atMostPositionals(ctx.args, 1);
      await callPrint<{ threads?: MirroredThread[]; lines?: MirroredLine[] }>(
        ctx,
        "mirrored",
        { sharer: ctx.args.string("sharer"), thread: ctx.args.positionals[0] },
        (r) => {
          if (r.lines) {
            return r.lines.map((l) =>
              `${l.n} ${who(l.from, l.fromName)}: ${mirroredText(l)}`
            );
          }
          const threads = r.threads ?? [];
          const now = Date.now();
          return threads.length === 0
            ? "no mirrored threads"
            : threads.map((t) =>
              `${t.th}  ${who(t.sharer, t.sharerName)} with ${
                who(t.of, t.of_name)
              }  ${t.count} lines  ${formatAge(now - t.updated)}  ${
                t.subject ?? ""
              }`.trimEnd()
            );
        },
      );
      return 0;
    },
  },
};
