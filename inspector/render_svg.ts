/**
 * Renders Graphviz DOT to SVG with Graphviz compiled to WebAssembly
 * (`@viz-js/viz`): offline, no `dot` binary needed. The WASM instance is
 * created on first use and then shared.
 *
 * @module
 */

import { instance, type Viz } from "npm:@viz-js/viz@^3.31.0";

let vizPromise: Promise<Viz> | undefined;

/**
 * The SVG drawing of `dot`, starting at `<svg` (no XML prolog or comments
 * before it). Throws with Graphviz's errors when the DOT does not render.
 *
 * @example
 * ```ts
 * import { renderSvg } from "./render_svg.ts";
 * const svg = await renderSvg('digraph { a -> b }');
 * console.log(svg.startsWith("<svg")); // true
 * ```
 */
export async function renderSvg(dot: string): Promise<string> {
  vizPromise ??= instance();
  const viz = await vizPromise;
  const result = viz.render(dot, { format: "svg" });
  if (result.status !== "success" || result.output === undefined) {
    throw new Error(
      result.errors.map((e) => e.message).join("; ") || "graphviz failed",
    );
  }
  const out = result.output;
  const start = out.indexOf("<svg");
  return start >= 0 ? out.slice(start) : out;
}
