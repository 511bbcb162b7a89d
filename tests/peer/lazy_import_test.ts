/**
 * Modules imported on first use go through `lazyImport` (a computed
 * specifier, so Deno does not prepare their graphs at start), and
 * `deno compile` is told about each of them.
 */

import assert from "node:assert/strict";
import { LAZY_MODULES, lazyImport } from "../../peer/lazy_import.ts";

const ROOT = new URL("../../", import.meta.url);

Deno.test("lazyImport loads a module of the package by its root-relative path", async () => {
  const m = await lazyImport<typeof import("../../wire/error_text.ts")>(
    "wire/error_text.ts",
  );
  assert.equal(m.errorText(new Error("first\nsecond")), "first");
});

Deno.test("every lazy module exists and is an --include of the compile task", async () => {
  const config = JSON.parse(
    await Deno.readTextFile(new URL("deno.json", ROOT)),
  ) as { tasks: Record<string, string> };
  const compile = config.tasks.compile.split(/\s+/);
  for (const path of LAZY_MODULES) {
    await Deno.stat(new URL(path, ROOT));
    const i = compile.indexOf(path);
    assert.ok(i > 0 && compile[i - 1] === "--include", `compile lacks ${path}`);
  }
});

Deno.test("the CLI, the daemon and the Peer use no literal import() of our modules", async () => {
  // A literal dynamic import is prepared at start even when never taken.
  const used = new Set<string>();
  for (const file of ["cli/main.ts", "cli/daemon.ts", "peer/peer.ts"]) {
    const text = await Deno.readTextFile(new URL(file, ROOT));
    assert.ok(
      !/(?<!typeof )import\(\s*["']\.{1,2}\/[^"']*\.ts["']/.test(text),
      `${file} has a literal import() of a module`,
    );
    for (
      const m of text.matchAll(/(?:lazyImport|onDemand)<[^>]*>\(\s*"([^"]+)"/g)
    ) {
      used.add(m[1]);
    }
  }
  assert.ok(used.size >= 7, `found only ${[...used].join(", ")}`);
  for (const path of used) {
    assert.ok(LAZY_MODULES.includes(path), `${path} is not in LAZY_MODULES`);
  }
});
