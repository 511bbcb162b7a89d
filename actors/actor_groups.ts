/**
 * xstate actor systems shared by connection actors, {@link GROUP_SIZE} at a
 * time. A root actor builds its own system (a scheduler, four maps and sets,
 * fourteen closures: ~2 KiB), so 10,000 idle connections held 10,000 of
 * them. A connection actor here is created with a group's `parent` and uses
 * that group's system instead. Groups stay small because xstate cancels a
 * stopping actor's timers by scanning every timer of its system.
 *
 * The parent is a started `fromTransition` actor that only listens: a
 * member that finishes is forgotten; a member whose chart fails (an action
 * threw) is told through {@link ChartFailureHost.chartFailed}, since xstate
 * reports a child's error to its parent instead of as an unhandled error.
 *
 * @module
 */

import {
  type AnyActorRef,
  createActor,
  fromTransition,
} from "npm:xstate@^5.33.3";
import type { Clock } from "../net/timer_wheel.ts";

/** Members that share one system (and one parent). */
export const GROUP_SIZE = 64;

const ERROR_PREFIX = "xstate.error.actor.";
const DONE_PREFIX = "xstate.done.actor.";

/** Told when the member's chart fails. */
export interface ChartFailureHost {
  /** The member's actor stopped with `error` (an action threw). */
  chartFailed(error: unknown): void;
}

/** What a group's parent hears from its members (done and error events). */
interface MemberEvent {
  type: string;
  actorId?: string;
  error?: unknown;
}

/** One parent, its system, and its members' failure hosts by actor id. */
export class ActorGroup {
  /** Pass as `createActor(logic, { parent })`: the member uses its system. */
  readonly parent: AnyActorRef;
  #members = new Map<string, ChartFailureHost>();
  #joined = 0;

  constructor(clock: Clock) {
    const members = this.#members;
    this.parent = createActor(
      fromTransition((state: null, event: MemberEvent) => {
        const id = event.actorId;
        if (id === undefined) return state;
        if (event.type.startsWith(ERROR_PREFIX)) {
          const host = members.get(id);
          members.delete(id);
          host?.chartFailed(event.error);
        } else if (event.type.startsWith(DONE_PREFIX)) {
          members.delete(id);
        }
        return state;
      }, null),
      { clock },
    );
    this.parent.start();
  }

  /** Members that joined so far (a full group takes no more). */
  get joined(): number {
    return this.#joined;
  }

  /** Members running now (joined, not finished). */
  get size(): number {
    return this.#members.size;
  }

  /** Records the member created with {@link parent}, by its actor's id. */
  join(actor: AnyActorRef, host: ChartFailureHost): void {
    this.#joined++;
    this.#members.set(actor.id, host);
  }
}

/**
 * Hands out groups: the current one until {@link GROUP_SIZE} members
 * joined it, then a fresh one (a full group lives on while members do).
 *
 * @example
 * ```ts
 * import { createActor, createMachine } from "npm:xstate@^5.33.3";
 * import { ActorGroups } from "./actor_groups.ts";
 * const groups = new ActorGroups(globalThis);
 * const machine = createMachine({ initial: "a", states: { a: {} } });
 * const group = groups.current();
 * const a = createActor(machine, { parent: group.parent });
 * const b = createActor(machine, { parent: groups.current().parent });
 * group.join(a, { chartFailed: () => {} });
 * console.log(a.system === b.system); // true
 * ```
 */
export class ActorGroups {
  #clock: Clock;
  #size: number;
  #current: ActorGroup | undefined;

  constructor(clock: Clock, size = GROUP_SIZE) {
    this.#clock = clock;
    this.#size = size;
  }

  /** The group the next member joins. */
  current(): ActorGroup {
    if (this.#current === undefined || this.#current.joined >= this.#size) {
      this.#current = new ActorGroup(this.#clock);
    }
    return this.#current;
  }
}
