/**
 * Delegation, the convention of SPEC section 11, in both roles.
 *
 * ```sh
 * deno run -A examples/delegate.ts worker tcp:127.0.0.1:7900
 * deno run -A examples/delegate.ts ask tcp:127.0.0.1:7900 "Count the words in this task"
 * ```
 *
 * The delegator (`ask`) opens a thread whose subject reads like a task
 * title; the first msg carries the ask in a text part and its context in a
 * `data` part. The worker sends `state: working`, streams progress as short
 * msgs, attaches its results as a `code` part and a blob, then ends with
 * `state: done` and a final summary msg. The delegator prints every step as
 * a JSON line, `{"done":...}` last, then closes the thread (`state:
 * closed`), says bye and exits (1 if the work did not finish within 30 s).
 *
 * The worker prints `{"listening":ADDR,"key":KEY}` first and stops on
 * Ctrl-C or SIGTERM. Both run with an in-memory store.
 *
 * @module
 */

import { codePart, dataPart, Peer } from "../mod.ts";

const USAGE = "usage: delegate worker [ADDR] | ask ADDR TASK";

/** The worker: does each delegated task it is given, by the convention. */
async function worker(addr: string): Promise<number> {
  const peer = await Peer.open({ memory: true, name: "delegate-worker" });
  console.log(
    JSON.stringify({ listening: await peer.listen(addr), key: peer.key }),
  );
  const stop = () => void peer.close();
  Deno.addSignalListener("SIGINT", stop);
  Deno.addSignalListener("SIGTERM", stop);
  const tmp = await Deno.makeTempDir({ prefix: "delegate_worker_" });
  try {
    for await (const event of peer.events()) {
      // A task is the first msg of a thread: the one with a subject.
      if (event.type !== "message" || event.subject === undefined) continue;
      const { peer: from, th } = event;
      await peer.setState(from, th, "working", "reading the task");
      const words = event.text.split(/\s+/).filter((w) => w !== "");
      await peer.send(from, `progress: the task has ${words.length} words`, {
        thread: th,
      });
      const counts = new Map<string, number>();
      for (const w of words) {
        counts.set(w.toLowerCase(), (counts.get(w.toLowerCase()) ?? 0) + 1);
      }
      await peer.send(from, "progress: counted every word", { thread: th });
      await Deno.mkdir(`${tmp}/${th}`);
      const report = `${tmp}/${th}/report.txt`;
      await Deno.writeTextFile(
        report,
        [...counts].map(([w, n]) => `${n}\t${w}`).join("\n") + "\n",
      );
      await peer.send(from, "results: the counts as code and as a file", {
        thread: th,
        parts: [
          codePart(JSON.stringify(Object.fromEntries(counts)), "json"),
        ],
        files: [report],
      });
      await peer.setState(from, th, "done");
      await peer.send(
        from,
        `summary: ${words.length} words, ${counts.size} distinct`,
        {
          thread: th,
          parts: [
            dataPart(
              { words: words.length, distinct: counts.size },
              "application/json",
            ),
          ],
        },
      );
    }
  } finally {
    await Deno.remove(tmp, { recursive: true });
  }
  return 0;
}

/** The delegator: hands one task over and follows it to the summary. */
async function ask(addr: string, task: string): Promise<number> {
  const peer = await Peer.open({ memory: true, name: "delegator" });
  const events = peer.events();
  const print = (value: unknown) => console.log(JSON.stringify(value));
  try {
    const key = await peer.connect(addr);
    const { th } = await peer.send(key, task, {
      subject: task.slice(0, 60),
      parts: [dataPart({ cwd: Deno.cwd() }, "application/json")],
    });
    const timer = setTimeout(() => void peer.close(), 30_000);
    let done = false;
    let summary: string | undefined;
    let blob: { name?: string; size: number } | undefined;
    for await (const event of events) {
      if ("th" in event && event.th !== th) continue;
      if (event.type === "state") {
        print({ state: event.state, note: event.note });
        done ||= event.state === "done";
      } else if (event.type === "message") {
        const code = event.parts.find((p) => p.k === "code");
        print({ msg: event.text, ...(code ? { code: code.text } : {}) });
        if (done) summary = event.text;
      } else if (
        event.type === "blob" && event.dir === "in" &&
        event.status === "complete"
      ) {
        blob = { name: event.name, size: event.size };
        // An in-memory peer's files go when it closes: keep a copy to print.
        const kept = `${await Deno.makeTempDir({ prefix: "awp-delegate-" })}/${
          event.name ?? event.ref
        }`;
        await Deno.copyFile(event.path!, kept);
        print({ blob: event.name, size: event.size, path: kept });
      }
      if (summary !== undefined && blob !== undefined) break;
    }
    clearTimeout(timer);
    if (summary === undefined) {
      console.error("delegate: the worker did not finish within 30 s");
      return 1;
    }
    print({ done: summary, blob });
    await peer.setState(key, th, "closed");
    await peer.bye(key, "done");
    return 0;
  } finally {
    await peer.close();
  }
}

const [command, ...rest] = Deno.args;
if (command === "worker" && rest.length <= 1) {
  Deno.exit(await worker(rest[0] ?? "tcp:127.0.0.1:7900"));
} else if (command === "ask" && rest.length === 2) {
  Deno.exit(await ask(rest[0], rest[1]));
} else {
  console.error(USAGE);
  Deno.exit(2);
}
