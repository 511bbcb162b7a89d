/**
 * Fans units of work out to several workers and collects the results: one
 * connection per worker, one thread per unit (SPEC section 11, "Many
 * workers"). Units go to the workers round-robin; each is a delegation by
 * the convention, so any `examples/delegate.ts worker` can take them.
 *
 * ```sh
 * deno run -A examples/delegate.ts worker tcp:127.0.0.1:7901 &
 * deno run -A examples/delegate.ts worker tcp:127.0.0.1:7902 &
 * deno run -A examples/orchestrator.ts tcp:127.0.0.1:7901,tcp:127.0.0.1:7902 "unit one" "unit two" "unit three"
 * ```
 *
 * It prints one JSON line per finished unit, `{"unit","worker","summary"}`,
 * then `{"finished":N}`, closes every thread, says bye to every worker and
 * exits (1 if not every unit was done or failed within 60 s).
 *
 * @module
 */

import { dataPart, Peer } from "../mod.ts";

const [list, ...units] = Deno.args;
if (!list || units.length === 0) {
  console.error("usage: orchestrator ADDR[,ADDR...] UNIT...");
  Deno.exit(2);
}

const peer = await Peer.open({ memory: true, name: "orchestrator" });
const events = peer.events();
let code = 0;
try {
  // One connection per worker.
  const workers: string[] = [];
  for (const addr of list.split(",")) workers.push(await peer.connect(addr));

  // One thread per unit.
  const pending = new Map<string, { unit: string; worker: string }>();
  for (const [i, unit] of units.entries()) {
    const worker = workers[i % workers.length];
    const { th } = await peer.send(worker, unit, {
      subject: `unit ${i + 1}: ${unit}`.slice(0, 60),
      parts: [dataPart({ unit: i + 1, of: units.length }, "application/json")],
    });
    pending.set(th, { unit, worker });
  }

  // A unit is finished by the first msg after its worker's `done`, or by
  // `failed`.
  const ended = new Map<string, "done" | "failed">();
  const timer = setTimeout(() => void peer.close(), 60_000);
  let finished = 0;
  for await (const event of events) {
    if (!("th" in event) || event.th === undefined) continue;
    const job = pending.get(event.th);
    if (!job) continue;
    let summary: string | undefined;
    if (event.type === "state") {
      if (event.state === "done") ended.set(event.th, "done");
      if (event.state === "failed") summary = `failed: ${event.note ?? ""}`;
    } else if (event.type === "message" && ended.has(event.th)) {
      summary = event.text;
    }
    if (summary === undefined) continue;
    pending.delete(event.th);
    finished++;
    console.log(JSON.stringify({ ...job, summary }));
    await peer.setState(job.worker, event.th, "closed");
    if (pending.size === 0) break;
  }
  clearTimeout(timer);
  console.log(JSON.stringify({ finished }));
  if (pending.size > 0) {
    console.error(`orchestrator: ${pending.size} unit(s) unfinished in 60 s`);
    code = 1;
  } else {
    for (const worker of workers) await peer.bye(worker, "done");
  }
} finally {
  await peer.close();
}
Deno.exit(code);
