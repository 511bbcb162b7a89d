/**
 * {@link dialUntilUp}: dials an address until a peer answers there (the
 * key is not known yet, so no per-peer dialer holds it), on a throwaway
 * {@link Dialer}'s schedule; what `Supervisor.connectUntilUp` runs.
 *
 * @module
 */

import { Dialer } from "./dialer.ts";
import type { DialerTiming } from "./dialer_machine.ts";
import type { RemoteHello } from "./remote_hello.ts";

/** What {@link dialUntilUp} needs of its owner. */
export interface DialUntilUpHost {
  /** One attempt: dial, handshake, resolve with their hello once open. */
  connect(address: string, signal: AbortSignal): Promise<RemoteHello>;
  /** False once the owner stops: no more attempts. */
  running(): boolean;
  /** An attempt failed (it is retried). */
  failed(address: string, attempt: number, error: unknown): void;
  /** The dialer's schedule (tests make it fast). */
  dialer?: { timing?: Partial<DialerTiming>; random?: () => number };
}

/**
 * Dials `address` until a peer answers there; resolves with its hello.
 * Each failure goes to `host.failed` and is retried on the dialer's
 * schedule. Rejects only when `signal` aborts or `cancel` (handed to
 * `onCancel` while the dial runs) is called.
 *
 * @example
 * ```ts ignore
 * const remote = await dialUntilUp("tcp:127.0.0.1:7000", host, {});
 * console.log(remote.key);
 * ```
 */
export function dialUntilUp(
  address: string,
  host: DialUntilUpHost,
  options: {
    signal?: AbortSignal;
    /** Receives the cancel of this dial while it runs, then undefined. */
    onCancel?: (cancel: (() => void) | undefined) => void;
  },
): Promise<RemoteHello> {
  const { signal, onCancel } = options;
  return new Promise<RemoteHello>((resolve, reject) => {
    let remote: RemoteHello | undefined;
    let settled = false;
    const finish = (error?: Error) => {
      if (settled) return;
      settled = true;
      onCancel?.(undefined);
      signal?.removeEventListener("abort", onAbort);
      // On a later turn: what waits for this connect goes first.
      setTimeout(() => dialer.stop(), 0);
      if (error) reject(error);
      else resolve(remote!);
    };
    const cancel = () =>
      finish(new Error(`connect ${address}: supervisor is stopping`));
    const onAbort = () => finish(new Error(`connect ${address}: aborted`));
    const dialer = new Dialer({
      peer: address,
      addresses: [address],
      timing: host.dialer?.timing,
      random: host.dialer?.random,
      shouldConnect: () => !settled && host.running(),
      connect: async (addr, attemptSignal, attempt) => {
        try {
          remote = await host.connect(addr, attemptSignal);
        } catch (error) {
          if (!attemptSignal.aborted && !settled) {
            host.failed(addr, attempt, error);
          }
          throw error;
        }
      },
      onChange: (state) => {
        if (state === "connected") finish();
      },
    });
    if (signal?.aborted) return onAbort();
    signal?.addEventListener("abort", onAbort, { once: true });
    onCancel?.(cancel);
    dialer.start();
    dialer.wake();
  });
}
