/**
 * What a workload gets from the bench runner: options, a temp dir, and
 * process launchers that track every child so the runner can end them all.
 *
 * @example
 * ```ts ignore
 * import { BenchContext } from "./bench_context.ts";
 * const ctx = await BenchContext.create({ quick: true, runs: 1, peer: "child" });
 * const { addr, proc } = await ctx.listener("a", "tcp:127.0.0.1:0");
 * await ctx.cleanup();
 * ```
 *
 * @module
 */

import { fileURLToPath } from "node:url";
import { BUNDLE_RUN_FLAGS, DENO_RUN_FLAGS } from "../cli/self_command.ts";
import { JsonProcess, type ProcEvent } from "./json_process.ts";

/**
 * Which program plays a peer: the CLI driver as awp starts it (from the
 * generated bundle, `cli/process_bundle.ts`), the same driver from its
 * TypeScript (`cli.ts driver`), or bench/peer_child.ts.
 */
export type PeerProgram = "driver" | "driver-ts" | "child";

/** One run's values, metric name → number. */
export type Sample = Record<string, number>;

/** What a workload's run returns. */
export interface WorkloadOutcome {
  samples: Sample[];
  notes?: string[];
  /** Units of metrics known only after the run (added to the workload's). */
  units?: Record<string, string>;
}

/** One benchmark workload. */
export interface Workload {
  /** Short id, for `--only`. */
  name: string;
  title: string;
  /** Unit of each metric the samples carry. */
  units: Record<string, string>;
  /** The sizes it uses, for the JSON. */
  params(ctx: BenchContext): Record<string, unknown>;
  run(ctx: BenchContext): Promise<WorkloadOutcome>;
}

/** Options of {@link BenchContext.create}. */
export interface BenchOptions {
  quick: boolean;
  runs: number;
  peer: PeerProgram;
  /** Progress lines go here (stderr by default). */
  log?: (line: string) => void;
}

/** The repository root (bench/..). */
export const ROOT: string = fileURLToPath(new URL("..", import.meta.url));

/**
 * Deno flags every child gets; `AWP_BENCH_DENO_FLAGS` adds more (space
 * separated), e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof` to profile peers.
 */
const DENO_RUN = [
  "run",
  ...DENO_RUN_FLAGS,
  ...(Deno.env.get("AWP_BENCH_DENO_FLAGS") ?? "").split(" ").filter((f) =>
    f !== ""
  ),
];

/** The same for the bundle, as awp starts it (`BUNDLE_RUN_FLAGS`). */
const BUNDLE_RUN = [
  "run",
  ...BUNDLE_RUN_FLAGS,
  ...DENO_RUN.slice(1 + DENO_RUN_FLAGS.length),
];

/** Starts `cmd` with the soft fd limit raised to the hard one. */
function withFdLimit(cmd: string, args: string[]): [string, string[]] {
  return [
    "sh",
    [
      "-c",
      'ulimit -n "$(ulimit -Hn)" 2>/dev/null; exec "$0" "$@"',
      cmd,
      ...args,
    ],
  ];
}

/** Is an event named `name`? */
export function isEvent(name: string): (e: ProcEvent) => boolean {
  return (e) => e.event === name;
}

/** Runner state shared by workloads; see the module doc. */
export class BenchContext {
  readonly quick: boolean;
  readonly runs: number;
  readonly peer: PeerProgram;
  /** A temp dir for this whole bench run, removed by {@link cleanup}. */
  readonly tmp: string;
  readonly log: (line: string) => void;
  #procs = new Set<JsonProcess>();
  #n = 0;

  private constructor(options: BenchOptions, tmp: string) {
    this.quick = options.quick;
    this.runs = options.runs;
    this.peer = options.peer;
    this.tmp = tmp;
    this.log = options.log ?? ((line) => console.error(line));
  }

  /** Makes the temp dir. */
  static async create(options: BenchOptions): Promise<BenchContext> {
    const tmp = await Deno.makeTempDir({ prefix: "awp-bench-" });
    return new BenchContext(options, tmp);
  }

  /** A fresh, unique dir under {@link tmp}. */
  async dir(name: string): Promise<string> {
    const path = `${this.tmp}/${name}-${++this.#n}`;
    await Deno.mkdir(path, { recursive: true });
    return path;
  }

  /**
   * Command and args that run a peer with `args` (driver flags and mode);
   * `denoFlags` go to `deno run` (e.g. `--v8-flags=--expose-gc`).
   */
  peerCommand(args: string[], denoFlags: string[] = []): [string, string[]] {
    const script = this.peer === "driver"
      ? [`${ROOT}dist/bundle/cli.js`, "driver"]
      : this.peer === "driver-ts"
      ? [`${ROOT}cli.ts`, "driver"]
      : [`${ROOT}bench/peer_child.ts`];
    return withFdLimit(Deno.execPath(), [
      ...(this.peer === "driver" ? BUNDLE_RUN : DENO_RUN),
      ...denoFlags,
      ...script,
      ...args,
    ]);
  }

  /** Spawns a tracked JSON-lines process running a Deno script. */
  spawnScript(label: string, script: string, args: string[]): JsonProcess {
    const [cmd, full] = withFdLimit(Deno.execPath(), [
      ...DENO_RUN,
      `${ROOT}${script}`,
      ...args,
    ]);
    return this.track(JsonProcess.spawn(label, cmd, full, { cwd: ROOT }));
  }

  /** Tracks a process so {@link stopAll} ends it. */
  track(proc: JsonProcess): JsonProcess {
    this.#procs.add(proc);
    return proc;
  }

  /** Spawns a peer with `--state state` and `mode addr`. */
  spawnPeer(
    label: string,
    state: string,
    mode: "listen" | "connect",
    addr: string,
    extra: string[] = [],
    denoFlags: string[] = [],
  ): JsonProcess {
    const [cmd, args] = this.peerCommand([
      "--state",
      state,
      ...extra,
      mode,
      addr,
    ], denoFlags);
    return this.track(JsonProcess.spawn(label, cmd, args, { cwd: ROOT }));
  }

  /** Starts a listening peer; resolves with its real address and key. */
  async listener(
    label: string,
    addr: string,
    options: { state?: string; extra?: string[]; denoFlags?: string[] } = {},
  ): Promise<{ proc: JsonProcess; addr: string; key: string }> {
    const state = options.state ?? await this.dir(label);
    const proc = this.spawnPeer(
      label,
      state,
      "listen",
      addr,
      options.extra,
      options.denoFlags,
    );
    const ev = await proc.waitFor(isEvent("listening"), { timeoutMs: 30_000 });
    const key = typeof ev.key === "string"
      ? ev.key
      : String((await proc.waitFor(isEvent("identity"), { timeoutMs: 1 })).key);
    return { proc, addr: String(ev.addr), key };
  }

  /**
   * A connected pair: `receiver` listens on `addr`, `sender` dials it.
   * Resolves once the sender reports the connection.
   */
  async pair(
    addr: string,
    extra: string[] = [],
  ): Promise<
    { sender: JsonProcess; receiver: JsonProcess; receiverKey: string }
  > {
    const r = await this.listener("receiver", addr, { extra });
    const sender = this.spawnPeer(
      "sender",
      await this.dir("sender"),
      "connect",
      r.addr,
      extra,
    );
    await sender.waitFor(isEvent("connected"), { timeoutMs: 30_000 });
    return { sender, receiver: r.proc, receiverKey: r.key };
  }

  /** Ends one process (quit, then signals) and forgets it. */
  async stop(proc: JsonProcess): Promise<void> {
    await proc.stop({ quit: { cmd: "quit" } });
    this.#procs.delete(proc);
  }

  /** Ends every process still running. */
  async stopAll(): Promise<void> {
    await Promise.all([...this.#procs].map((p) => this.stop(p)));
  }

  /** Ends every process and removes the temp dir. */
  async cleanup(): Promise<void> {
    await this.stopAll();
    await Deno.remove(this.tmp, { recursive: true }).catch(() => {});
  }
}
