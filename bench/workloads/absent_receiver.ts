/**
 * The setup of the workloads that queue msgs for a peer that is away: a
 * sender listens, a receiver dials it once and is then killed with SIGKILL,
 * so the sender holds an outbox for a known peer that is not connected.
 *
 * @example
 * ```ts ignore
 * const { sender, receiverKey, restartReceiver } = await absentReceiver(ctx);
 * await sender.proc.send({ cmd: "send", peer: receiverKey, th: "t", text: "hi" });
 * const receiver = restartReceiver(); // dials back; resume replays the queue
 * ```
 *
 * @module
 */

import { type BenchContext, isEvent } from "../bench_context.ts";
import type { JsonProcess } from "../json_process.ts";

/** A listening sender whose receiver was killed after one connection. */
export interface AbsentReceiver {
  /** The sender: its process, address and key. */
  sender: { proc: JsonProcess; addr: string; key: string };
  /** The receiver's key, as the sender saw it connect. */
  receiverKey: string;
  /** Starts the receiver again on its state, dialing the sender. */
  restartReceiver(): JsonProcess;
}

/**
 * Starts the sender and the receiver, waits for their connection, kills the
 * receiver with SIGKILL and waits until the sender sees it gone.
 */
export async function absentReceiver(
  ctx: BenchContext,
): Promise<AbsentReceiver> {
  const sender = await ctx.listener("sender", "tcp:127.0.0.1:0");
  const state = await ctx.dir("receiver");
  const restartReceiver = () =>
    ctx.spawnPeer("receiver", state, "connect", sender.addr);
  const first = restartReceiver();
  try {
    const conn = await sender.proc.waitFor(isEvent("connected"), {
      timeoutMs: 30_000,
    });
    const receiverKey = String(conn.key ?? conn.peer);
    first.kill("SIGKILL");
    await ctx.stop(first);
    await sender.proc.waitFor(isEvent("disconnected"), { timeoutMs: 30_000 });
    return { sender, receiverKey, restartReceiver };
  } catch (error) {
    await ctx.stop(first);
    await ctx.stop(sender.proc);
    throw error;
  }
}
