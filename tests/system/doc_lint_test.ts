// The published API's documentation is complete: `deno doc --lint` finds
// nothing (every type a public signature names is public too), and the
// module's example imports the package by its published name.

import assert from "node:assert/strict";

const ROOT = new URL("../..", import.meta.url).pathname;

Deno.test("deno doc --lint is clean on every entry point", async () => {
  for (const entry of ["mod.ts", "inspector/mod.ts"]) {
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["doc", "--lint", entry],
      cwd: ROOT,
      stdout: "piped",
      stderr: "piped",
      env: { NO_COLOR: "1" },
    }).output();
    assert.equal(
      out.code,
      0,
      `${entry}: ${new TextDecoder().decode(out.stderr)}`,
    );
  }
});

Deno.test("mod.ts example imports the package by its published name (jsr:@awp/peer)", async () => {
  const text = await Deno.readTextFile(`${ROOT}/mod.ts`);
  const example = text.slice(text.indexOf("```ts"), text.indexOf("```\n"));
  assert.match(example, /import \{ Peer \} from "jsr:@awp\/peer";/);
});

Deno.test("help text names config.json plainly (no template left in it)", async () => {
  for (const command of ["up", "presence", "daemon"]) {
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", `${ROOT}/mod.ts`, command, "--help"],
      stdout: "piped",
      stderr: "piped",
    }).output();
    const text = new TextDecoder().decode(out.stdout);
    assert.equal(out.code, 0, command);
    assert.match(text, /config\.json/, command);
    assert.ok(!text.includes("${"), `${command} --help: ${text}`);
  }
});
