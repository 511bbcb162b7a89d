/**
 * `awp status` starts fast because the static import graph of the CLI
 * entry (cli.ts) holds no xstate, ajv, schema compiler, Ed25519 library or
 * Deno KV store (no npm package at all):
 * the daemon, driver and conformance runner are imported when run.
 */

import assert from "node:assert/strict";

interface InfoDependency {
  code?: { specifier: string };
  isDynamic?: boolean;
  npmPackage?: string;
}
interface InfoModule {
  specifier: string;
  dependencies?: InfoDependency[];
  npmPackage?: string;
}

/** Modules and npm packages loaded before `main` runs: static imports only. */
async function staticGraph(entry: string): Promise<Set<string>> {
  const { stdout, success } = await new Deno.Command(Deno.execPath(), {
    args: ["info", "--json", entry],
    cwd: new URL("../..", import.meta.url),
    stdout: "piped",
  }).output();
  assert.ok(success, `deno info ${entry} failed`);
  const info = JSON.parse(new TextDecoder().decode(stdout)) as {
    roots: string[];
    modules: InfoModule[];
  };
  const bySpecifier = new Map(info.modules.map((m) => [m.specifier, m]));
  const seen = new Set<string>();
  const stack = [...info.roots];
  while (stack.length > 0) {
    const specifier = stack.pop()!;
    if (seen.has(specifier)) continue;
    seen.add(specifier);
    for (const dep of bySpecifier.get(specifier)?.dependencies ?? []) {
      if (dep.isDynamic || !dep.code) continue;
      if (dep.npmPackage) seen.add(`npm:${dep.npmPackage}`);
      else stack.push(dep.code.specifier);
    }
  }
  return seen;
}

Deno.test("cli.ts loads no xstate, ajv, Ed25519 library or KV store before a command runs", async () => {
  const graph = await staticGraph("cli.ts");
  assert.ok([...graph].some((s) => s.endsWith("/cli/commands.ts")));
  for (const s of graph) {
    assert.ok(
      !/^npm:(xstate|ajv|ajv-formats|@noble\/ed25519)@/.test(s),
      `loads ${s}`,
    );
    assert.ok(
      !/\/(storage\/kv_store|wire\/validate|actors\/peer)\.ts$/.test(s),
      `loads ${s}`,
    );
  }
});
