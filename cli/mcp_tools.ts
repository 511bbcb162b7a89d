/**
 * The tools `awp mcp` offers a coding agent (awp_listen, awp_status,
 * awp_connect, awp_send, awp_read, awp_state, awp_grant, awp_threads,
 * awp_peers, awp_request, awp_blob_fetch): each one control request to the
 * daemon, its answer as text for the model (remote text wrapped as
 * untrusted input) and as structured content.
 *
 * @module
 */

import type { McpServer } from "npm:@modelcontextprotocol/sdk@^1.32.2/server/mcp.js";
import type {
  CallToolResult,
  ServerNotification,
} from "npm:@modelcontextprotocol/sdk@^1.32.2/types.js";
import { z } from "npm:zod@^4.1.0";
import { parseDuration, UsageError } from "./args.ts";
import { ControlError } from "./control.ts";
import {
  peerLabel,
  renderItems,
  UNTRUSTED_NOTICE,
  wrapUntrusted,
} from "./agent_text.ts";
import type {
  InboxItem,
  PeerSummary,
  RequestResult,
  SendResult,
  StatusResult,
  ThreadRow,
  WaitResult,
} from "./protocol.ts";
import type { DaemonLink } from "./daemon_link.ts";
import { errorText } from "../wire/error_text.ts";

/** Longest a tool waits (read, request, blob fetch), seconds. */
const MAX_WAIT_S = 600;

type Extra = {
  signal: AbortSignal;
  _meta?: { progressToken?: string | number };
  sendNotification: (n: ServerNotification) => Promise<void>;
};

function text(
  body: string,
  structured?: Record<string, unknown>,
): CallToolResult {
  return {
    content: [{ type: "text", text: body }],
    ...(structured ? { structuredContent: structured } : {}),
  };
}

function failure(message: string): CallToolResult {
  return { content: [{ type: "text", text: message }], isError: true };
}

/**
 * Runs `fn`, sending a progress notification every `everyMs` when the client
 * gave a progress token, so a client that resets its timeout on progress
 * does not give up on a long wait.
 */
async function withHeartbeat<T>(
  everyMs: number,
  extra: Extra,
  fn: () => Promise<T>,
): Promise<T> {
  const token = extra._meta?.progressToken;
  if (token === undefined) return await fn();
  let n = 0;
  const timer = setInterval(() => {
    extra.sendNotification({
      method: "notifications/progress",
      params: { progressToken: token, progress: ++n, message: "waiting" },
    }).catch(() => {});
  }, everyMs);
  try {
    return await fn();
  } finally {
    clearInterval(timer);
  }
}

function absolutePath(path: string): string {
  if (path.startsWith("/")) return path;
  if (path === "~" || path.startsWith("~/")) {
    return `${Deno.env.get("HOME") ?? ""}${path.slice(1)}`;
  }
  return `${Deno.cwd()}/${path}`;
}

function seconds(value: number | undefined, fallback: number): number {
  const s = value ?? fallback;
  return Math.max(0, Math.min(MAX_WAIT_S, s));
}

function sendStatus(r: SendResult): string {
  return r.acked
    ? "acknowledged by the peer (durable there)"
    : r.connected
    ? "sent, not acknowledged yet"
    : "queued: it is delivered when the peer is reachable";
}

function peerLine(p: PeerSummary): string {
  return `- ${peerLabel(p.key, p.alias ?? p.name)}: ${
    p.connected ? "connected" : p.waking ? "waking" : "away"
  }, ${p.openThreads} open threads, ${p.unread} unread, ${p.queued} queued${
    p.caps.length ? `, holds ${p.caps.join(",")} on you` : ""
  }`;
}

function threadLines(rows: ThreadRow[]): string {
  if (rows.length === 0) return "No threads.";
  // Subjects and names may come from the other agent: wrap the listing.
  return `${UNTRUSTED_NOTICE}\n${
    wrapUntrusted(
      rows.map((t) =>
        `${t.th} with ${peerLabel(t.peer, t.peerName)}: you ${
          t.mine?.state ?? "-"
        }, them ${t.theirs?.state ?? "-"}, ${t.unread} unread, subject: ${
          t.subject ?? "(none)"
        }`
      ).join("\n"),
      { kind: "threads" },
    )
  }`;
}

const CAPS = ["exec", "fs:read", "fs:write", "introduce", "admin"] as const;

/** What the tools share with the server they are registered on. */
export interface ToolContext {
  daemon: DaemonLink;
  /** How often a long wait sends a progress notification, ms. */
  heartbeatMs: number;
  /** A thread was seen: the resource list changes when it is new. */
  threadsChanged(th: string | undefined): void;
}

/**
 * Registers every awp tool on `server`.
 *
 * @example
 * ```ts ignore
 * import { registerTools } from "./mcp_tools.ts";
 * import { DaemonLink } from "./daemon_link.ts";
 * import type { McpServer } from "npm:@modelcontextprotocol/sdk@^1.32.2/server/mcp.js";
 * const server = new McpServer({ name: "awp", version: "0" });
 * registerTools(server, { daemon: new DaemonLink("/tmp/h"), heartbeatMs: 15_000, threadsChanged() {} });
 * ```
 */
export function registerTools(
  server: McpServer,
  { daemon, heartbeatMs, threadsChanged }: ToolContext,
): void {
  const tool = <S extends z.ZodRawShape>(
    name: string,
    description: string,
    shape: S,
    run: (
      args: z.infer<z.ZodObject<S>>,
      extra: Extra,
    ) => Promise<CallToolResult>,
    annotations: Record<string, boolean> = {},
  ) => {
    server.registerTool(
      name,
      { description, inputSchema: shape, annotations },
      async (args: unknown, extra: Extra) => {
        try {
          // The SDK validated args against `shape`.
          return await run(args as z.infer<z.ZodObject<S>>, extra);
        } catch (error) {
          // Daemon and usage errors are one line already: the model reads them.
          return failure(errorText(error));
        }
      },
    );
  };

  tool(
    "awp_listen",
    "Start this machine's awp peer if needed and return its identity and the addresses to share with another agent. An address lets an agent reach you: share it only with the agent you mean to talk to. With address, also listen there (tcp:HOST:PORT or unix:/path).",
    { address: z.string().optional().describe("extra address to listen on") },
    async ({ address }) => {
      const r = await daemon.call(
        "listen",
        address ? { addr: address } : {},
      ) as {
        key: string;
        addrs: string[];
      };
      return text(
        `You are ${r.key}.\nAddresses to share:\n${
          r.addrs.map((a) => `- ${a}`).join("\n")
        }`,
        { key: r.key, addrs: r.addrs },
      );
    },
  );

  tool(
    "awp_status",
    "Show this peer's identity and addresses, known peers (connected or away, unread, queued) and unread counts.",
    {},
    async () => {
      const s = await daemon.call("status") as StatusResult;
      const lines = [
        `You are ${s.name ?? "awp"}, key ${s.key}.`,
        `Addresses: ${s.addrs.join(" ")}`,
        `${s.unread} unread, ${s.queued} queued, ${s.notices} notices.`,
        ...(s.peers.length
          ? ["Peers:", ...s.peers.map(peerLine)]
          : ["No peers yet."]),
      ];
      return text(lines.join("\n"), {
        key: s.key,
        addrs: s.addrs,
        unread: s.unread,
        peers: s.peers.map((p) => ({
          key: p.key,
          connected: p.connected,
          unread: p.unread,
        })),
      });
    },
    { readOnlyHint: true },
  );

  tool(
    "awp_connect",
    "Connect to another agent's awp address (tcp:HOST:PORT or unix:/path), or reconnect to a known peer by name. The connection is kept and resumed after drops.",
    {
      address: z.string().describe(
        "the address the other agent shared, or a known peer's name",
      ),
    },
    async ({ address }) => {
      const r = await daemon.call("connect", { target: address }) as {
        key: string;
        name?: string;
        already: boolean;
      };
      return text(
        `${r.already ? "Already connected to" : "Connected to"} ${
          peerLabel(r.key, r.name)
        }, key ${r.key}.`,
        { key: r.key, already: r.already },
      );
    },
  );

  tool(
    "awp_send",
    "Send a message to a peer. Without thread, opens a new thread: give it a subject that reads like a task title. To reply, pass the thread id (peer can then be left out). Never fails because the peer is away: the message is queued durably and delivered when it is reachable.",
    {
      peer: z.string().optional().describe(
        "peer name, alias, key prefix or address; optional when thread is given",
      ),
      thread: z.string().optional().describe("thread id to reply in"),
      subject: z.string().optional().describe("subject of a new thread"),
      text: z.string().optional().describe("message text (markdown)"),
      re: z.string().optional().describe("id of the message this answers"),
      code: z.string().optional().describe("code to attach, without fences"),
      lang: z.string().optional().describe(
        "language of code, e.g. diff, ts, python",
      ),
      data: z.record(z.string(), z.unknown()).optional().describe(
        "structured data to attach, e.g. {repo, branch, commit}",
      ),
      mime: z.string().optional().describe(
        "mime type of data (default application/json)",
      ),
      files: z.array(z.string()).optional().describe(
        "paths of files to attach (sent as blobs)",
      ),
      wait_ack_seconds: z.number().min(0).max(600).optional().describe(
        "wait this long for the peer to acknowledge",
      ),
    },
    async (a) => {
      if (!a.peer && !a.thread) {
        throw new UsageError("give peer (or thread to reply in)");
      }
      const parts: unknown[] = [];
      if (a.code !== undefined) {
        parts.push({
          k: "code",
          text: a.code,
          ...(a.lang ? { lang: a.lang } : {}),
        });
      }
      if (a.data !== undefined) {
        parts.push({
          k: "data",
          mime: a.mime ?? "application/json",
          data: a.data,
        });
      }
      const r = await daemon.call("send", {
        ...(a.peer ? { to: a.peer } : {}),
        ...(a.thread ? { thread: a.thread } : {}),
        words: a.text ? [a.text] : [],
        ...(a.subject ? { subject: a.subject } : {}),
        ...(a.re ? { re: a.re } : {}),
        parts,
        files: (a.files ?? []).map(absolutePath),
        ...(a.wait_ack_seconds !== undefined
          ? { waitAckMs: a.wait_ack_seconds * 1000 }
          : {}),
      }) as SendResult;
      threadsChanged(r.th);
      return text(
        `Sent message ${r.id} in thread ${r.th}: ${sendStatus(r)}.${
          r.note ? `\n${r.note}` : ""
        }`,
        {
          id: r.id,
          thread: r.th,
          peer: r.peer,
          acked: r.acked,
          connected: r.connected,
        },
      );
    },
  );

  tool(
    "awp_read",
    'Read awp messages. By default returns unread messages (and notices) from every peer and marks them read. wait_seconds (up to 600) waits until something new arrives, returning as soon as it does: use it to wait for a reply instead of polling. until_state (with thread and wait_seconds) waits until the peer\'s state on the thread is one of them, e.g. ["done","failed"]. history returns the thread\'s conversation in both directions.',
    {
      thread: z.string().optional().describe("only this thread"),
      peer: z.string().optional().describe("only this peer"),
      wait_seconds: z.number().min(0).max(MAX_WAIT_S).optional().describe(
        "wait up to this long for something new",
      ),
      until_state: z.array(z.string()).optional().describe(
        "with thread: wait for one of these states of the peer",
      ),
      history: z.boolean().optional().describe(
        "the conversation so far instead of unread messages",
      ),
    },
    async (a, extra) => {
      const filters = {
        ...(a.thread ? { thread: a.thread } : {}),
        ...(a.peer ? { peer: a.peer } : {}),
      };
      if (a.history) {
        const r = await daemon.call("read", {
          ...filters,
          last: 100,
          mark: true,
        }) as {
          items: InboxItem[];
        };
        return text(renderItems(r.items) || "No messages.", {
          count: r.items.length,
          ids: r.items.map((i) => i.id),
        });
      }
      const wait = seconds(a.wait_seconds, 0);
      if (a.until_state?.length && !a.thread) {
        throw new UsageError("until_state needs thread");
      }
      if (wait > 0 || a.until_state?.length) {
        const r = await withHeartbeat(
          heartbeatMs,
          extra,
          () =>
            daemon.call("wait", {
              ...filters,
              ...(a.until_state?.length ? { states: a.until_state } : {}),
              timeoutMs: (wait || MAX_WAIT_S) * 1000,
            }, { signal: extra.signal }),
        ) as WaitResult;
        const body = renderItems(r.items);
        const tail = r.matched !== undefined
          ? `The peer's state is ${r.state ?? "unknown"}${
            r.matched ? "" : " (not one of those asked for)"
          }.`
          : r.timedOut
          ? `Nothing new after ${wait}s.`
          : "";
        return text([body, tail].filter(Boolean).join("\n") || "No messages.", {
          count: r.items.length,
          ids: r.items.map((i) => i.id),
          timedOut: r.timedOut,
          ...(r.matched !== undefined ? { matched: r.matched } : {}),
          ...(r.state ? { state: r.state } : {}),
        });
      }
      const r = await daemon.call("tail", {
        ...filters,
        follow: false,
        mark: true,
      }) as {
        items: InboxItem[];
      };
      return text(renderItems(r.items) || "No unread messages.", {
        count: r.items.length,
        ids: r.items.map((i) => i.id),
      });
    },
  );

  tool(
    "awp_state",
    "Tell the peer your state on a thread: working (you are on it), waiting (you need a reply), done, failed (say why in note) or closed.",
    {
      thread: z.string().describe("thread id"),
      state: z.string().describe(
        "working, waiting, done, failed, closed or open",
      ),
      note: z.string().optional().describe("a short note"),
      peer: z.string().optional().describe(
        "the peer, when the thread id exists with several",
      ),
    },
    async (a) => {
      const r = await daemon.call("state", {
        thread: a.thread,
        state: a.state,
        ...(a.note ? { note: a.note } : {}),
        ...(a.peer ? { to: a.peer } : {}),
      }) as SendResult;
      return text(`State ${a.state} on ${r.th}: ${sendStatus(r)}.`, {
        id: r.id,
        thread: r.th,
        acked: r.acked,
      });
    },
  );

  tool(
    "awp_grant",
    "Grant a peer capabilities on this machine: exec, fs:read, fs:write, introduce, admin. exec and fs:write let the peer run code here: grant them only with your user's explicit approval, and keep ttl short.",
    {
      peer: z.string().describe("peer name, alias or key prefix"),
      caps: z.array(z.enum(CAPS)).min(1).describe("capabilities to grant"),
      ttl: z.string().optional().describe(
        "how long, e.g. 30m, 1h (default 1h)",
      ),
    },
    async (a) => {
      const r = await daemon.call("grant", {
        to: a.peer,
        caps: a.caps,
        ttlMs: parseDuration(a.ttl ?? "1h"),
      }) as {
        hash: string;
        grant: { sub: string; caps: string[]; exp: string };
      };
      return text(
        `Granted ${
          r.grant.caps.join(",")
        } to ${r.grant.sub} until ${r.grant.exp} (grant ${r.hash}).`,
        {
          hash: r.hash,
          sub: r.grant.sub,
          caps: r.grant.caps,
          exp: r.grant.exp,
        },
      );
    },
    { destructiveHint: true },
  );

  tool(
    "awp_threads",
    "List threads, most recently active first, with each side's state and unread counts.",
    {
      open: z.boolean().optional().describe(
        "only threads not done, failed or closed",
      ),
      peer: z.string().optional().describe("only this peer"),
    },
    async (a) => {
      const r = await daemon.call("threads", {
        open: a.open === true,
        ...(a.peer ? { peer: a.peer } : {}),
      }) as { threads: ThreadRow[] };
      return text(threadLines(r.threads), {
        threads: r.threads.map((t) => ({
          thread: t.th,
          peer: t.peer,
          unread: t.unread,
          mine: t.mine?.state,
          theirs: t.theirs?.state,
        })),
      });
    },
    { readOnlyHint: true },
  );

  tool(
    "awp_peers",
    "List known peers: connected or away, open threads, unread, queued, and the capabilities they hold on you.",
    {},
    async () => {
      const r = await daemon.call("peers") as { peers: PeerSummary[] };
      return text(
        r.peers.length ? r.peers.map(peerLine).join("\n") : "No peers yet.",
        {
          peers: r.peers.map((p) => ({
            key: p.key,
            connected: p.connected,
            unread: p.unread,
            caps: p.caps,
          })),
        },
      );
    },
    { readOnlyHint: true },
  );

  tool(
    "awp_request",
    "Ask a peer that granted you the capability to run a command (exec), read a file or directory (fs:read) or write a file (fs:write) on its machine, and wait for the result. Paths are relative to the root the peer serves.",
    {
      peer: z.string().describe("peer name, alias or key prefix"),
      kind: z.enum(["exec", "fs:read", "fs:write"]).describe("what to do"),
      cmd: z.union([z.array(z.string()), z.string()]).optional().describe(
        "exec: argv array, or a string run with /bin/sh -c",
      ),
      cwd: z.string().optional().describe(
        "exec: working directory under the peer's root",
      ),
      env: z.record(z.string(), z.string()).optional().describe(
        "exec: extra environment variables",
      ),
      stdin: z.string().optional().describe("exec: text fed to standard input"),
      timeout: z.number().positive().optional().describe(
        "exec: seconds before the command is killed (default 600)",
      ),
      path: z.string().optional().describe(
        "fs:read / fs:write: the file's path",
      ),
      offset: z.number().int().min(0).optional().describe(
        "fs:read: first byte",
      ),
      length: z.number().int().positive().optional().describe(
        "fs:read: most bytes",
      ),
      content: z.string().optional().describe("fs:write: what to write"),
      encoding: z.enum(["utf-8", "base64"]).optional().describe(
        "fs:write: encoding of content",
      ),
      append: z.boolean().optional().describe(
        "fs:write: append instead of replace",
      ),
      mkdir: z.boolean().optional().describe(
        "fs:write: create missing directories",
      ),
      thread: z.string().optional().describe(
        "thread to send the request in (default: a new one)",
      ),
      wait_seconds: z.number().min(1).max(MAX_WAIT_S).optional().describe(
        "how long to wait for the result (default 600)",
      ),
    },
    async (a, extra) => {
      const pick = (keys: string[]) =>
        Object.fromEntries(
          keys.filter((k) => (a as Record<string, unknown>)[k] !== undefined)
            .map((k) => [k, (a as Record<string, unknown>)[k]]),
        );
      const data = a.kind === "exec"
        ? pick(["cmd", "cwd", "env", "stdin", "timeout"])
        : a.kind === "fs:read"
        ? pick(["path", "offset", "length"])
        : pick(["path", "content", "encoding", "append", "mkdir"]);
      if (a.kind === "exec" && data.cmd === undefined) {
        throw new UsageError("exec needs cmd");
      }
      if (a.kind !== "exec" && data.path === undefined) {
        throw new UsageError(`${a.kind} needs path`);
      }
      if (a.kind === "fs:write" && data.content === undefined) {
        throw new UsageError("fs:write needs content");
      }
      const wait = seconds(a.wait_seconds, MAX_WAIT_S);
      const r = await withHeartbeat(
        heartbeatMs,
        extra,
        () =>
          daemon.call("request", {
            to: a.peer,
            cap: a.kind,
            data,
            timeoutMs: wait * 1000,
            ...(a.thread ? { thread: a.thread } : {}),
            subject: a.kind === "exec"
              ? `exec ${Array.isArray(a.cmd) ? a.cmd.join(" ") : a.cmd}`.slice(
                0,
                120,
              )
              : `${a.kind} ${a.path}`.slice(0, 120),
          }, { signal: extra.signal }),
      ) as RequestResult;
      threadsChanged(r.th);
      const structured = {
        id: r.id,
        thread: r.th,
        ok: r.ok,
        ...(r.result ? { result: r.result } : {}),
        ...(r.error ? { error: r.error } : {}),
        ...(r.timedOut ? { timedOut: true } : {}),
      };
      if (r.timedOut) {
        return {
          ...text(
            `No result within ${wait}s for request ${r.id} (thread ${r.th}); it may still come: awp_read with thread ${r.th}.`,
            structured,
          ),
          isError: true,
        };
      }
      if (!r.reply) {
        // The peer refused (err forbidden): our own words, nothing remote but the code.
        return {
          ...text(`The peer refused request ${r.id}: ${r.error}`, structured),
          isError: true,
        };
      }
      // The result (stdout, file contents) was produced on the other machine.
      const result = renderItems([r.reply], { maxText: 32_000 });
      return {
        ...text(result, structured),
        ...(r.ok ? {} : { isError: true }),
      };
    },
  );

  tool(
    "awp_blob_fetch",
    "Save a file a peer sent (a blob, named by its ref as shown in messages) to a path on this machine.",
    {
      ref: z.string().describe("the blob's ref"),
      path: z.string().describe(
        "where to save it (a directory keeps the file's name)",
      ),
      peer: z.string().optional().describe(
        "the peer that sent it, when refs collide",
      ),
      wait_seconds: z.number().min(0).max(MAX_WAIT_S).optional().describe(
        "wait this long for a transfer still in progress",
      ),
      overwrite: z.boolean().optional().describe(
        "replace a file already at the path",
      ),
    },
    async (a, extra) => {
      const deadline = Date.now() + seconds(a.wait_seconds, 0) * 1000;
      type Blob = {
        peer: string;
        ref: string;
        dir: string;
        name?: string;
        size: number;
        bytes: number;
        status: string;
        path: string;
        sha256?: string;
      };
      let blob: Blob | undefined;
      while (true) {
        const r = await daemon.call(
          "blobs",
          a.peer ? { peer: a.peer } : {},
        ) as { blobs: Blob[] };
        const hits = r.blobs.filter((b) => b.dir === "in" && b.ref === a.ref);
        if (hits.length > 1) {
          throw new UsageError(`several peers sent a blob ${a.ref}: give peer`);
        }
        blob = hits[0];
        if (!blob) throw new ControlError(`no received blob with ref ${a.ref}`);
        if (
          blob.status !== "active" || Date.now() >= deadline ||
          extra.signal.aborted
        ) break;
        await new Promise((r) => setTimeout(r, 250));
      }
      if (blob.status !== "complete") {
        return failure(
          `blob ${a.ref} is ${blob.status} (${blob.bytes} of ${blob.size} bytes)`,
        );
      }
      let dest = absolutePath(a.path);
      const exists = async (path: string) =>
        await Deno.lstat(path).then((i) => i, () => undefined);
      if ((await exists(dest))?.isDirectory) {
        // The name came from the other agent: its last segment only, no dot files.
        const base = (blob.name ?? "").split("/").pop()!.replace(/^\.+/, "") ||
          blob.ref.replace(/[^\w.-]/g, "_").replace(/^\.+/, "") || "blob";
        dest = `${dest.replace(/\/$/, "")}/${base}`;
      }
      if (!a.overwrite && await exists(dest)) {
        return failure(`${dest} already exists: give overwrite to replace it`);
      }
      await Deno.copyFile(blob.path, dest);
      return text(
        `Saved ${blob.size} bytes to ${dest}${
          blob.sha256 ? ` (sha256 ${blob.sha256})` : ""
        }.`,
        {
          path: dest,
          size: blob.size,
          ...(blob.sha256 ? { sha256: blob.sha256 } : {}),
        },
      );
    },
  );
}
