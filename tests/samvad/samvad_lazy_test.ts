// The SAMVAD bridge (jose, and its use of ajv) loads only when used: no
// static import chain leads to it from the library or the CLI.
import assert from "node:assert/strict";

interface Dep {
  code?: { specifier: string };
  isDynamic?: boolean;
}
interface Info {
  roots: string[];
  modules: Array<{ specifier: string; dependencies?: Dep[] }>;
}

async function staticGraph(entry: string): Promise<Set<string>> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["info", "--json", entry],
    stdout: "piped",
    stderr: "null",
  }).output();
  const info = JSON.parse(new TextDecoder().decode(out.stdout)) as Info;
  const byUrl = new Map(info.modules.map((m) => [m.specifier, m]));
  const seen = new Set<string>();
  const todo = [...info.roots];
  while (todo.length > 0) {
    const url = todo.pop()!;
    if (seen.has(url)) continue;
    seen.add(url);
    for (const d of byUrl.get(url)?.dependencies ?? []) {
      if (!d.isDynamic && d.code?.specifier) todo.push(d.code.specifier);
    }
  }
  return seen;
}

const SAMVAD_DIR = new URL("../../samvad/", import.meta.url).href;

// Each entry and a module its static graph must hold (proof it was read).
const ENTRIES: Array<[string, string]> = [
  ["mod.ts", "peer/peer.ts"],
  ["cli/main.ts", "cli/commands.ts"],
  ["cli/daemon.ts", "peer/peer.ts"],
];

for (const [entry, holds] of ENTRIES) {
  Deno.test(`samvad is lazy: ${entry} imports neither jose nor the bridge statically`, async () => {
    const graph = [
      ...await staticGraph(new URL(`../../${entry}`, import.meta.url).pathname),
    ];
    assert.ok(
      graph.includes(new URL(`../../${holds}`, import.meta.url).href),
      `the graph was read (it holds ${holds})`,
    );
    assert.deepEqual(graph.filter((u) => /jose/.test(u)), []);
    assert.deepEqual(
      graph.filter((u) =>
        u.startsWith(SAMVAD_DIR) && u !== `${SAMVAD_DIR}cli.ts`
      ),
      [],
    );
  });
}
