/**
 * Code highlighting as Preact nodes: lowlight tokenizes into a syntax tree
 * and we turn its elements into spans, so code is never parsed as HTML.
 *
 * @module
 */

import { createLowlight } from "npm:lowlight@^3.3.0";
import bash from "npm:highlight.js@^11.11.1/lib/languages/bash";
import diff from "npm:highlight.js@^11.11.1/lib/languages/diff";
import go from "npm:highlight.js@^11.11.1/lib/languages/go";
import javascript from "npm:highlight.js@^11.11.1/lib/languages/javascript";
import json from "npm:highlight.js@^11.11.1/lib/languages/json";
import python from "npm:highlight.js@^11.11.1/lib/languages/python";
import rust from "npm:highlight.js@^11.11.1/lib/languages/rust";
import typescript from "npm:highlight.js@^11.11.1/lib/languages/typescript";
import yaml from "npm:highlight.js@^11.11.1/lib/languages/yaml";
import { h, type VNode } from "npm:preact@^10.29.8";

const lowlight = createLowlight({
  bash,
  diff,
  go,
  javascript,
  json,
  python,
  rust,
  typescript,
  yaml,
});
lowlight.registerAlias({
  bash: ["sh", "shell", "zsh"],
  javascript: ["js", "jsx", "mjs"],
  typescript: ["ts", "tsx", "deno"],
  python: ["py"],
  rust: ["rs"],
  yaml: ["yml"],
});

interface HastNode {
  type: string;
  value?: string;
  properties?: { className?: string[] };
  children?: HastNode[];
}

function toVNodes(nodes: HastNode[]): Array<VNode | string> {
  return nodes.map((n) =>
    n.type === "text" ? n.value ?? "" : h(
      "span",
      { class: (n.properties?.className ?? []).join(" ") },
      toVNodes(n.children ?? []),
    ) as VNode
  );
}

/** `text` in `lang` (guessed among the known ones when absent) as nodes. */
export function highlight(
  text: string,
  lang: string | undefined,
): Array<VNode | string> {
  try {
    const l = lang?.toLowerCase();
    const tree = l && lowlight.registered(l)
      ? lowlight.highlight(l, text)
      : text.length < 20_000
      ? lowlight.highlightAuto(text)
      : undefined;
    return tree ? toVNodes(tree.children as HastNode[]) : [text];
  } catch {
    return [text];
  }
}
