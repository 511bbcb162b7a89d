/**
 * The daemon's `samvad` control op: start the bridge in the running
 * daemon, call a SAMVAD agent with the daemon's identity, or report the
 * bridge. Imported by the daemon only when the op (or `--samvad-listen`)
 * is used, so ajv and jose stay out of every other command.
 *
 * @module
 */

import type { Peer } from "../peer/peer.ts";
import { readBridgeConfig } from "./bridge_config.ts";
import { SamvadError } from "./envelope.ts";
import type { SamvadAgent } from "./samvad_agent.ts";
import { str } from "../cli/control_args.ts";

/** A SamvadError as one line: `CODE: message`. */
function oneLine(error: unknown): Error {
  if (error instanceof SamvadError) {
    return new Error(`${error.code}: ${error.message}`);
  }
  return error instanceof Error ? error : new Error(String(error));
}

async function agentOf(
  peer: Peer,
  args: Record<string, unknown>,
): Promise<SamvadAgent> {
  const agent = await peer.samvad();
  if (args.httpLoopback === true) agent.enableHttpLoopback();
  return agent;
}

/**
 * Runs one `samvad` op: `serve` {listen, skills, to?, httpLoopback?},
 * `call` {agent, skill, payload?, mode?, delegationToken?, token?,
 * httpLoopback?} (stream chunks go to `emit`), or `status`.
 *
 * @example
 * ```ts ignore
 * import { samvadOp } from "./daemon_op.ts";
 * await samvadOp(peer, { action: "status" }, async () => {}, console.log);
 * ```
 */
export async function samvadOp(
  peer: Peer,
  args: Record<string, unknown>,
  emit: (item: unknown) => Promise<void>,
  log: (line: string) => void,
): Promise<unknown> {
  try {
    switch (args.action) {
      case "serve": {
        const listen = str(args.listen);
        const skills = str(args.skills);
        if (!listen || !skills) {
          throw new Error(
            "samvad serve needs --listen HOST:PORT and --skills FILE",
          );
        }
        const config = await readBridgeConfig(skills);
        const agent = await agentOf(peer, args);
        const bridge = await agent.serve({
          listen,
          config,
          ...(str(args.to) ? { to: str(args.to) } : {}),
          log,
        });
        log(`samvad bridge ${bridge.card.id} on ${bridge.url}`);
        return status(agent);
      }
      case "call": {
        const target = str(args.agent);
        const skill = str(args.skill);
        if (!target || !skill) {
          throw new Error("samvad call needs AGENT and SKILL");
        }
        const payload = (args.payload ?? {}) as Record<string, unknown>;
        const agent = await agentOf(peer, args);
        const options = {
          ...(str(args.delegationToken)
            ? { delegationToken: str(args.delegationToken) }
            : {}),
          ...(str(args.token)
            ? { auth: { scheme: "bearer", token: str(args.token) } }
            : {}),
        };
        if (args.mode === "stream") {
          for await (
            const ev of agent.stream(target, skill, payload, options)
          ) {
            if (!ev.done) await emit({ chunk: ev.chunk });
            else return { result: ev.result };
          }
          throw new Error("the stream ended without a result");
        }
        if (args.mode === "async") {
          const { taskId } = await agent.task(target, skill, payload, options);
          await emit({ taskId });
          return {
            taskId,
            result: await agent.waitTask(target, skill, taskId),
          };
        }
        return { result: await agent.call(target, skill, payload, options) };
      }
      case "status":
        return status(await peer.samvad());
      default:
        throw new Error(`unknown samvad action ${JSON.stringify(args.action)}`);
    }
  } catch (error) {
    throw oneLine(error);
  }
}

function status(agent: SamvadAgent): Record<string, unknown> {
  const bridge = agent.bridge;
  return {
    id: agent.id,
    kid: agent.kid,
    serving: bridge !== undefined,
    ...(bridge
      ? { url: bridge.url, skills: bridge.card.skills.map((s) => s.id) }
      : {}),
  };
}
