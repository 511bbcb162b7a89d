/**
 * Issue 16: the durable message path under group commit. Like
 * crash_test.ts, with 5,000 msgs sent in bursts of 500 (so received lines,
 * acks and enqueues share commits, and reading goes on while they run),
 * while either side is killed with SIGKILL at random moments and restarted.
 * Then: every resolved send reached the application once, in send order in
 * its thread, with its text.
 *
 * The moments come from a seeded PRNG; the seed is printed. Rerun one with
 * `CRASH_SEED=<seed> deno test -A tests/system/crash_burst_test.ts`.
 */

import assert from "node:assert/strict";
import type { CrashLine } from "../fixtures/crash_peer.ts";
import { CrashPair } from "../helpers/crash_pair.ts";
import {
  deliveryOrderProblems,
  type Journaled,
  readJsonLines,
} from "../helpers/crash_journal.ts";
import { crashSeed } from "../helpers/crash_seed.ts";
import { sleep } from "../helpers/sleep.ts";

const MESSAGES = 5_000;
const BURST = 500;
const THREADS = 10;
const KILLS = 6;

// Opt-in (AWP_CRASH_BURST=1): under load it still finds msgs of one thread
// delivered out of send order after kills (before 2026-12-03 they were
// dropped from the outbox instead: lost). Open in issue 16; see the README.
Deno.test({
  name:
    "kill -9 either peer while 5,000 msgs go in bursts of 500: nothing lost, no duplicates, order kept",
  ignore: Deno.env.get("AWP_CRASH_BURST") !== "1",
}, async () => {
  const { seed, random, pick } = crashSeed("crash_burst_test");

  const dir = await Deno.makeTempDir({ prefix: "awp-crashburst-" });
  const journal = `${dir}/journal.jsonl`;
  const inbox = `${dir}/inbox.jsonl`;
  const plan = Array.from({ length: MESSAGES }, (_, i) => {
    const th = `thr_burst_${pick(0, THREADS)}`;
    return { tag: `m${i}`, th, text: `m${i} in ${th}` };
  });
  await Deno.writeTextFile(`${dir}/plan.json`, JSON.stringify(plan));
  const planByTag = new Map(plan.map((p) => [p.tag, p]));

  const pair = await CrashPair.start(dir, {
    rx: ["--inbox", inbox],
    tx: [
      "--plan",
      `${dir}/plan.json`,
      "--journal",
      journal,
      "--burst",
      String(BURST),
    ],
  });
  try {
    const txKey = (await pair.tx.waitFor((l) => l.event === "ready", "tx"))
      .key as string;
    for (let k = 0; k < KILLS; k++) {
      const victim = pair.victim(k, KILLS, random);
      // Kill mid-burst: once the sender has resolved a burst, after a while.
      await pair.tx.waitFor(
        (l) => l.event === "sent" || l.event === "plan_done",
        "the sender at work",
      );
      await sleep(pick(20, 400));
      await pair.kill(victim);
    }
    await pair.tx.waitFor((l) => l.event === "all_acked", "all acked", 60_000);
    const resolved = await readJsonLines<Journaled>(journal);
    const received = async () =>
      (await readJsonLines<CrashLine>(inbox)).filter((l) => l.peer === txKey);
    // The receiving application syncs its inbox once per message, which is
    // slow on a busy disk: wait while it makes progress, give up after 15 s
    // without any.
    let deadline = Date.now() + 15_000;
    let count = -1;
    while (Date.now() < deadline) {
      const got = new Set((await received()).map((l) => l.id));
      if (resolved.every((j) => got.has(j.id))) break;
      if (got.size > count) {
        count = got.size;
        deadline = Date.now() + 15_000;
      }
      await sleep(50);
    }
    await Promise.all([pair.rx.finish(), pair.tx.finish()]);
    const events = await received();
    console.log(
      `${pair.killed.rx} rx kills, ${pair.killed.tx} tx kills, ${resolved.length} resolved sends, ${events.length} message events`,
    );
    assert.deepEqual(
      resolved.map((j) => j.tag).sort(),
      plan.map((p) => p.tag).sort(),
      "every plan item resolved once",
    );

    const problems: string[] = [];
    const byId = new Map<string, CrashLine>();
    for (const e of events) {
      if (byId.has(e.id as string)) problems.push(`${e.id} delivered twice`);
      byId.set(e.id as string, e);
    }
    const lost = resolved.filter((j) => !byId.has(j.id));
    if (lost.length > 0) {
      problems.push(`${lost.length} resolved msgs lost: ${lost.slice(0, 5)}`);
    }
    for (const j of resolved) {
      const e = byId.get(j.id);
      const item = planByTag.get(j.tag)!;
      if (e && (e.text !== item.text || e.th !== item.th)) {
        problems.push(`${j.tag}: got ${e.text} in ${e.th}`);
      }
    }
    problems.push(...deliveryOrderProblems(events, resolved));
    if (problems.length > 0) {
      assert.fail(
        `seed ${seed}: ${problems.length} problems:\n${
          problems.slice(0, 20).join("\n")
        }`,
      );
    }
  } finally {
    await pair.close();
    await Deno.remove(dir, { recursive: true });
  }
});
