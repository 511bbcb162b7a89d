/**
 * The inspector's memory: an xstate v5 `inspect` observer that keeps the live
 * actor tree, a bounded log per actor and each machine's definition, and fans
 * changes out to subscribers (the inspector server's WebSockets).
 *
 * The runtime only passes `inspect: hub.observer` when inspection is asked
 * for, so with inspection off this costs nothing. With it on but nobody
 * watching, recording stores references only; JSON conversion happens
 * lazily, when someone reads or subscribes.
 *
 * @module
 */

import type {
  AnyActorRef,
  InspectionEvent,
  Observer,
} from "npm:xstate@^5.33.3";
import { type JsonValue, toJsonSafe } from "./to_json_safe.ts";
import { machineDefinition, type MachineLike } from "./machine_definition.ts";

/** Lifecycle of an actor as last seen. */
export type ActorStatus = "active" | "done" | "error" | "stopped";

/** Bytes moved so far, for blob-like actors. */
export interface Progress {
  /** Bytes moved so far. */
  bytes: number;
  /** Total bytes, -1 while unknown. */
  total: number;
}

/** What the inspector knows about one actor. */
export interface ActorInfo {
  /** xstate session id, unique per actor. */
  id: string;
  /** The actor's own id (`actorRef.id`). */
  name: string;
  /** Kind shown in the tree: "supervisor", "connection", "thread", ... */
  kind: string;
  /** Human label, e.g. the remote peer's name. */
  label: string;
  /** Session id of the parent actor, if any. */
  parentId?: string;
  /** Session id of the root actor of its system. */
  rootId?: string;
  /** Key of the machine definition (see {@link InspectionHub.machine}). */
  machine?: string;
  /** Lifecycle status as last seen. */
  status: ActorStatus;
  /** Current state value (machines only). */
  value?: JsonValue;
  /** Ids of the active state nodes (machines only), e.g. `conn.open`. */
  active: string[];
  /** Bytes moved so far, for blob-like actors. */
  progress?: Progress;
  /** Milliseconds since the epoch. */
  createdAt: number;
  /** Milliseconds since the epoch of the last change. */
  updatedAt: number;
}

/** An event received by an actor. */
export interface HubEventEvent {
  /** Always `event`. */
  type: "event";
  /** Session id of the receiving actor. */
  id: string;
  /** Position in the hub's log, strictly increasing. */
  seq: number;
  /** Milliseconds since the epoch. */
  t: number;
  /** The event, made JSON-safe. */
  event: JsonValue;
  /** Session id of the sender, when known. */
  source?: string;
}

/** An actor's new snapshot. */
export interface HubSnapshotEvent {
  /** Always `snapshot`. */
  type: "snapshot";
  /** Session id of the actor. */
  id: string;
  /** Position in the hub's log, strictly increasing. */
  seq: number;
  /** Milliseconds since the epoch. */
  t: number;
  /** The event that caused the snapshot. */
  event: JsonValue;
  /** Lifecycle status after this snapshot. */
  status: ActorStatus;
  /** State value (machines only). */
  value?: JsonValue;
  /** Ids of the active state nodes (machines only). */
  active: string[];
  /** The context, made JSON-safe. */
  context?: JsonValue;
  /** Bytes moved so far, for blob-like actors. */
  progress?: Progress;
}

/** An event emitted by an actor (`emit(...)`), e.g. `progress`. */
export interface HubEmittedEvent {
  /** Always `emitted`. */
  type: "emitted";
  /** Session id of the emitting actor. */
  id: string;
  /** Position in the hub's log, strictly increasing. */
  seq: number;
  /** Milliseconds since the epoch. */
  t: number;
  /** The emitted event, made JSON-safe. */
  event: JsonValue;
}

/** One entry of an actor's log. */
export type LogEntry = HubEventEvent | HubSnapshotEvent | HubEmittedEvent;

/** What subscribers receive. */
export type HubEvent =
  | { type: "actor"; actor: ActorInfo }
  | { type: "removed"; id: string }
  | LogEntry;

/** Extra facts about an actor the inspector cannot see by itself. */
export interface RegisterOptions {
  /** Kind shown in the tree, e.g. `connection`. */
  kind?: string;
  /** Human label, e.g. the remote peer's name. */
  label?: string;
  /** Session id of the logical parent (e.g. the supervisor). */
  parentId?: string;
}

/** Tuning for {@link InspectionHub}. */
export interface InspectionHubOptions {
  /** Log entries kept per actor. Default 200. */
  maxLog?: number;
  /** Finished actors kept for viewing before the oldest is dropped. Default 100. */
  maxFinished?: number;
}

interface RawEntry {
  seq: number;
  t: number;
  kind: "event" | "snapshot" | "emitted";
  payload: unknown;
  source?: string;
  cached?: LogEntry;
}

interface ActorRecord {
  info: ActorInfo;
  ref: AnyActorRef;
  log: RawEntry[];
  /** Index of the oldest entry once the ring is full. */
  head: number;
  explicitKind: boolean;
  explicitLabel: boolean;
  /** Latest state value, converted only when read. */
  lastValue?: unknown;
  cleanup: Array<() => void>;
}

interface SnapshotLike {
  status?: string;
  value?: unknown;
  context?: unknown;
  _nodes?: Array<{ id: string }>;
}

/**
 * One inspection event as xstate hands it to an `inspect` observer
 * (`@xstate.actor`, `@xstate.event`, `@xstate.snapshot`, ...). Named
 * structurally so that the public API does not expose xstate's internals.
 */
export interface InspectedEvent {
  /** The kind of inspection event, e.g. `@xstate.snapshot`. */
  readonly type: string;
  /** The actor the event is about. */
  readonly actorRef: unknown;
  /** The session id of the root of its actor system. */
  readonly rootId: string;
}

/** An observer to pass as `createActor(logic, { inspect })`. */
export interface InspectObserver {
  /** Receives each inspection event. */
  next(event: InspectedEvent): void;
}

/** An xstate actor (an `ActorRef`), as far as the hub names it. */
export interface InspectableActor {
  /** The actor's unique id in its system. */
  readonly sessionId: string;
  /** The actor's current snapshot. */
  getSnapshot(): unknown;
}

/**
 * Records xstate inspection events and the actor tree; see the module doc.
 *
 * @example
 * ```ts
 * import { createActor, createMachine } from "npm:xstate@^5.33.3";
 * import { InspectionHub } from "./inspection_hub.ts";
 * const hub = new InspectionHub();
 * const m = createMachine({ id: "light", initial: "red", states: { red: {} } });
 * const actor = createActor(m, { inspect: hub.observer }).start();
 * console.log(hub.actor(actor.sessionId)?.active); // ["light", "light.red"]
 * actor.stop();
 * ```
 */
export class InspectionHub {
  /** Pass as `createActor(logic, { inspect: hub.observer })`. */
  readonly observer: InspectObserver;
  #actors = new Map<string, ActorRecord>();
  #finished: string[] = [];
  #subscribers = new Set<(event: HubEvent) => void>();
  #machineKeys = new WeakMap<object, string>();
  #machines = new Map<string, MachineLike>();
  #definitions = new Map<string, JsonValue>();
  #configs = new Map<string, string>();
  #seq = 0;
  #maxLog: number;
  #maxFinished: number;

  /** Creates an empty hub. */
  constructor(options: InspectionHubOptions = {}) {
    this.#maxLog = Math.max(1, options.maxLog ?? 200);
    this.#maxFinished = Math.max(0, options.maxFinished ?? 100);
    const observer: Observer<InspectionEvent> = {
      next: (event) => this.#inspect(event),
    };
    this.observer = observer as InspectObserver;
  }

  /**
   * Registers an actor created on its own (no xstate parent), or adds facts
   * to one already seen. Actors not created with `hub.observer` are followed
   * through their snapshots and `progress` emits only.
   */
  register(actor: InspectableActor, options: RegisterOptions = {}): void {
    const actorRef = actor as AnyActorRef;
    let rec = this.#actors.get(actorRef.sessionId);
    if (!rec) {
      rec = this.#track(actorRef, undefined);
      const sub = actorRef.subscribe({
        next: (snapshot) => this.#snapshot(rec!, snapshot, { type: "" }),
        error: () => this.#snapshot(rec!, actorRef.getSnapshot(), { type: "" }),
        complete: () =>
          this.#snapshot(rec!, actorRef.getSnapshot(), { type: "" }),
      });
      rec.cleanup.push(() => sub.unsubscribe());
      this.#snapshot(rec, actorRef.getSnapshot(), { type: "xstate.init" });
    }
    if (options.kind !== undefined) {
      rec.info.kind = options.kind;
      rec.explicitKind = true;
    }
    if (options.label !== undefined) {
      rec.info.label = options.label;
      rec.explicitLabel = true;
    }
    if (options.parentId !== undefined) rec.info.parentId = options.parentId;
    rec.info.updatedAt = Date.now();
    this.#emit(() => ({ type: "actor", actor: infoOf(rec) }));
  }

  /** Every known actor (live and recently finished), parents before children. */
  actors(): ActorInfo[] {
    return [...this.#actors.values()]
      .map(infoOf)
      .sort((a, b) => a.createdAt - b.createdAt);
  }

  /** One actor by session id. */
  actor(id: string): ActorInfo | undefined {
    const rec = this.#actors.get(id);
    return rec ? infoOf(rec) : undefined;
  }

  /** The actor's log, oldest first, optionally only entries after `afterSeq`. */
  log(id: string, afterSeq = 0): LogEntry[] {
    const rec = this.#actors.get(id);
    if (!rec) return [];
    const ordered = [...rec.log.slice(rec.head), ...rec.log.slice(0, rec.head)];
    return ordered.filter((e) => e.seq > afterSeq).map((e) =>
      this.#materialize(rec, e)
    );
  }

  /**
   * A machine's definition as JSON (`machine.definition`, plus each state's
   * eventless `always` transitions, which the definition leaves out).
   */
  machine(key: string): JsonValue | undefined {
    const cached = this.#definitions.get(key);
    if (cached !== undefined) return cached;
    const m = this.#machines.get(key);
    if (!m) return undefined;
    const json = machineDefinition(m);
    this.#definitions.set(key, json);
    return json;
  }

  /** The machine's config as a JSON string, the form Stately's inspector reads. */
  machineConfig(key: string): string | undefined {
    const cached = this.#configs.get(key);
    if (cached !== undefined) return cached;
    const m = this.#machines.get(key);
    if (!m) return undefined;
    const text = JSON.stringify(
      toJsonSafe(m.config, {
        maxDepth: 64,
        maxItems: 10_000,
        maxString: 10_000,
      }),
    );
    this.#configs.set(key, text);
    return text;
  }

  /** Keys of all machine definitions seen. */
  machines(): string[] {
    return [...this.#machines.keys()];
  }

  /** Calls `listener` for every change until the returned function is called. */
  subscribe(listener: (event: HubEvent) => void): () => void {
    this.#subscribers.add(listener);
    return () => this.#subscribers.delete(listener);
  }

  /** Number of current subscribers. */
  get subscriberCount(): number {
    return this.#subscribers.size;
  }

  #inspect(event: InspectionEvent): void {
    switch (event.type) {
      case "@xstate.actor": {
        if (!this.#actors.has(event.actorRef.sessionId)) {
          this.#track(event.actorRef as AnyActorRef, event.rootId);
        }
        return;
      }
      case "@xstate.event": {
        const rec = this.#actors.get(event.actorRef.sessionId);
        if (rec) {
          this.#push(rec, "event", event.event, event.sourceRef?.sessionId);
        }
        return;
      }
      case "@xstate.snapshot": {
        const rec = this.#actors.get(event.actorRef.sessionId);
        if (rec) this.#snapshot(rec, event.snapshot, event.event);
        return;
      }
    }
  }

  #track(ref: AnyActorRef, rootId: string | undefined): ActorRecord {
    const logic = (ref as { logic?: unknown }).logic;
    const machine = isMachine(logic) ? logic : undefined;
    const now = Date.now();
    const parentId = ref._parent?.sessionId;
    const info: ActorInfo = {
      id: ref.sessionId,
      name: ref.id,
      kind: machine?.id ?? "actor",
      label: ref.id,
      status: "active",
      active: [],
      createdAt: now,
      updatedAt: now,
    };
    if (parentId) info.parentId = parentId;
    if (rootId && rootId !== ref.sessionId) info.rootId = rootId;
    if (machine) info.machine = this.#machineKey(machine);
    const rec: ActorRecord = {
      info,
      ref,
      log: [],
      head: 0,
      explicitKind: false,
      explicitLabel: false,
      cleanup: [],
    };
    this.#actors.set(ref.sessionId, rec);
    // Emitted `progress` events carry blob transfer progress.
    const on = (ref as { on?: unknown }).on;
    if (typeof on === "function") {
      try {
        const sub = (ref as unknown as {
          on(type: string, fn: (e: unknown) => void): { unsubscribe(): void };
        }).on("progress", (e) => this.#progress(rec, e));
        rec.cleanup.push(() => sub.unsubscribe());
      } catch {
        // Not every actor kind supports listeners; progress then comes from context.
      }
    }
    this.#emit(() => ({ type: "actor", actor: infoOf(rec) }));
    return rec;
  }

  #machineKey(machine: MachineLike): string {
    let key = this.#machineKeys.get(machine);
    if (key) return key;
    key = machine.id || "machine";
    for (let n = 2; this.#machines.has(key); n++) key = `${machine.id}~${n}`;
    this.#machineKeys.set(machine, key);
    this.#machines.set(key, machine);
    return key;
  }

  #progress(rec: ActorRecord, e: unknown): void {
    const p = readProgress(e);
    if (p) rec.info.progress = p;
    this.#push(rec, "emitted", e);
  }

  #snapshot(rec: ActorRecord, snapshot: unknown, cause: unknown): void {
    const s = (snapshot ?? {}) as SnapshotLike;
    const info = rec.info;
    const status = s.status;
    info.status =
      status === "done" || status === "error" || status === "stopped"
        ? status
        : "active";
    if (Array.isArray(s._nodes)) info.active = s._nodes.map((n) => n.id);
    if (s.value !== undefined) rec.lastValue = s.value;
    const p = readProgress(s.context);
    if (p) info.progress = p;
    info.updatedAt = Date.now();
    // Stored as a reference; value/context are converted on demand.
    this.#push(rec, "snapshot", { snapshot: s, cause, active: info.active });
    if (info.status !== "active") this.#finish(rec);
  }

  #finish(rec: ActorRecord): void {
    if (this.#finished.includes(rec.info.id)) return;
    for (const fn of rec.cleanup.splice(0)) fn();
    this.#finished.push(rec.info.id);
    while (this.#finished.length > this.#maxFinished) {
      const id = this.#finished.shift()!;
      this.#actors.delete(id);
      this.#emit(() => ({ type: "removed", id }));
    }
  }

  #push(
    rec: ActorRecord,
    kind: RawEntry["kind"],
    payload: unknown,
    source?: string,
  ): void {
    const entry: RawEntry = { seq: ++this.#seq, t: Date.now(), kind, payload };
    if (source) entry.source = source;
    if (rec.log.length < this.#maxLog) rec.log.push(entry);
    else {
      rec.log[rec.head] = entry;
      rec.head = (rec.head + 1) % this.#maxLog;
    }
    this.#emit(() => this.#materialize(rec, entry));
  }

  #materialize(rec: ActorRecord, e: RawEntry): LogEntry {
    if (e.cached) return e.cached;
    const id = rec.info.id;
    let out: LogEntry;
    if (e.kind === "snapshot") {
      const { snapshot, cause, active } = e.payload as {
        snapshot: SnapshotLike;
        cause: unknown;
        active: string[];
      };
      const st = snapshot.status;
      const snap: HubSnapshotEvent = {
        type: "snapshot",
        id,
        seq: e.seq,
        t: e.t,
        event: toJsonSafe(cause, { maxDepth: 4 }),
        status: st === "done" || st === "error" || st === "stopped"
          ? st
          : "active",
        active,
      };
      if (snapshot.value !== undefined) snap.value = toJsonSafe(snapshot.value);
      if (snapshot.context !== undefined) {
        snap.context = toJsonSafe(snapshot.context, { maxDepth: 5 });
      }
      const p = readProgress(snapshot.context);
      if (p) snap.progress = p;
      out = snap;
    } else if (e.kind === "event") {
      out = {
        type: "event",
        id,
        seq: e.seq,
        t: e.t,
        event: toJsonSafe(e.payload, { maxDepth: 4 }),
      };
      if (e.source) out.source = e.source;
    } else {
      out = {
        type: "emitted",
        id,
        seq: e.seq,
        t: e.t,
        event: toJsonSafe(e.payload, { maxDepth: 4 }),
      };
    }
    e.cached = out;
    return out;
  }

  #emit(make: () => HubEvent): void {
    if (this.#subscribers.size === 0) return;
    const event = make();
    for (const fn of this.#subscribers) {
      try {
        fn(event);
      } catch {
        // A broken subscriber must not break the actor system.
      }
    }
  }
}

function infoOf(rec: ActorRecord): ActorInfo {
  const info = { ...rec.info, active: [...rec.info.active] };
  if (rec.lastValue !== undefined) info.value = toJsonSafe(rec.lastValue);
  return info;
}

function isMachine(logic: unknown): logic is MachineLike {
  return typeof logic === "object" && logic !== null &&
    "root" in logic && "definition" in logic && "config" in logic;
}

function readProgress(v: unknown): Progress | undefined {
  if (typeof v !== "object" || v === null) return undefined;
  const { bytes, total } = v as { bytes?: unknown; total?: unknown };
  return typeof bytes === "number" && typeof total === "number"
    ? { bytes, total }
    : undefined;
}
