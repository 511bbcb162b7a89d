/**
 * The project's test command (`deno task test`): formatting, lint and type
 * checks, then every test, ending with one summary line `N passed, N failed`
 * that CI reads (Deno's own summary line is not in that form).
 *
 * Extra arguments are passed to `deno test` (e.g. a file or `--filter`).
 */

interface StepResult {
  passed: number;
  failed: number;
  skipped: number;
}

const deno = Deno.execPath();

async function run(label: string, args: string[]): Promise<boolean> {
  console.log(`\n== ${label}: deno ${args.join(" ")}`);
  const status = await new Deno.Command(deno, {
    args,
    stdout: "inherit",
    stderr: "inherit",
  }).spawn().status;
  console.log(`== ${label}: ${status.success ? "ok" : "FAILED"}`);
  return status.success;
}

/** Reads Deno's `ok | 12 passed (3 steps) | 0 failed | 1 ignored` line. */
function parseSummary(text: string): StepResult | undefined {
  // deno-lint-ignore no-control-regex
  const plain = text.replace(/\x1b\[[0-9;]*m/g, "");
  const lines = plain.split("\n").filter((l) =>
    /^(ok|FAILED) \| \d+ passed/.test(l.trim())
  );
  const line = lines.at(-1);
  if (!line) return undefined;
  const num = (re: RegExp) => Number(line.match(re)?.[1] ?? 0);
  return {
    passed: num(/(\d+) passed/),
    failed: num(/(\d+) failed/),
    skipped: num(/(\d+) ignored/),
  };
}

const checks: Array<[string, string[]]> = [
  ["fmt", ["fmt", "--check"]],
  ["lint", ["lint"]],
  ["check", ["check", "."]],
];

let staticFailed = 0;
for (const [label, args] of checks) {
  if (!(await run(label, args))) staticFailed++;
}

console.log(`\n== test: deno test -A --parallel ${Deno.args.join(" ")}`);
const child = new Deno.Command(deno, {
  args: ["test", "-A", "--parallel", ...Deno.args],
  stdout: "piped",
  stderr: "piped",
  env: { NO_COLOR: "1" },
}).spawn();

const decoder = new TextDecoder();
let captured = "";
async function pump(
  stream: ReadableStream<Uint8Array>,
  sink: { write(p: Uint8Array): Promise<number> },
) {
  for await (const chunk of stream) {
    captured += decoder.decode(chunk, { stream: true });
    await sink.write(chunk);
  }
}
await Promise.all([
  pump(child.stdout, Deno.stdout),
  pump(child.stderr, Deno.stderr),
]);
const status = await child.status;

const summary = parseSummary(captured) ??
  { passed: 0, failed: 1, skipped: 0 };
if (!status.success && summary.failed === 0) summary.failed = 1;
const failed = summary.failed + staticFailed;
const passed = summary.passed + (checks.length - staticFailed);
// CI reads the last line, which must be exactly `N passed, N failed`.
if (summary.skipped) console.log(`\n${summary.skipped} skipped (ignored)`);
console.log(`\n${passed} passed, ${failed} failed`);
Deno.exit(failed === 0 && status.success ? 0 : 1);
