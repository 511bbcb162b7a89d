/**
 * The commands about other agents and what they may do: `peers`, `blobs`,
 * `grant`, `grants`, `revoke`, `introduce`, `bye` and `alias`.
 *
 * @module
 */

import { parseDuration } from "./args.ts";
import { callPrint, type Command, needPositional } from "./command.ts";
import { formatBytes } from "./output.ts";
import { peerLine, shortKey, who } from "./person_text.ts";
import type { PeerSummary } from "./protocol.ts";

/** A blob as `blobs` lists it. */
interface BlobRow {
  peer: string;
  ref: string;
  dir: string;
  name?: string;
  size: number;
  status: string;
  path: string;
}

/** A grant as `grants` lists it. */
interface GrantRow {
  kind: string;
  hash: string;
  revoked: boolean;
  grant: { iss: string; sub: string; caps: string[]; exp: string };
  issName?: string;
  subName?: string;
}

/**
 * `peers`, `blobs`, `grant`, `grants`, `revoke`, `introduce`, `bye` and
 * `alias`, by name.
 *
 * @example
 * ```ts
 * import { PEER_COMMANDS } from "./peer_commands.ts";
 * console.log(PEER_COMMANDS.grant.usage); // "awp grant [--ttl 1h] PEER CAP..."
 * ```
 */
export const PEER_COMMANDS: Record<string, Command> = {
  peers: {
    summary: "list known peers",
    usage: "awp peers",
    flags: [],
    async run(ctx) {
      await callPrint<{ peers: PeerSummary[] }>(
        ctx,
        "peers",
        {},
        (r, out) =>
          r.peers.length === 0
            ? "no peers"
            : r.peers.map((p) => peerLine(out, p)),
      );
      return 0;
    },
  },
  blobs: {
    summary: "list files sent and received, with local paths",
    usage: "awp blobs [-p PEER]",
    flags: [{ name: "peer", short: "p", type: "string" }],
    async run(ctx) {
      await callPrint<{ blobs: BlobRow[] }>(
        ctx,
        "blobs",
        { peer: ctx.args.string("peer") },
        (r) =>
          r.blobs.length === 0
            ? "no blobs"
            : r.blobs.map((b) =>
              `${b.dir === "out" ? "sent" : "recv"} ${b.name ?? b.ref} ${
                formatBytes(b.size)
              } ${b.status} ${shortKey(b.peer)} ${b.path}`
            ),
      );
      return 0;
    },
  },
  grant: {
    summary:
      "grant capabilities to a peer (exec, fs:read, fs:write, introduce, admin)",
    usage: "awp grant [--ttl 1h] PEER CAP...",
    flags: [{ name: "ttl", type: "string" }],
    async run(ctx) {
      needPositional(ctx.args, 2, "peer and capability");
      const [to, ...caps] = ctx.args.positionals;
      const ttlMs = parseDuration(ctx.args.string("ttl") ?? "1h");
      await callPrint<{
        hash: string;
        grant: { sub: string; caps: string[]; exp: string };
      }>(
        ctx,
        "grant",
        { to, caps, ttlMs },
        (r) =>
          `granted ${r.grant.caps.join(",")} to ${
            shortKey(r.grant.sub)
          } until ${r.grant.exp} (${r.hash})`,
      );
      return 0;
    },
  },
  grants: {
    summary: "list grants issued, held and presented",
    usage: "awp grants",
    flags: [],
    async run(ctx) {
      await callPrint<{ grants: GrantRow[] }>(
        ctx,
        "grants",
        {},
        (r) =>
          r.grants.length === 0
            ? "no grants"
            : r.grants.map((g) =>
              `${g.kind} ${g.grant.caps.join(",")} ${
                who(g.grant.iss, g.issName)
              } -> ${who(g.grant.sub, g.subName)} until ${g.grant.exp}${
                g.revoked ? " revoked" : ""
              } ${g.hash}`
            ),
      );
      return 0;
    },
  },
  revoke: {
    summary: "stop honoring a grant, by hash",
    usage: "awp revoke HASH",
    flags: [],
    async run(ctx) {
      needPositional(ctx.args, 1, "grant hash");
      const hash = ctx.args.positionals[0];
      await callPrint(ctx, "revoke", { hash }, () => `revoked ${hash}`);
      return 0;
    },
  },
  introduce: {
    summary: "send TO the key and address of PEER, with a grant bound to PEER",
    usage: "awp introduce [-t THREAD] [--ttl 1h] TO PEER [CAP...]",
    flags: [{ name: "thread", short: "t", type: "string" }, {
      name: "ttl",
      type: "string",
    }],
    async run(ctx) {
      needPositional(ctx.args, 2, "the peer to tell and the peer to introduce");
      const [to, peer, ...caps] = ctx.args.positionals;
      await callPrint(ctx, "introduce", {
        to,
        peer,
        caps,
        thread: ctx.args.string("thread"),
        ttlMs: parseDuration(ctx.args.string("ttl") ?? "1h"),
      }, () => `introduced ${peer} to ${to}`);
      return 0;
    },
  },
  bye: {
    summary: "close the connection to a peer gracefully",
    usage: "awp bye [--reason done] PEER",
    flags: [{ name: "reason", type: "string" }],
    async run(ctx) {
      needPositional(ctx.args, 1, "peer");
      await callPrint<{ key: string; name?: string; connected: boolean }>(
        ctx,
        "bye",
        { to: ctx.args.positionals[0], reason: ctx.args.string("reason") },
        (r) =>
          r.connected
            ? `said bye to ${who(r.key, r.name)}`
            : `${who(r.key, r.name)} is not connected`,
      );
      return 0;
    },
  },
  alias: {
    summary: "give a peer a local nickname",
    usage: "awp alias PEER ALIAS",
    flags: [],
    async run(ctx) {
      needPositional(ctx.args, 2, "peer and alias");
      const [peer, alias] = ctx.args.positionals;
      await callPrint<{ key: string }>(
        ctx,
        "alias",
        { peer, alias },
        (r) => `${alias} = ${r.key}`,
      );
      return 0;
    },
  },
};
