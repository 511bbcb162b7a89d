/**
 * An xstate v5 machine's definition as JSON: `machine.definition` plus each
 * state's eventless `always` transitions, which the definition leaves out.
 * This is what {@link machineToDot} draws, for the live inspector and for the
 * committed diagrams in `docs/architecture/`.
 *
 * @module
 */

import { type JsonValue, toJsonSafe } from "./to_json_safe.ts";

/** The parts of an xstate machine that are read here. */
export interface MachineLike {
  /** The machine's id. */
  id: string;
  /** The config it was created from. */
  config: unknown;
  /** The root state node. */
  root: StateNodeLike;
  /** The JSON-like definition xstate derives from the config. */
  definition: unknown;
}

/** The parts of an xstate state node that are read here. */
export interface StateNodeLike {
  /** The state node's full id. */
  id: string;
  /** Child state nodes, by key. */
  states: Readonly<Record<string, StateNodeLike>>;
  /** Eventless transitions. */
  always?: ReadonlyArray<
    { target?: ReadonlyArray<{ id: string }>; guard?: unknown }
  >;
}

/**
 * The definition of `machine` as JSON, with `always` transitions added.
 *
 * @example
 * ```ts
 * import { createMachine } from "npm:xstate@^5.33.3";
 * import { machineDefinition } from "./machine_definition.ts";
 * const m = createMachine({
 *   id: "gate",
 *   initial: "check",
 *   states: { check: { always: { target: "open" } }, open: {} },
 * });
 * const json = machineDefinition(m) as { states: { check: { always: unknown } } };
 * console.log(JSON.stringify(json.states.check.always)); // [{"target":["#gate.open"]}]
 * ```
 */
export function machineDefinition(machine: MachineLike): JsonValue {
  const json = toJsonSafe(machine.definition, {
    maxDepth: 64,
    maxItems: 10_000,
    maxString: 10_000,
  });
  addAlways(machine.root, json);
  return json;
}

/** Walks the state nodes alongside their JSON and adds `always` transitions. */
function addAlways(node: StateNodeLike, json: JsonValue): void {
  if (typeof json !== "object" || json === null || Array.isArray(json)) return;
  if (node.always?.length) {
    json.always = node.always.map((t) => {
      const out: { [key: string]: JsonValue } = {
        target: (t.target ?? []).map((n) => `#${n.id}`),
      };
      const guard = guardName(t.guard);
      if (guard) out.guard = guard;
      return out;
    });
  }
  const states = json.states;
  if (typeof states !== "object" || states === null || Array.isArray(states)) {
    return;
  }
  for (const [key, child] of Object.entries(node.states ?? {})) {
    addAlways(child, states[key] ?? null);
  }
}

function guardName(guard: unknown): string | undefined {
  if (typeof guard === "string") return guard;
  if (typeof guard === "function") return guard.name || "guard";
  if (typeof guard === "object" && guard !== null && "type" in guard) {
    return String((guard as { type: unknown }).type);
  }
  return undefined;
}
