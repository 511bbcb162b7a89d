/**
 * A receiver and a sender {@link CrashPeer} for the kill -9 tests: the
 * receiver listens on a Unix socket under `dir`, the sender runs a plan to
 * it; {@link CrashPair.kill} kills one side and starts it again on the same
 * home, and {@link CrashPair.victim} picks sides so that both are hit.
 *
 * @example
 * ```ts ignore
 * const pair = await CrashPair.start(dir, { rx: ["--inbox", inbox], tx: ["--plan", plan, "--journal", journal] });
 * await pair.kill(pair.victim(0, 5, Math.random));
 * await pair.close();
 * ```
 *
 * @module
 */

import { CrashPeer } from "../fixtures/crash_peer.ts";

/** Which side of a {@link CrashPair}. */
export type Side = "rx" | "tx";

/** A receiver and a sender, restarted on kill. */
export class CrashPair {
  rx: CrashPeer;
  tx: CrashPeer;
  /** Every process started, for the final cleanup. */
  readonly procs: CrashPeer[];
  /** Kills so far per side. */
  readonly killed: Record<Side, number> = { rx: 0, tx: 0 };
  #rxArgs: string[];
  #txArgs: string[];

  private constructor(
    rx: CrashPeer,
    tx: CrashPeer,
    rxArgs: string[],
    txArgs: string[],
  ) {
    this.rx = rx;
    this.tx = tx;
    this.procs = [rx, tx];
    this.#rxArgs = rxArgs;
    this.#txArgs = txArgs;
  }

  /**
   * Starts the receiver (with `extra.rx`), waits for it, then the sender
   * (with `extra.tx`) dialing it. On failure every started process is killed.
   */
  static async start(
    dir: string,
    extra: { rx: string[]; tx: string[] },
  ): Promise<CrashPair> {
    const address = `unix:${dir}/rx.sock`;
    const rxArgs = ["--home", `${dir}/rx`, "--listen", address, ...extra.rx];
    const rx = CrashPeer.spawn(rxArgs);
    try {
      const ready = await rx.waitFor((l) => l.event === "ready", "rx ready");
      const txArgs = [
        "--home",
        `${dir}/tx`,
        "--to",
        ready.key as string,
        "--connect",
        address,
        ...extra.tx,
      ];
      return new CrashPair(rx, CrashPeer.spawn(txArgs), rxArgs, txArgs);
    } catch (error) {
      rx.kill9();
      await rx.reap().catch(() => {});
      throw error;
    }
  }

  /** A random side for kill `k` of `total`; the last goes to a side not hit yet. */
  victim(k: number, total: number, random: () => number): Side {
    if (k === total - 1 && this.killed.rx === 0) return "rx";
    if (k === total - 1 && this.killed.tx === 0) return "tx";
    return random() < 0.5 ? "rx" : "tx";
  }

  /**
   * Kills `side` with SIGKILL, waits `downMs`, and starts it again on the
   * same home; resolves once it is ready, and rejects if it came back with
   * another key than it had before.
   */
  async kill(side: Side, downMs = 0): Promise<void> {
    this.killed[side]++;
    const target = this[side];
    const key = target.lines.find((l) => l.event === "ready")?.key;
    target.kill9();
    await target.reap();
    if (downMs > 0) await new Promise((r) => setTimeout(r, downMs));
    const again = CrashPeer.spawn(side === "rx" ? this.#rxArgs : this.#txArgs);
    this.procs.push(again);
    this[side] = again;
    const ready = await again.waitFor(
      (l) => l.event === "ready",
      `${side} again`,
    );
    if (key !== undefined && ready.key !== key) {
      throw new Error(`${side} came back with another key: ${ready.key}`);
    }
  }

  /** Kills whatever still runs. */
  async close(): Promise<void> {
    for (const p of this.procs) {
      if (!p.exited) p.kill9();
      await p.reap().catch(() => {});
    }
  }
}
