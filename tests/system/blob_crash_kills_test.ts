/**
 * Issue 17: a 50 MiB blob while either side is killed with SIGKILL 5 times
 * at random moments (chunks batched per sync and commit, reading going on
 * meanwhile) arrives once, complete and byte-identical.
 *
 * The moments come from a seeded PRNG; the seed is printed. Rerun one with
 * `CRASH_SEED=<seed> deno test -A tests/system/blob_crash_kills_test.ts`.
 */

import assert from "node:assert/strict";
import type { CrashLine } from "../fixtures/crash_peer.ts";
import { CrashPair } from "../helpers/crash_pair.ts";
import { writeBlobPlan } from "../helpers/blob_plan.ts";
import { readJsonLines } from "../helpers/crash_journal.ts";
import { crashSeed } from "../helpers/crash_seed.ts";
import { sleep } from "../helpers/sleep.ts";
import { sha256Hex as sha256 } from "../helpers/sha256_hex.ts";

const MiB = 1024 * 1024;
const SIZE = 50 * MiB;
const KILLS = 5;

interface BlobView {
  status: string;
  sha256?: string;
  path?: string;
  detail?: string;
}

Deno.test("a 50 MiB blob survives 5 kill -9 of either side: delivered once, byte-identical", async () => {
  const { random, pick } = crashSeed("blob_crash_kills_test");

  const dir = await Deno.makeTempDir({ prefix: "awp-blobkills-" });
  const inbox = `${dir}/inbox.jsonl`;
  const want = await writeBlobPlan(dir, SIZE, "fifty MiB");
  const pair = await CrashPair.start(dir, {
    rx: ["--inbox", inbox, "--progress", "20"],
    tx: ["--plan", `${dir}/plan.json`, "--journal", `${dir}/journal.jsonl`],
  });
  try {
    let stored = 0;
    for (let k = 0; k < KILLS; k++) {
      const victim = pair.victim(k, KILLS, random);
      // The send journaled (else a restarted sender sends it again)...
      await pair.tx.waitFor(
        (l) => l.event === "sent" || l.event === "plan_done",
        "the blob queued",
        60_000,
      );
      // ...and mid-transfer: the receiver stored more than at the last kill.
      const progress = await pair.rx.waitFor(
        (l) =>
          l.event === "stored" && l.dir === "in" && l.status === "active" &&
          (l.bytes as number) > stored,
        "progress",
        60_000,
        pair.rx.lines.length,
      );
      stored = progress.bytes as number;
      // A random moment a little later, but before the blob can end: at most
      // 100 ms, and at most 4 MiB more stored (a fast pair moves 20 MiB in
      // 100 ms, and would finish before the fifth kill).
      const mark = stored + pick(0, 4 * MiB);
      await Promise.race([
        sleep(pick(0, 100)),
        pair.rx.waitFor(
          (l) =>
            l.event === "stored" && l.dir === "in" &&
            (l.bytes as number) >= mark,
          "a later moment",
          60_000,
          pair.rx.lines.length,
        ).catch(() => {}),
      ]);
      await pair.kill(victim);
    }
    await pair.tx.waitFor((l) => l.event === "all_acked", "all", 120_000);
    let events: CrashLine[] = [];
    const deadline = Date.now() + 30_000;
    while (Date.now() < deadline) {
      events = await readJsonLines<CrashLine>(inbox);
      if (events.length > 0) break;
      await sleep(100);
    }
    await Promise.all([pair.rx.finish(), pair.tx.finish()]);
    console.log(
      `${pair.killed.rx} rx kills, ${pair.killed.tx} tx kills, the last at ${stored} of ${SIZE} bytes stored`,
    );
    assert.equal(events.length, 1, "the msg is delivered once");
    const [blob] = events[0].blobs as BlobView[];
    assert.equal(blob.status, "complete", blob.detail);
    assert.equal(blob.sha256, want);
    assert.equal(sha256(await Deno.readFile(blob.path!)), want);
  } finally {
    await pair.close();
    await Deno.remove(dir, { recursive: true });
  }
});
