/**
 * The statechart SVGs committed in docs/architecture/ are what
 * `deno task diagrams` draws from the machines today, and every machine the
 * runtime defines in actors/ and extensions/ has one.
 */

import assert from "node:assert/strict";
import {
  DIAGRAM_DIR,
  diagramUrl,
  drawStatecharts,
  STATECHARTS,
} from "../../docs/architecture/diagrams.ts";

const ROOT = new URL("../../", import.meta.url);

Deno.test("every committed statechart SVG matches its machine (else run `deno task diagrams`)", async () => {
  const drawn = await drawStatecharts();
  const stale: string[] = [];
  for (const [name, svg] of drawn) {
    let committed: string | undefined;
    try {
      committed = await Deno.readTextFile(diagramUrl(name));
    } catch (e) {
      if (!(e instanceof Deno.errors.NotFound)) throw e;
    }
    if (committed !== svg) {
      stale.push(
        `${name}.svg ${committed === undefined ? "missing" : "stale"}`,
      );
    }
  }
  for await (const entry of Deno.readDir(DIAGRAM_DIR)) {
    const name = entry.name.replace(/\.svg$/, "");
    if (entry.name.endsWith(".svg") && !drawn.has(name)) {
      stale.push(`${entry.name} has no machine`);
    }
  }
  assert.deepEqual(
    stale,
    [],
    `docs/architecture is out of date (${
      stale.join(", ")
    }): run \`deno task diagrams\` and commit the SVGs`,
  );
});

Deno.test("every statechart exported from actors/ and extensions/ is drawn", async () => {
  const drawnMachines = new Set<unknown>(Object.values(STATECHARTS));
  const missing: string[] = [];
  for (const folder of ["actors", "extensions"]) {
    const dir = new URL(`${folder}/`, ROOT);
    for await (const entry of Deno.readDir(dir)) {
      if (!entry.isFile || !entry.name.endsWith(".ts")) continue;
      const mod: Record<string, unknown> = await import(
        new URL(entry.name, dir).href
      );
      for (const [exportName, value] of Object.entries(mod)) {
        if (isMachine(value) && !drawnMachines.has(value)) {
          missing.push(`${folder}/${entry.name} ${exportName}`);
        }
      }
    }
  }
  assert.deepEqual(
    missing,
    [],
    "add these machines to STATECHARTS in docs/architecture/diagrams.ts",
  );
});

function isMachine(v: unknown): boolean {
  return typeof v === "object" && v !== null && "root" in v &&
    "definition" in v && "config" in v;
}
