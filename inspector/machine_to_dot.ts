/**
 * Draws an xstate v5 machine definition (`machine.definition`, as JSON) as a
 * Graphviz DOT statechart: compound and parallel states become clusters,
 * transitions become edges labelled with their event (after-delays as
 * `after T`, eventless ones as `always`, guards in brackets).
 *
 * Every state's drawing gets the SVG element id `stateElementId(state.id)`
 * so a page can highlight the active states by id.
 *
 * @module
 */

/** A transition as found in `machine.definition`. */
export interface TransitionJson {
  /** The event type; null or absent for eventless transitions. */
  eventType?: string | null;
  /** Ids of the target state nodes. */
  target?: string[];
  /** The delay of an `after` transition. */
  delay?: string | number;
  /** The guard, as xstate describes it. */
  guard?: unknown;
}

/** A state node as found in `machine.definition`. */
export interface StateDefinitionJson {
  /** The state node's full id. */
  id: string;
  /** The state node's key within its parent. */
  key: string;
  /** The kind of state node. */
  type: "atomic" | "compound" | "parallel" | "final" | "history";
  /** The initial transition of a compound state. */
  initial?: { target?: string[] };
  /** History kind, for history states. */
  history?: boolean | "shallow" | "deep";
  /** Child state nodes, by key. */
  states?: Record<string, StateDefinitionJson>;
  /** Transitions on events and delays. */
  transitions?: TransitionJson[];
  /** Eventless transitions; the inspection hub adds these to the definition. */
  always?: TransitionJson[];
  /** Actors invoked by this state. */
  invoke?: Array<{ src?: string; id?: string }>;
}

/** Drawing options for {@link machineToDot}. */
export interface MachineToDotOptions {
  /** Layout direction. Default "LR". */
  rankdir?: "LR" | "TB";
  /**
   * Background colour. Default "transparent" (the page behind shows); a
   * drawing viewed on its own, on a light or dark page, wants "white".
   */
  background?: string;
}

/** Prefix of the SVG element id of every drawn state. */
export const STATE_ID_PREFIX = "state:";

/**
 * The SVG element id the drawing gives the state with xstate id `stateId`.
 *
 * @example
 * ```ts
 * import { stateElementId } from "./machine_to_dot.ts";
 * console.log(stateElementId("conn.open")); // "state:conn.open"
 * ```
 */
export function stateElementId(stateId: string): string {
  return STATE_ID_PREFIX + stateId;
}

/**
 * Converts a machine definition to DOT. Throws a one-line error when the
 * input does not look like a machine definition.
 *
 * @example
 * ```ts
 * import { createMachine } from "npm:xstate@^5.33.3";
 * import { machineToDot } from "./machine_to_dot.ts";
 * const m = createMachine({
 *   id: "door",
 *   initial: "shut",
 *   states: { shut: { on: { OPEN: "open" } }, open: { after: { 500: "shut" } } },
 * });
 * const dot = machineToDot(JSON.parse(JSON.stringify(m.definition)));
 * console.log(dot.includes('label="after 500ms"')); // true
 * ```
 */
export function machineToDot(
  definition: unknown,
  options: MachineToDotOptions = {},
): string {
  const root = asState(definition, "machine definition");
  const parent = new Map<string, string | undefined>();
  const nodes = new Map<string, StateDefinitionJson>();
  const index = (s: StateDefinitionJson, up: string | undefined) => {
    nodes.set(s.id, s);
    parent.set(s.id, up);
    for (const [k, child] of Object.entries(s.states ?? {})) {
      index(asState(child, `state "${s.id}.${k}"`), s.id);
    }
  };
  index(root, undefined);

  const isCluster = (s: StateDefinitionJson) =>
    Object.keys(s.states ?? {}).length > 0;
  const anchor = (id: string) => `${id}::anchor`;
  const within = (id: string, ancestor: string) => {
    for (let p: string | undefined = id; p; p = parent.get(p)) {
      if (p === ancestor) return true;
    }
    return false;
  };

  const lines: string[] = [];
  const out = (indent: number, text: string) =>
    lines.push("  ".repeat(indent) + text);
  out(0, `digraph ${q(root.id)} {`);
  out(
    1,
    `graph [compound=true, rankdir=${options.rankdir ?? "LR"}, ` +
      `fontname="Helvetica", fontsize=12, nodesep=0.35, ranksep=0.45, ` +
      `bgcolor=${q(options.background ?? "transparent")}, pad=0.2];`,
  );
  out(
    1,
    `node [shape=box, style="rounded,filled", fillcolor="#ffffff", ` +
      `color="#4a5568", fontname="Helvetica", fontsize=12, margin="0.12,0.05"];`,
  );
  out(
    1,
    `edge [fontname="Helvetica", fontsize=10, color="#718096", ` +
      `fontcolor="#2d3748", arrowsize=0.7];`,
  );

  const draw = (s: StateDefinitionJson, depth: number, inParallel: boolean) => {
    const invokes = (s.invoke ?? []).map((i) =>
      i.src && !i.src.startsWith("xstate.invoke") ? i.src : (i.id ?? "actor")
    );
    const invokeLine = invokes.length ? `\ninvoke: ${invokes.join(", ")}` : "";
    if (isCluster(s)) {
      const internal = (s.transitions ?? [])
        .filter((t) => !(t.target?.length))
        .map((t) => transitionLabel(t));
      const shown = [...new Set(internal)];
      const extra = shown.length
        ? "\n(internal: " + shown.slice(0, 10).join(", ") +
          (shown.length > 10 ? ", ...)" : ")")
        : "";
      const title = s.type === "parallel" ? `${s.key} (parallel)` : s.key;
      out(depth, `subgraph ${q("cluster_" + s.id)} {`);
      out(
        depth + 1,
        `id=${q(stateElementId(s.id))}; label=${
          q(title + invokeLine + extra)
        }; ` +
          `labeljust=l; style=${
            q(inParallel ? "rounded,dashed" : "rounded")
          }; ` +
          `color="#4a5568"; fontsize=12;`,
      );
      const initial = s.type === "parallel" ? [] : (s.initial?.target ?? []);
      out(
        depth + 1,
        `${q(anchor(s.id))} [shape=point, width=0.09, label="", ` +
          `style=${
            initial.length ? "filled" : "invis"
          }, fillcolor="#1a202c", ` +
          `color="#1a202c"];`,
      );
      if (hasInnerTransitions(s)) {
        // Where transitions of the whole state into its own children start.
        out(
          depth + 1,
          `${q(`${s.id}::any`)} [shape=circle, width=0.12, fixedsize=true, ` +
            `label="", style=filled, fillcolor="#ffffff", color="#1a202c"];`,
        );
      }
      for (const child of Object.values(s.states ?? {})) {
        draw(child, depth + 1, s.type === "parallel");
      }
      out(depth, "}");
    } else {
      const attrs: string[] = [`id=${q(stateElementId(s.id))}`];
      if (s.type === "history") {
        attrs.push(
          `shape=circle`,
          `label=${q(s.history === "deep" ? "H*" : "H")}`,
          `width=0.3`,
          `fixedsize=true`,
        );
      } else {
        attrs.push(`label=${q(s.key + invokeLine)}`);
        if (s.type === "final") attrs.push("peripheries=2");
      }
      out(depth, `${q(s.id)} [${attrs.join(", ")}];`);
    }
  };
  const hasInnerTransitions = (s: StateDefinitionJson) =>
    (s.transitions ?? []).some((t) =>
      (t.target ?? []).some((x) => {
        const id = x.replace(/^#/, "");
        return id !== s.id && within(id, s.id);
      })
    );
  draw(root, 1, false);

  // Edges, merged when they share ends so the drawing stays readable.
  const edges = new Map<
    string,
    { from: string; to: string; labels: string[]; internal: boolean }
  >();
  const addEdge = (
    from: string,
    to: string,
    label: string,
    internal: boolean,
  ) => {
    const key = `${from}\u0000${to}\u0000${internal}`;
    const e = edges.get(key) ?? { from, to, labels: [], internal };
    if (!e.labels.includes(label)) e.labels.push(label);
    edges.set(key, e);
  };
  for (const s of nodes.values()) {
    const all = [
      ...(s.transitions ?? []),
      ...(s.always ?? []).map((t) => ({ ...t, eventType: "" })),
    ];
    for (const t of all) {
      const targets = (t.target ?? []).map((x) => x.replace(/^#/, ""));
      if (targets.length === 0) {
        if (!isCluster(s)) addEdge(s.id, s.id, transitionLabel(t), true);
        continue;
      }
      for (const target of targets) {
        if (nodes.has(target)) addEdge(s.id, target, transitionLabel(t), false);
      }
    }
    if (isCluster(s) && s.type !== "parallel") {
      for (const target of s.initial?.target ?? []) {
        const id = target.replace(/^#/, "");
        if (nodes.has(id)) addEdge(`${s.id}::initial`, id, "", false);
      }
    }
  }
  for (const e of edges.values()) {
    const initial = e.from.endsWith("::initial");
    const fromId = initial ? e.from.slice(0, -"::initial".length) : e.from;
    const from = nodes.get(fromId)!;
    const to = nodes.get(e.to)!;
    const attrs: string[] = [];
    let tail = fromId;
    let head = e.to;
    if (initial) tail = anchor(fromId);
    else if (isCluster(from)) {
      if (within(e.to, fromId)) tail = `${fromId}::any`;
      else {
        tail = anchor(fromId);
        attrs.push(`ltail=${q("cluster_" + fromId)}`);
      }
    }
    if (isCluster(to)) {
      head = anchor(e.to);
      if (!within(fromId, e.to)) attrs.push(`lhead=${q("cluster_" + e.to)}`);
    }
    const label = e.labels.filter(Boolean).join("\n");
    if (label) attrs.push(`label=${q(label)}`);
    if (e.internal) attrs.push(`style=dashed`);
    out(
      1,
      `${q(tail)} -> ${q(head)}${
        attrs.length ? ` [${attrs.join(", ")}]` : ""
      };`,
    );
  }
  out(0, "}");
  return lines.join("\n") + "\n";
}

/** A readable label for one transition. */
function transitionLabel(t: TransitionJson): string {
  const type = t.eventType ?? "";
  let label: string;
  if (type === "") label = "always";
  else if (type.startsWith("xstate.after.")) {
    label = typeof t.delay === "number"
      ? `after ${t.delay}ms`
      : `after ${t.delay ?? type.split(".")[2]}`;
  } else if (type.startsWith("xstate.done.actor.")) {
    label = `done: ${type.slice("xstate.done.actor.".length)}`;
  } else if (type.startsWith("xstate.error.actor.")) {
    label = `error: ${type.slice("xstate.error.actor.".length)}`;
  } else if (type.startsWith("xstate.done.state.")) label = "done";
  else label = type;
  const guard = guardText(t.guard);
  return guard ? `${label} [${guard}]` : label;
}

function guardText(guard: unknown): string | undefined {
  if (typeof guard === "string") return guard;
  if (typeof guard === "object" && guard !== null && "type" in guard) {
    return String((guard as { type: unknown }).type);
  }
  return undefined;
}

function asState(v: unknown, what: string): StateDefinitionJson {
  if (
    typeof v !== "object" || v === null ||
    typeof (v as { id?: unknown }).id !== "string" ||
    typeof (v as { key?: unknown }).key !== "string" ||
    typeof (v as { type?: unknown }).type !== "string"
  ) {
    throw new TypeError(
      `machineToDot: ${what} is not an xstate state definition (needs id, key, type)`,
    );
  }
  return v as StateDefinitionJson;
}

/** A DOT double-quoted string. */
function q(s: string): string {
  return `"${
    s.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n")
  }"`;
}
