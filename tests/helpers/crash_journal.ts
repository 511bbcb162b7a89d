/**
 * Reading what the crash tests' processes wrote: the sender's journal of
 * resolved sends and the receiving application's inbox, both JSON lines
 * (a missing file reads as empty), and the order checks on them.
 *
 * @module
 */

import type { CrashLine } from "../fixtures/crash_peer.ts";

/** One resolved send, as the sender journals it. */
export interface Journaled {
  /** The plan item's tag. */
  tag: string;
  /** The msg id the send resolved with. */
  id: string;
  /** The thread. */
  th: string;
}

/**
 * The JSON lines of `path`, parsed; none when the file does not exist.
 *
 * @example
 * ```ts
 * import { readJsonLines } from "./crash_journal.ts";
 * console.log((await readJsonLines("/no/such/file")).length); // 0
 * ```
 */
export async function readJsonLines<T>(path: string): Promise<T[]> {
  const text = await Deno.readTextFile(path).catch(() => "");
  return text.split("\n").filter((l) => l !== "").map((l) => JSON.parse(l));
}

/**
 * What is wrong with the order the application got `events` in: in every
 * thread, delivery order must be id order, and the resolved sends must
 * appear in the order they were sent (ids are allocated in order).
 *
 * @example
 * ```ts
 * import { deliveryOrderProblems } from "./crash_journal.ts";
 * const events = [{ event: "message", th: "t", id: "b" }, { event: "message", th: "t", id: "a" }];
 * console.log(deliveryOrderProblems(events, []).length); // 1
 * ```
 */
export function deliveryOrderProblems(
  events: CrashLine[],
  resolved: Journaled[],
): string[] {
  const problems: string[] = [];
  const delivered = new Map<string, string[]>();
  for (const e of events) {
    const list = delivered.get(e.th as string) ?? [];
    list.push(e.id as string);
    delivered.set(e.th as string, list);
  }
  for (const [th, ids] of delivered) {
    for (let i = 1; i < ids.length; i++) {
      if (ids[i - 1] >= ids[i]) {
        problems.push(`thread ${th}: ${ids[i - 1]} delivered before ${ids[i]}`);
        break;
      }
    }
    const sent = resolved.filter((j) => j.th === th).map((j) => j.id);
    const got = new Set(ids);
    const inSent = new Set(sent);
    const seenOrder = ids.filter((id) => inSent.has(id));
    const wanted = sent.filter((id) => got.has(id));
    if (seenOrder.join() !== wanted.join()) {
      problems.push(`thread ${th}: delivery order differs from send order`);
    }
  }
  return problems;
}
