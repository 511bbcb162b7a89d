import assert from "node:assert/strict";
import { KvStore } from "../../storage/kv_store.ts";

const WRITER = new URL("../fixtures/store_writer.ts", import.meta.url).pathname;
const PEER = "ed25519:crash-test-peer";
const KILLS = 12;

interface RunOutput {
  lines: string[];
}

/** Runs the writer until a random moment after it is ready, then kill -9. */
async function runAndKill(path: string, run: number): Promise<RunOutput> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "--unstable-kv", "-A", WRITER, path, String(run)],
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const decoder = new TextDecoder();
  let text = "";
  const reader = child.stdout.getReader();
  let killed = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const stderr = child.stderr.text();
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    text += decoder.decode(value, { stream: true });
    // Odd runs may die while opening or in their first commit; even runs
    // once something is durable, so every other run makes progress.
    const armed = run % 2 === 1
      ? text.startsWith("ready\n")
      : text.includes("\n", 6);
    if (timer === undefined && armed) {
      timer = setTimeout(() => {
        killed = true;
        child.kill("SIGKILL");
      }, 50 + Math.random() * 400);
    }
  }
  clearTimeout(timer);
  const status = await child.status;
  const err = await stderr;
  assert.ok(killed, `writer exited by itself (code ${status.code}): ${err}`);
  // The last line may be cut mid-write: keep complete lines only.
  const lines = text.split("\n").slice(0, -1).filter((l) => l !== "ready");
  return { lines };
}

Deno.test("KvStore: kill -9 at random moments keeps every durable promise", async () => {
  const dir = await Deno.makeTempDir({ prefix: "awp-crash-" });
  const path = `${dir}/awp.kv`;
  try {
    const enqueued: string[] = []; // in print order, across runs
    const ackIntents = new Set<string>();
    const fresh = new Map<string, number>(); // received id -> times reported not duplicate
    const everDurable = new Set<string>(); // received ids reported (either way) = committed
    for (let run = 0; run < KILLS; run++) {
      const { lines } = await runAndKill(path, run);
      const freshThisRun = new Set<string>();
      for (const line of lines) {
        const [kind, id, flag] = line.split(" ");
        if (kind === "E") enqueued.push(id);
        else if (kind === "A") ackIntents.add(id);
        else if (kind === "R") {
          if (flag === "0") {
            // A line committed in an earlier run must come back duplicate.
            assert.ok(
              !everDurable.has(id),
              `run ${run}: ${id} delivered again after a restart`,
            );
            fresh.set(id, (fresh.get(id) ?? 0) + 1);
            freshThisRun.add(id);
          }
        } else assert.fail(`unexpected writer output: ${line}`);
      }
      for (const line of lines) {
        if (line.startsWith("R ")) everDurable.add(line.split(" ")[1]);
      }
      if (run % 2 === 0) {
        assert.ok(
          lines.length > 0,
          `run ${run} printed nothing before the kill`,
        );
      }
    }
    assert.ok(
      enqueued.length > KILLS,
      "too little work got done to mean anything",
    );
    // Ids strictly increase in durable order across all restarts.
    for (let i = 1; i < enqueued.length; i++) {
      assert.ok(
        enqueued[i - 1] < enqueued[i],
        `id order broken at ${i}: ${enqueued[i - 1]} then ${enqueued[i]}`,
      );
    }
    for (const [id, times] of fresh) {
      assert.equal(times, 1, `${id} delivered ${times} times`);
    }

    const store = await KvStore.open(path);
    try {
      const outbox = await store.outbox(PEER);
      const ids = outbox.map((e) => e.id);
      for (let i = 1; i < ids.length; i++) {
        assert.ok(ids[i - 1] < ids[i], "outbox out of id order");
      }
      const ns = outbox.map((e) => e.fields.n as number);
      assert.equal(
        new Set(ns).size,
        ns.length,
        "an entry is in the outbox twice",
      );
      const present = new Set(ids);
      for (const id of enqueued) {
        assert.ok(
          present.has(id) || ackIntents.has(id),
          `durable id ${id} is gone`,
        );
      }
      // Split entries (every 17th) come back whole.
      for (const e of outbox) {
        const text = (e.fields.parts as { text: string }[])[0].text;
        assert.equal(
          text.length,
          (e.fields.n as number) % 17 === 0 ? 200_000 : `m${e.fields.n}`.length,
        );
      }
      assert.ok(
        outbox.some((e) => (e.fields.n as number) % 17 === 0),
        "no split entry survived to check",
      );
      // Every line ever reported is a duplicate now (the writer's thread
      // for R<i> is r<(i + 1) % 4>).
      const again = await store.receive(
        PEER,
        [...everDurable].map((id) => {
          const th = `r${(Number(id.slice(1)) + 1) % 4}`;
          return { id, t: "msg", th, message: { t: "msg", id, th }, raw: "{}" };
        }),
      );
      assert.equal(again.length, everDurable.size);
      assert.deepEqual(again.filter((o) => !o.duplicate), []);
    } finally {
      store.close();
    }
    // No staged parts are left behind without their head.
    const kv = await Deno.openKv(path);
    try {
      const keys = (await Array.fromAsync(kv.list({ prefix: [] }))).map((e) =>
        e.key
      );
      assert.deepEqual(keys.filter((k) => k[0] === "pend"), []);
      const heads = new Set(
        keys.filter((k) => k[0] === "ob" && k.length === 3).map((k) =>
          String(k[2])
        ),
      );
      const orphans = keys.filter((k) =>
        k[0] === "ob" && k.length === 4 && !heads.has(String(k[2]))
      );
      assert.deepEqual(orphans, []);
    } finally {
      kv.close();
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
