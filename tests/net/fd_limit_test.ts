/**
 * `raiseFdLimit` in a real process started with a low soft limit: the
 * limits in force after it are soft = hard. (Deno 2 raises the soft limit
 * itself at start on Linux, so there `raiseFdLimit` only reads it; its libc
 * path is for runtimes that do not.)
 */

import assert from "node:assert/strict";

const MODULE = new URL("../../net/fd_limit.ts", import.meta.url).href;

/** Runs raiseFdLimit in a child whose soft limit is `soft` (or the hard). */
async function limitsIn(
  soft: number | "hard",
): Promise<{ before: string; after: { soft: number; hard: number } }> {
  const script =
    `const before = Deno.readTextFileSync("/proc/self/limits").split("\\n").find((l) => l.startsWith("Max open files"));` +
    `const { raiseFdLimit } = await import(${JSON.stringify(MODULE)});` +
    `console.log(JSON.stringify({ before, after: raiseFdLimit() }));`;
  const ulimit = soft === "hard" ? '"$(ulimit -Hn)"' : String(soft);
  const { stdout, success } = await new Deno.Command("sh", {
    args: [
      "-c",
      `ulimit -Sn ${ulimit} && exec "$0" eval "$1"`,
      Deno.execPath(),
      script,
    ],
    stdout: "piped",
  }).output();
  assert.ok(success);
  return JSON.parse(new TextDecoder().decode(stdout));
}

Deno.test({
  name:
    "raiseFdLimit raises a low soft limit to the hard one, and keeps one at it",
  ignore: Deno.build.os !== "linux",
  fn: async () => {
    const low = await limitsIn(256);
    assert.match(low.before, /^Max open files\s+\d+\s+\d+/);
    assert.ok(low.after.hard > 256, "the hard limit here is above 256");
    assert.equal(low.after.soft, low.after.hard);
    const atHard = await limitsIn("hard");
    assert.equal(atHard.after.soft, atHard.after.hard);
    assert.equal(atHard.after.hard, low.after.hard);
  },
});
