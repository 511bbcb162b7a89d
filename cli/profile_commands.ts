/**
 * The coding-agent profile's verbs: `awp exec`, `cat`, `put` and `ls` send
 * a request to a peer that serves it (`--serve`) and has granted us the
 * capability, wait for the result and print it. A refused request
 * (`err forbidden`) fails the command with the reason.
 *
 * @module
 */

import { parseDuration, UsageError } from "./args.ts";
import {
  atMostPositionals,
  type Command,
  type CommandContext,
  printAnswer,
} from "./command.ts";
import { ControlError } from "./control.ts";
import type { RequestResult } from "./protocol.ts";
import type { ReceivedBlob } from "../peer/peer_events.ts";
import { decodeBase64, encodeBase64 } from "../wire/base64.ts";
import { errorText } from "../wire/error_text.ts";
import { writeAll } from "../net/write_all.ts";

/** How long `cat`, `put` and `ls` wait for the answer by default. */
const FS_TIMEOUT = "1m";
/** Extra time beyond an exec's own timeout for the result to come back. */
const EXEC_REPLY_GRACE_MS = 30_000;
/** The profile's default exec timeout, seconds. */
const EXEC_TIMEOUT_S = 600;

async function request(
  ctx: CommandContext,
  cap: "exec" | "fs:read" | "fs:write",
  data: Record<string, unknown>,
  timeoutMs: number,
): Promise<RequestResult> {
  const [to] = ctx.args.positionals;
  const reply = await ctx.call("request", {
    to,
    cap,
    data,
    timeoutMs,
  }, { start: true }) as RequestResult;
  if (!reply.ok && !reply.timedOut && reply.result === undefined) {
    // The peer's `err` (e.g. forbidden): nothing ran there.
    throw new ControlError(`${to} refused the ${cap} request: ${reply.error}`);
  }
  if (reply.timedOut) {
    throw new ControlError(
      `no answer from ${to} within ${
        Math.round(timeoutMs / 1000)
      }s (does it serve ${cap}? awp up --serve ${cap} there; see awp read ${reply.th})`,
      2,
    );
  }
  // An exec that timed out or could not start still reports its output.
  const error = reply.result?.error;
  if (typeof error === "string" && cap !== "exec") {
    throw new ControlError(`${to}: ${cap} failed: ${error}`);
  }
  return reply;
}

/** An fs:read request for `path`, within `--timeout` (default 1m). */
async function readRemote(
  ctx: CommandContext,
  path: string,
): Promise<RequestResult> {
  return await request(
    ctx,
    "fs:read",
    { path },
    parseDuration(ctx.args.string("timeout") ?? FS_TIMEOUT),
  );
}

function needPeerAndPath(ctx: CommandContext, what: string): string {
  const p = ctx.args.positionals;
  if (p.length < 2) throw new UsageError(`missing peer and ${what}`);
  atMostPositionals(ctx.args, 2);
  return p[1];
}

/** The files the result came with, received. */
function blobsOf(reply: RequestResult): ReceivedBlob[] {
  return (reply.reply?.blobs ?? []) as ReceivedBlob[];
}

/** The file a result attached (`blob` names it), once received. */
function attached(reply: RequestResult, name: unknown): string | undefined {
  const blobs = blobsOf(reply);
  const blob = blobs.find((b) => b.name === name) ?? blobs[0];
  if (!blob) return undefined;
  if (blob.status !== "complete" || !blob.path) {
    throw new ControlError(
      `the result's file ${
        blob.name ?? blob.ref
      } did not arrive (${blob.status}${
        blob.detail ? `: ${blob.detail}` : ""
      })`,
    );
  }
  return blob.path;
}

/**
 * `exec`, `cat`, `put` and `ls`, by name.
 *
 * @example
 * ```ts
 * import { PROFILE_COMMANDS } from "./profile_commands.ts";
 * console.log(Object.keys(PROFILE_COMMANDS)); // [ "exec", "cat", "put", "ls" ]
 * ```
 */
export const PROFILE_COMMANDS: Record<string, Command> = {
  exec: {
    summary:
      "run a command on a peer (it must serve exec and have granted it); exits with its exit code",
    usage: "awp exec [--cwd DIR] [--timeout 10m] PEER -- CMD [ARG...]",
    flags: [
      { name: "cwd", type: "string" },
      { name: "timeout", type: "string" },
    ],
    help:
      "Prints the command's stdout and stderr as they come back, on stdout and stderr.\n" +
      "A command line given as one word runs under /bin/sh -c there.",
    async run(ctx) {
      const [peer, ...cmd] = ctx.args.positionals;
      if (!peer) throw new UsageError("missing peer");
      if (cmd.length === 0) throw new UsageError("missing command (after --)");
      const timeoutS = ctx.args.has("timeout")
        ? parseDuration(ctx.args.string("timeout")!) / 1000
        : EXEC_TIMEOUT_S;
      const data = {
        cmd: cmd.length === 1 ? cmd[0] : cmd,
        timeout: timeoutS,
        ...(ctx.args.string("cwd") ? { cwd: ctx.args.string("cwd") } : {}),
      };
      const reply = await request(
        ctx,
        "exec",
        data,
        timeoutS * 1000 + EXEC_REPLY_GRACE_MS,
      );
      const r = reply.result ?? {};
      if (ctx.out.json) ctx.out.value(reply);
      else {
        const encoder = new TextEncoder();
        const full = (which: "stdout" | "stderr") =>
          r[`${which}_truncated`] === true
            ? blobsOf(reply).find((b) => b.name?.startsWith(which))
            : undefined;
        for (const which of ["stdout", "stderr"] as const) {
          const sink = which === "stdout" ? Deno.stdout : Deno.stderr;
          const file = full(which);
          const bytes = file?.status === "complete" && file.path
            ? await Deno.readFile(file.path)
            : encoder.encode(String(r[which] ?? ""));
          await writeAll(sink, bytes);
        }
        if (r.timed_out === true) ctx.out.error("timed out on the peer");
        else if (typeof r.error === "string") ctx.out.error(r.error);
      }
      const exit = typeof r.exit === "number" ? r.exit : 1;
      return exit >= 0 && exit <= 255 ? exit : 1;
    },
  },
  cat: {
    summary:
      "print a file of a peer (it must serve fs:read and have granted it)",
    usage: "awp cat [--timeout 1m] PEER PATH",
    flags: [{ name: "timeout", type: "string" }],
    async run(ctx) {
      const path = needPeerAndPath(ctx, "path");
      const reply = await readRemote(ctx, path);
      const r = reply.result ?? {};
      if (r.dir === true) {
        throw new ControlError(`${path} is a directory (awp ls)`);
      }
      if (ctx.out.json) {
        ctx.out.value(reply);
        return 0;
      }
      const file = typeof r.blob === "string"
        ? attached(reply, r.blob)
        : undefined;
      const bytes = file !== undefined
        ? await Deno.readFile(file)
        : r.encoding === "base64"
        ? decodeBase64(String(r.content ?? ""))
        : new TextEncoder().encode(String(r.content ?? ""));
      await writeAll(Deno.stdout, bytes);
      return 0;
    },
  },
  put: {
    summary:
      "write a file on a peer from --from FILE or stdin (it must serve fs:write and have granted it)",
    usage: "awp put [--from FILE] [--mkdir] [--append] PEER PATH",
    flags: [
      { name: "from", type: "string" },
      { name: "mkdir", type: "boolean" },
      { name: "append", type: "boolean" },
      { name: "timeout", type: "string" },
    ],
    async run(ctx) {
      const path = needPeerAndPath(ctx, "path");
      const from = ctx.args.string("from");
      let bytes: Uint8Array;
      try {
        bytes = from === undefined || from === "-"
          ? new Uint8Array(
            await new Response(Deno.stdin.readable).arrayBuffer(),
          )
          : await Deno.readFile(from);
      } catch (error) {
        throw new ControlError(
          `cannot read ${from}: ${
            error instanceof Deno.errors.NotFound
              ? "no such file"
              : errorText(error)
          }`,
        );
      }
      let content: string;
      let encoding = "utf-8";
      try {
        content = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
      } catch {
        content = encodeBase64(bytes);
        encoding = "base64";
      }
      const reply = await request(ctx, "fs:write", {
        path,
        content,
        encoding,
        ...(ctx.args.bool("mkdir") ? { mkdir: true } : {}),
        ...(ctx.args.bool("append") ? { append: true } : {}),
      }, parseDuration(ctx.args.string("timeout") ?? FS_TIMEOUT));
      printAnswer(
        ctx.out,
        reply,
        (r) => `wrote ${r.result?.written ?? bytes.length} bytes to ${path}`,
      );
      return 0;
    },
  },
  ls: {
    summary:
      "list a directory of a peer (it must serve fs:read and have granted it)",
    usage: "awp ls [--timeout 1m] PEER [PATH]",
    flags: [{ name: "timeout", type: "string" }],
    async run(ctx) {
      const p = ctx.args.positionals;
      if (p.length < 1) throw new UsageError("missing peer");
      atMostPositionals(ctx.args, 2);
      const path = p[1] ?? ".";
      printAnswer(ctx.out, await readRemote(ctx, path), (reply) => {
        const r = reply.result ?? {};
        return Array.isArray(r.entries)
          ? r.entries.map(String)
          : String(r.path ?? path); // a file: its own name, as ls does
      });
      return 0;
    },
  },
};
