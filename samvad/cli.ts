/**
 * `awp samvad`: serve the SAMVAD bridge in the daemon, call a SAMVAD
 * agent, or show the bridge. A thin layer over the daemon's `samvad` op
 * (see ./daemon_op.ts); this module imports nothing heavy.
 *
 * @module
 */

import { UsageError } from "../cli/args.ts";
import type { Command } from "../cli/command.ts";

const USAGE = [
  "awp samvad serve --listen HOST:PORT --skills FILE [--to PEER] [--http-loopback]",
  "       awp samvad call AGENT SKILL [--payload JSON] [--mode sync|async|stream] [--delegation JWT] [--token BEARER] [--http-loopback]",
  "       awp samvad status",
].join("\n");

const HELP = [
  "",
  "serve   starts the SAMVAD bridge in the daemon (starting the daemon if need be):",
  "        GET /.well-known/agent.json, /agent/intro, /agent/health; POST /agent/message,",
  "        /agent/task, /agent/stream; GET /agent/task/:taskId. Each verified call becomes",
  '        an AWP thread to PEER (or "to" in FILE): skill -> subject, payload -> data part;',
  "        the reply msg's data part is the result. `awp up --samvad-listen HOST:PORT",
  "        --samvad-skills FILE [--samvad-to PEER]` starts it with the daemon.",
  "call    calls SKILL of AGENT (agent://host) with this peer's key and prints the result.",
  "--http-loopback  http instead of https for 127.0.0.1, ::1 and localhost agents and",
  "        callbacks (local setups and tests); never for other hosts.",
].join("\n");

/**
 * The `samvad` command.
 *
 * @example
 * ```ts
 * import { SAMVAD_COMMAND } from "./cli.ts";
 * console.log(SAMVAD_COMMAND.usage.startsWith("awp samvad")); // true
 * ```
 */
export const SAMVAD_COMMAND: Command = {
  summary: "talk to SAMVAD agents: serve the bridge, call an agent",
  usage: USAGE,
  help: HELP,
  flags: [
    { name: "listen", type: "string" },
    { name: "skills", type: "string" },
    { name: "to", type: "string" },
    { name: "payload", type: "string" },
    { name: "mode", type: "string" },
    { name: "delegation", type: "string" },
    { name: "token", type: "string" },
    { name: "http-loopback", type: "boolean" },
  ],
  async run(ctx) {
    const [action, ...rest] = ctx.args.positionals;
    const httpLoopback = ctx.args.bool("http-loopback");
    if (action === "serve") {
      const listen = ctx.args.string("listen");
      const skills = ctx.args.string("skills");
      if (!listen || !skills) {
        throw new UsageError(
          "samvad serve needs --listen HOST:PORT and --skills FILE",
        );
      }
      if (rest.length > 0) {
        throw new UsageError(`unexpected argument "${rest[0]}"`);
      }
      const s = await ctx.call("samvad", {
        action: "serve",
        listen,
        skills: skills.startsWith("/") ? skills : `${Deno.cwd()}/${skills}`,
        ...(ctx.args.string("to") ? { to: ctx.args.string("to") } : {}),
        httpLoopback,
      }, { start: true }) as { id: string; url: string; skills: string[] };
      if (ctx.out.json) ctx.out.value(s);
      else ctx.out.line(`${s.id} on ${s.url} (skills: ${s.skills.join(", ")})`);
      return 0;
    }
    if (action === "call") {
      const [agent, skill, extra] = rest;
      if (!agent || !skill) {
        throw new UsageError("samvad call needs AGENT and SKILL");
      }
      if (extra !== undefined) {
        throw new UsageError(`unexpected argument "${extra}"`);
      }
      const mode = ctx.args.string("mode") ?? "sync";
      if (!["sync", "async", "stream"].includes(mode)) {
        throw new UsageError(`bad --mode "${mode}": use sync, async or stream`);
      }
      let payload: unknown = {};
      const text = ctx.args.string("payload");
      if (text !== undefined) {
        try {
          payload = JSON.parse(text);
        } catch {
          throw new UsageError("--payload is not JSON");
        }
        if (!payload || typeof payload !== "object" || Array.isArray(payload)) {
          throw new UsageError("--payload must be a JSON object");
        }
      }
      const r = await ctx.call("samvad", {
        action: "call",
        agent,
        skill,
        payload,
        mode,
        ...(ctx.args.string("delegation")
          ? { delegationToken: ctx.args.string("delegation") }
          : {}),
        ...(ctx.args.string("token")
          ? { token: ctx.args.string("token") }
          : {}),
        httpLoopback,
      }, {
        start: true,
        onItem: (item) => {
          const i = item as { chunk?: unknown; taskId?: string };
          if (ctx.out.json) ctx.out.value(i);
          else if (i.taskId) ctx.out.note(`task ${i.taskId}`);
          else ctx.out.note(String(i.chunk));
        },
      }) as { result: unknown };
      if (ctx.out.json) ctx.out.value(r);
      else ctx.out.line(JSON.stringify(r.result));
      return 0;
    }
    if (action === "status") {
      const s = await ctx.call("samvad", { action: "status" }) as Record<
        string,
        unknown
      >;
      if (ctx.out.json) ctx.out.value(s);
      else {
        ctx.out.line(
          s.serving
            ? `${s.id} on ${s.url} (skills: ${
              (s.skills as string[]).join(", ")
            })`
            : `${s.id} (no bridge served)`,
        );
      }
      return 0;
    }
    throw new UsageError(
      action
        ? `unknown samvad action "${action}"`
        : "samvad needs serve, call or status",
    );
  },
};
