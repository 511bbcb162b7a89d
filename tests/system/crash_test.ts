/**
 * Issue 4: two peers in separate processes, the sender streaming 500 msgs
 * (some with multi-chunk files) in 5 threads while either side is killed
 * with SIGKILL at random moments and restarted on the same home and
 * address. Then: nothing lost, nothing delivered twice, order kept in every
 * thread, every file byte-identical.
 *
 * What the receiving application got is its inbox journal (`--inbox`): it
 * appends each message with its seq, fsynced, and resumes its events with
 * `after` = the last seq there, so a msg committed and acked but killed
 * before its event is replayed, and nothing handled is handed over again.
 *
 * The moments come from a seeded PRNG; the seed is printed. Rerun one with
 * `CRASH_SEED=<seed> deno test -A tests/system/crash_test.ts`.
 */

import assert from "node:assert/strict";
import type { CrashLine } from "../fixtures/crash_peer.ts";
import { CrashPair } from "../helpers/crash_pair.ts";
import { openStore } from "../../storage/open_store.ts";
import {
  deliveryOrderProblems,
  type Journaled,
  readJsonLines,
} from "../helpers/crash_journal.ts";
import { crashSeed } from "../helpers/crash_seed.ts";
import { sleep } from "../helpers/sleep.ts";
import { randomBytes } from "../helpers/random_bytes.ts";
import { sha256Hex as sha256 } from "../helpers/sha256_hex.ts";

const MESSAGES = 500;
const THREADS = 5;
const KILLS = 10;
const KiB = 1024;

interface PlanItem {
  tag: string;
  th: string;
  text: string;
  files?: string[];
}

interface BlobView {
  ref: string;
  name?: string;
  size: number;
  status: string;
  sha256?: string;
  path?: string;
  detail?: string;
}

Deno.test("kill -9 either peer 10+ times while 500 msgs with files stream in 5 threads: nothing lost, no duplicates, order kept, files identical", async () => {
  const { seed, random, pick } = crashSeed("crash_test");

  const dir = await Deno.makeTempDir({ prefix: "awp-crash-" });
  const journal = `${dir}/journal.jsonl`;
  const inbox = `${dir}/inbox.jsonl`;

  // The plan: 500 msgs round the threads at random; ~12 carry 1-2 files of
  // 600 KiB to 1.5 MiB (3 to 6 chunks of 256 KiB each).
  const expected = new Map<string, string>(); // file name -> sha256
  const plan: PlanItem[] = [];
  await Deno.mkdir(`${dir}/files`);
  for (let i = 0; i < MESSAGES; i++) {
    const th = `thr_crash_${pick(0, THREADS)}`;
    const item: PlanItem = { tag: `m${i}`, th, text: `m${i} in ${th}` };
    if (i % 40 === 7) {
      item.files = [];
      for (let f = 0; f < 1 + (i % 80 === 7 ? 1 : 0); f++) {
        const name = `f${i}_${f}.bin`;
        const bytes = randomBytes(pick(600 * KiB, 1536 * KiB));
        await Deno.writeFile(`${dir}/files/${name}`, bytes);
        expected.set(name, sha256(bytes));
        item.files.push(`${dir}/files/${name}`);
      }
    }
    plan.push(item);
  }
  await Deno.writeTextFile(`${dir}/plan.json`, JSON.stringify(plan));
  const planByTag = new Map(plan.map((p) => [p.tag, p]));

  const pair = await CrashPair.start(dir, {
    rx: ["--name", "rx", "--inbox", inbox],
    tx: ["--name", "tx", "--plan", `${dir}/plan.json`, "--journal", journal],
  });
  try {
    const txReady = await pair.tx.waitFor(
      (l) => l.event === "ready",
      "tx ready",
    );
    const txKey = txReady.key as string;

    // The kills: a random side after a random 150-900 ms of life; the last
    // kill goes to a side not killed yet, so both sides are hit. Each comes
    // back on the same home (same key) after 0-200 ms.
    const started = Date.now();
    for (let k = 0; k < KILLS; k++) {
      assert.ok(Date.now() - started < 40_000, "the kill loop took too long");
      const victim = pair.victim(k, KILLS, random);
      // A fresh sender needs about a second before its first send (start,
      // first handshake): count its life from then, or kills land in start.
      await pair.tx.waitFor(
        (l) => l.event === "sent" || l.event === "plan_done",
        "the sender at work",
      );
      await sleep(victim === "tx" ? pick(30, 700) : pick(100, 900));
      const sentSoFar = pair.procs.reduce((n, p) => n + p.of("sent").length, 0);
      console.log(
        `kill ${k + 1}: ${victim} after ${sentSoFar} resolved sends`,
      );
      await pair.kill(victim, pick(0, 200));
    }

    // Let the sender finish the plan and see every ack.
    await pair.tx.waitFor((l) => l.event === "all_acked", "all acked", 30_000);
    const resolved = await readJsonLines<Journaled>(journal);
    // The application's view: its inbox journal (a torn last line was cut
    // off by the run after it; the last run quits cleanly).
    const received = async () =>
      (await readJsonLines<CrashLine>(inbox)).filter((l) => l.peer === txKey);
    // The acks say durable; the events follow the commit at once.
    const deadline = Date.now() + 10_000;
    while (Date.now() < deadline) {
      const got = new Set((await received()).map((l) => l.id));
      if (resolved.every((j) => got.has(j.id))) break;
      await sleep(50);
    }
    await Promise.all([pair.rx.finish(), pair.tx.finish()]);

    const events = await received();
    console.log(
      `${pair.killed.rx} rx kills, ${pair.killed.tx} tx kills, ${resolved.length} resolved sends, ${events.length} message events`,
    );
    assert.equal(pair.killed.rx + pair.killed.tx, KILLS);
    // Every plan item was sent and resolved once.
    assert.deepEqual(
      resolved.map((j) => j.tag).sort(),
      plan.map((p) => p.tag).sort(),
    );

    // Every check runs; the failure lists every problem found.
    const problems: string[] = [];
    const count = new Map<string, number>();
    for (const e of events) {
      count.set(e.id as string, (count.get(e.id as string) ?? 0) + 1);
    }
    const twice = [...count].filter(([, n]) => n > 1).map(([id]) => id);
    if (twice.length > 0) {
      problems.push(
        `${twice.length} msgs delivered more than once: ${twice.slice(0, 5)}`,
      );
    }

    // Nothing lost: every resolved send reached the application.
    const byId = new Map<string, CrashLine>(
      events.map((e) => [e.id as string, e]),
    );
    const lost = resolved.filter((j) => !byId.has(j.id));
    if (lost.length > 0) {
      // Tell "never committed" from "committed, event never emitted".
      const store = await openStore({ home: `${dir}/rx` });
      let inLog: Journaled[];
      try {
        const log = await store.readLog({ peer: txKey });
        const committed = new Set(
          log.filter((e) => e.dir === "in").map((e) => e.id),
        );
        inLog = lost.filter((j) => committed.has(j.id));
      } finally {
        store.close();
      }
      problems.push(
        `${lost.length} resolved msgs never reached the application, ${inLog.length} of them committed in the receiver's store (lost between commit and event): ${
          lost.slice(0, 5).map((j) => `${j.tag}=${j.id}`).join(", ")
        }`,
      );
    }

    // Order: in every thread, delivery order is id order, and the resolved
    // sends appear in the order they were sent (ids allocated in order).
    problems.push(...deliveryOrderProblems(events, resolved));

    // Content and files: text matches the plan, every file byte-identical.
    let files = 0;
    for (const j of resolved) {
      const e = byId.get(j.id);
      if (!e) continue;
      const item = planByTag.get(j.tag)!;
      if (e.text !== item.text || e.th !== item.th) {
        problems.push(`${j.tag}: got text ${e.text} in ${e.th}`);
      }
      const blobs = e.blobs as BlobView[];
      if (blobs.length !== (item.files?.length ?? 0)) {
        problems.push(`${j.tag}: ${blobs.length} blob parts`);
      }
      for (const b of blobs) {
        const want = expected.get(b.name!);
        if (b.status !== "complete") {
          problems.push(
            `${j.tag} ${b.name} (${b.ref}): ${b.status}: ${b.detail ?? ""}`,
          );
          continue;
        }
        const got = sha256(await Deno.readFile(b.path!));
        if (b.sha256 !== want || got !== want) {
          problems.push(`${j.tag} ${b.name}: bytes differ from the sent file`);
          continue;
        }
        files++;
      }
    }
    if (problems.length > 0) {
      assert.fail(
        `seed ${seed}: ${problems.length} problems:\n${problems.join("\n")}`,
      );
    }
    assert.equal(files, expected.size);
  } finally {
    await pair.close();
    await Deno.remove(dir, { recursive: true });
  }
});
