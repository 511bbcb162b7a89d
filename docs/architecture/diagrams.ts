/**
 * Draws every statechart of the runtime as SVG into `docs/architecture/`
 * (`deno task diagrams`), with the inspector's DOT export and Graphviz
 * compiled to WebAssembly, so the pictures in ARCHITECTURE.md come from the
 * machines themselves. `tests/docs/diagrams_test.ts` fails when a committed
 * SVG no longer matches its machine.
 *
 * @module
 */

import {
  incomingBlobMachine,
  outgoingBlobMachine,
} from "../../actors/blob_machine.ts";
import { connectionMachine } from "../../actors/connection_machine.ts";
import { dialerMachine } from "../../actors/dialer_machine.ts";
import { supervisorMachine } from "../../actors/supervisor.ts";
import { threadMachine } from "../../actors/thread_machine.ts";
import { presencePublisher } from "../../extensions/presence_gossip.ts";
import {
  machineDefinition,
  type MachineLike,
} from "../../inspector/machine_definition.ts";
import { machineToDot } from "../../inspector/machine_to_dot.ts";
import { renderSvg } from "../../inspector/render_svg.ts";

/** Every statechart drawn, by the SVG's file name (without `.svg`). */
export const STATECHARTS: Readonly<Record<string, MachineLike>> = {
  connection: connectionMachine,
  dialer: dialerMachine,
  supervisor: supervisorMachine,
  thread: threadMachine,
  outgoing_blob: outgoingBlobMachine,
  incoming_blob: incomingBlobMachine,
  presence_publisher: presencePublisher,
};

/** The folder the SVGs are written to. */
export const DIAGRAM_DIR: URL = new URL("./", import.meta.url);

/** Where the drawing of statechart `name` is committed. */
export function diagramUrl(name: string): URL {
  return new URL(`${name}.svg`, DIAGRAM_DIR);
}

/**
 * The SVG drawing of every statechart in {@link STATECHARTS}, by name.
 *
 * @example
 * ```ts
 * import { drawStatecharts } from "./diagrams.ts";
 * const svgs = await drawStatecharts();
 * console.log(svgs.get("connection")?.startsWith("<svg")); // true
 * ```
 */
export async function drawStatecharts(): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (const [name, machine] of Object.entries(STATECHARTS)) {
    // White behind: the SVGs are also viewed on dark pages.
    const dot = machineToDot(machineDefinition(machine), {
      background: "white",
    });
    const svg = await renderSvg(dot);
    out.set(name, svg.endsWith("\n") ? svg : svg + "\n");
  }
  return out;
}

if (import.meta.main) {
  for (const [name, svg] of await drawStatecharts()) {
    const url = diagramUrl(name);
    await Deno.writeTextFile(url, svg);
    console.log(`wrote ${url.pathname}`);
  }
}
