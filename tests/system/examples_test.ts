/**
 * Every example runs with its one command and works against another
 * example: real processes, real sockets on 127.0.0.1.
 */

import assert from "node:assert/strict";

const ROOT = new URL("../..", import.meta.url).pathname;
const DENO = Deno.execPath();

/** Runs `deno run -A examples/<file> ...args` to completion. */
async function run(
  file: string,
  args: string[],
): Promise<{ code: number; lines: Record<string, unknown>[]; stderr: string }> {
  const out = await new Deno.Command(DENO, {
    args: ["run", "-A", `examples/${file}`, ...args],
    cwd: ROOT,
    stdout: "piped",
    stderr: "piped",
    signal: AbortSignal.timeout(90_000),
  }).output();
  const text = new TextDecoder().decode(out.stdout);
  return {
    code: out.code,
    lines: text.split("\n").filter((l) => l !== "").map((l) => JSON.parse(l)),
    stderr: new TextDecoder().decode(out.stderr),
  };
}

/** A listening example: started, its address read, stopped with SIGTERM. */
interface Listening {
  addr: string;
  key: string;
  /** Sends SIGTERM, waits for exit, returns the exit code and output. */
  stop(): Promise<{ code: number; stdout: string }>;
}

async function startListening(
  file: string,
  args: string[],
): Promise<Listening> {
  const child = new Deno.Command(DENO, {
    args: ["run", "-A", `examples/${file}`, ...args],
    cwd: ROOT,
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let text = "";
  const kill = setTimeout(() => child.kill("SIGKILL"), 60_000);
  while (!text.includes("\n")) {
    const { value, done } = await reader.read();
    if (done) break;
    text += value;
  }
  clearTimeout(kill);
  const first = JSON.parse(text.slice(0, text.indexOf("\n")));
  assert.match(first.listening, /^tcp:127\.0\.0\.1:\d+$/);
  return {
    addr: first.listening,
    key: first.key,
    async stop() {
      child.kill("SIGTERM");
      const hard = setTimeout(() => child.kill("SIGKILL"), 10_000);
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        text += value;
      }
      const status = await child.status;
      clearTimeout(hard);
      return { code: status.code, stdout: text };
    },
  };
}

Deno.test("echo_agent echoes what single_binary_agent asks", async () => {
  const echo = await startListening("echo_agent.ts", ["tcp:127.0.0.1:0"]);
  try {
    const out = await run("single_binary_agent.ts", [
      "ask",
      echo.addr,
      "hello there",
    ]);
    assert.equal(out.code, 0, out.stderr);
    assert.deepEqual(out.lines, [{
      reply: "echo: hello there",
      from: echo.key,
    }]);
  } finally {
    const { code, stdout } = await echo.stop();
    assert.equal(code, 0);
    assert.match(stdout, /"echoed":"[0-9A-Z]{26}"/);
  }
});

Deno.test("single_binary_agent answers its own ask", async () => {
  const agent = await startListening("single_binary_agent.ts", [
    "listen",
    "tcp:127.0.0.1:0",
  ]);
  try {
    const out = await run("single_binary_agent.ts", ["ask", agent.addr, "hi"]);
    assert.equal(out.code, 0, out.stderr);
    assert.equal(out.lines.length, 1);
    assert.equal(out.lines[0].from, agent.key);
    assert.match(
      String(out.lines[0].reply),
      /^single-binary-agent \S+ got "hi" at \d{4}-/,
    );
  } finally {
    assert.equal((await agent.stop()).code, 0);
  }
});

Deno.test("delegate: the worker follows the delegation convention", async () => {
  const worker = await startListening("delegate.ts", [
    "worker",
    "tcp:127.0.0.1:0",
  ]);
  try {
    const out = await run("delegate.ts", [
      "ask",
      worker.addr,
      "count the words of the words here",
    ]);
    assert.equal(out.code, 0, out.stderr);
    const kinds = out.lines.map((l) => Object.keys(l)[0]);
    // working first; progress msgs; results (code + blob); done; summary.
    assert.deepEqual(out.lines[0], {
      state: "working",
      note: "reading the task",
    });
    const done = kinds.indexOf("done");
    assert.equal(done, kinds.length - 1);
    const stateDone = out.lines.findIndex((l) => l.state === "done");
    assert.ok(stateDone > 0 && stateDone < done - 1);
    assert.equal(
      out.lines[stateDone + 1].msg,
      "summary: 7 words, 5 distinct",
    );
    const results = out.lines.find((l) => typeof l.code === "string");
    assert.deepEqual(JSON.parse(String(results?.code)), {
      count: 1,
      the: 2,
      words: 2,
      of: 1,
      here: 1,
    });
    const progress = out.lines.filter((l) =>
      String(l.msg ?? "").startsWith("progress:")
    );
    assert.equal(progress.length, 2);
    const blob = out.lines.find((l) => "blob" in l && "path" in l);
    assert.equal(blob?.blob, "report.txt");
    // The printed path outlives the delegator (its in-memory peer is gone).
    const kept = String(blob?.path);
    assert.equal((await Deno.stat(kept)).size, Number(blob?.size));
    await Deno.remove(kept.slice(0, kept.lastIndexOf("/")), {
      recursive: true,
    });
    assert.deepEqual(out.lines.at(-1), {
      done: "summary: 7 words, 5 distinct",
      blob: { name: "report.txt", size: Number(blob?.size) },
    });
  } finally {
    assert.equal((await worker.stop()).code, 0);
  }
});

Deno.test("orchestrator fans units out to two delegate workers", async () => {
  const a = await startListening("delegate.ts", ["worker", "tcp:127.0.0.1:0"]);
  const b = await startListening("delegate.ts", ["worker", "tcp:127.0.0.1:0"]);
  try {
    const out = await run("orchestrator.ts", [
      `${a.addr},${b.addr}`,
      "alpha beta",
      "gamma delta epsilon",
      "one",
    ]);
    assert.equal(out.code, 0, out.stderr);
    assert.deepEqual(out.lines.at(-1), { finished: 3 });
    const byUnit = Object.fromEntries(
      out.lines.slice(0, -1).map((l) => [l.unit, l]),
    );
    assert.deepEqual(byUnit["alpha beta"], {
      unit: "alpha beta",
      worker: a.key,
      summary: "summary: 2 words, 2 distinct",
    });
    assert.deepEqual(byUnit["gamma delta epsilon"], {
      unit: "gamma delta epsilon",
      worker: b.key,
      summary: "summary: 3 words, 3 distinct",
    });
    assert.deepEqual(byUnit["one"], {
      unit: "one",
      worker: a.key,
      summary: "summary: 1 words, 1 distinct",
    });
  } finally {
    assert.equal((await a.stop()).code, 0);
    assert.equal((await b.stop()).code, 0);
  }
});
