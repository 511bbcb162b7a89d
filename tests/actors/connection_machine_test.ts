/**
 * Model-based tests of the connection statechart: every reachable state and
 * every transition out of it, generated with xstate/graph from the chart
 * itself, are replayed on a real actor under a SimulatedClock. Timeouts are
 * driven by advancing simulated time (never before the delay, exactly at it).
 */

import assert from "node:assert/strict";
import {
  type AnyStateNode,
  createActor,
  type InspectionEvent,
  SimulatedClock,
} from "npm:xstate@^5.33.3";
import { getAdjacencyMap, getShortestPaths } from "npm:xstate@^5.33.3/graph";
import {
  type ConnectionEvent,
  type ConnectionHost,
  connectionMachine,
  type ConnectionTimeouts,
  stateName,
} from "../../actors/connection_machine.ts";

// Distinct values so that no two timers ever fire at the same instant.
const TIMEOUTS: ConnectionTimeouts = {
  handshake: 2_000,
  resume: 1_000,
  bye: 500,
  pingInterval: 300,
};

const DELAY_OF: Record<string, keyof ConnectionTimeouts> = {
  handshakeTimeout: "handshake",
  resumeTimeout: "resume",
  byeTimeout: "bye",
  pingInterval: "pingInterval",
  // Without a host nothing is received: the whole interval.
  pingDue: "pingInterval",
};

/** Delayed-transition event types, as xstate names them. */
const AFTER_EVENTS = [
  "xstate.after.handshakeTimeout.connection.handshake",
  "xstate.after.resumeTimeout.connection.resume",
  "xstate.after.byeTimeout.connection.closing",
  "xstate.after.pingDue.connection.open.idle",
  "xstate.after.pingInterval.connection.open.pinging",
].map((type) => ({ type }) as unknown as ConnectionEvent);

/** Our key and another valid one (a key of 32 zero bytes is canonical). */
const OWN_KEY = `ed25519:${"A".repeat(43)}`;
const THEIR_KEY = `ed25519:${"B".repeat(42)}A`;

/** A received line as the edge hands it to the chart. */
function frame(
  message: Record<string, unknown>,
  invalid?: string,
): ConnectionEvent {
  const raw = JSON.stringify({ id: "01", ts: "x", ...message });
  return {
    type: "FRAME",
    frame: {
      message: JSON.parse(raw),
      raw,
      size: raw.length,
      ...(invalid !== undefined ? { invalid } : {}),
    },
  };
}

/** One line per route of the chart (see its FRAME transitions). */
const FRAMES: ConnectionEvent[] = [
  frame({ t: "hello", v: 0, key: THEIR_KEY }),
  frame({ t: "hello", v: 1, key: THEIR_KEY }, "v must be 0"),
  frame({ t: "hello", v: 0, key: "ed25519:nope" }, "key"),
  frame({ t: "hello", v: 0, key: THEIR_KEY }, "nonce is required"),
  frame({ t: "hello", v: 0, key: OWN_KEY }),
  frame({ t: "auth", sig: "x" }),
  frame({ t: "resume", seen: {} }),
  frame({ t: "msg", th: "t1" }),
  frame({ t: "msg", th: "t1" }, "parts is required"),
  frame({ t: "presence" }, "doc is required"),
  frame({ t: "ack", re: "01" }),
  frame({ t: "ping" }),
  frame({ t: "pong", re: "01" }),
  frame({ t: "grant" }),
  frame({ t: "bye", reason: "done" }),
  frame({ t: "err", code: "auth" }),
  frame({ t: "err", code: "unsupported" }),
];

/** The verdicts on their auth (the host verifies it in `auth`, VERIFIES_AUTH). */
const VERDICTS: ConnectionEvent[] = [
  { type: "AUTH_REFUSED", code: "auth", detail: "refused", re: "01" },
  { type: "AUTH_REFUSED", code: "internal", detail: "storage failed: x" },
];

const EVENTS: ConnectionEvent[] = [
  { type: "HELLO_OK" },
  { type: "AUTH_OK" },
  { type: "RESUME" },
  { type: "PONG" },
  { type: "PEER_ERR", code: "auth", detail: "refused" },
  { type: "PEER_ERR", code: "too_large" },
  { type: "PEER_ERR", code: "unsupported" },
  { type: "PEER_ERR", code: "blob_refused" },
  { type: "FAIL", code: "bad_frame", detail: "not JSON" },
  { type: "FAIL", detail: "storage failed" },
  { type: "BYE", reason: "done" },
  { type: "PEER_BYE", reason: "done" },
  { type: "END", reason: "eof" },
  { type: "CLOSE", reason: "replaced" },
  ...AFTER_EVENTS,
  ...FRAMES,
  ...VERDICTS,
];

const SENDS = new Set([
  "sendHello",
  "sendAuth",
  "sendResume",
  "replay",
  "sendPing",
  "sendBye",
  "replyBye",
  "sendErr",
]);

/** "xstate.after.d.connection.open.idle" → { open: "idle" }. */
function afterStateValue(type: string): unknown {
  const path = type.split(".").slice(4);
  let value: unknown = path.pop();
  while (path.length) value = { [path.pop()!]: value };
  return value;
}

interface Run {
  actions: string[];
  transitions: Set<unknown>;
}

/** A real actor of the chart with recording actions and simulated time. */
function startActor(timeouts: ConnectionTimeouts, host?: ConnectionHost) {
  const run: Run = { actions: [], transitions: new Set() };
  const record = (name: string) => () => void run.actions.push(name);
  const machine = connectionMachine.provide({
    actions: {
      sendHello: record("sendHello"),
      sendAuth: record("sendAuth"),
      sendResume: record("sendResume"),
      replay: record("replay"),
      opened: record("opened"),
      sendPing: record("sendPing"),
      sendBye: record("sendBye"),
      replyBye: record("replyBye"),
      sendErr: (_, params) => void run.actions.push(`sendErr:${params.code}`),
      closeTransport: record("closeTransport"),
    },
  });
  const clock = new SimulatedClock();
  const actor = createActor(machine, {
    input: { timeouts, key: OWN_KEY, ...(host ? { host } : {}) },
    clock,
    inspect: (ev: InspectionEvent) => {
      if (ev.type === "@xstate.microstep") {
        for (const t of ev._transitions) {
          run.transitions.add(describeTransition(t));
        }
      }
    },
  });
  actor.start();
  return { actor, clock, run, machine };
}

function key(snapshot: { value: unknown; context: { missed: number } }) {
  return JSON.stringify([snapshot.value, snapshot.context.missed]);
}

/** Applies one model event to the real actor; timeouts by advancing time. */
function apply(
  env: ReturnType<typeof startActor>,
  event: ConnectionEvent,
  timeouts: ConnectionTimeouts,
) {
  const { actor, clock } = env;
  if (event.type.startsWith("xstate.after.")) {
    const delay = event.type.split(".")[2];
    const ms = timeouts[DELAY_OF[delay]];
    const before = key(actor.getSnapshot());
    clock.increment(ms - 1);
    assert.equal(
      key(actor.getSnapshot()),
      before,
      `${delay} fired before ${ms} ms`,
    );
    clock.increment(1);
  } else {
    actor.send(event);
  }
}

/** Protocol invariants that must hold after any sequence of events. */
function checkInvariants(run: Run, state: string, path: string) {
  const a = run.actions;
  assert.equal(a[0], "sendHello", `${path}: hello is sent first`);
  assert.equal(a.filter((x) => x === "sendHello").length, 1, path);
  const closes = a.filter((x) => x === "closeTransport").length;
  assert.equal(closes, state === "closed" ? 1 : 0, `${path}: closed once`);
  if (closes) assert.equal(a.at(-1), "closeTransport", `${path}: close last`);
  const bye = a.indexOf("sendBye");
  if (bye >= 0) {
    const after = a.slice(bye + 1).filter((x) => SENDS.has(x.split(":")[0]));
    assert.deepEqual(after, [], `${path}: nothing is sent after bye`);
  }
  const order = ["sendAuth", "sendResume", "replay", "opened"];
  let last = -1;
  for (const step of order) {
    const i = a.indexOf(step);
    if (i < 0) break;
    assert.ok(i > last, `${path}: ${step} in handshake order`);
    last = i;
  }
  for (const step of order) {
    if (a.indexOf(step) < 0) {
      for (const later of order.slice(order.indexOf(step) + 1)) {
        assert.ok(!a.includes(later), `${path}: ${later} without ${step}`);
      }
    }
  }
  if (a.includes("sendPing")) {
    assert.ok(a.includes("opened"), `${path}: pings only when open`);
  }
}

/** Every transition definition in the chart. */
function allTransitions(root: AnyStateNode): Set<unknown> {
  const out = new Set<unknown>();
  const visit = (node: AnyStateNode) => {
    for (const defs of node.transitions.values()) {
      for (const d of defs) out.add(d);
    }
    for (const d of node.always ?? []) out.add(d);
    for (const child of Object.values(node.states)) visit(child);
  };
  visit(root);
  return out;
}

/** A transition's identity, stable across `.provide()` copies of the chart. */
function describeTransition(t: unknown): string {
  const d = t as {
    source: { id: string };
    eventType: string;
    target?: Array<{ id: string }>;
    guard?: unknown;
  };
  const guard = typeof d.guard === "string"
    ? d.guard
    : (d.guard as { type?: string } | undefined)?.type ?? "";
  const target = d.target?.map((n) => n.id).join(",") ?? "(self)";
  return `${d.source.id} on ${d.eventType || "(always)"} -> ${target} ${guard}`;
}

for (const pingInterval of [TIMEOUTS.pingInterval, 0]) {
  Deno.test(`model: every state and transition (pingInterval ${pingInterval})`, () => {
    const timeouts = { ...TIMEOUTS, pingInterval };
    // createTestModel refuses charts with `after`; the traversal functions
    // accept them, with delayed transitions modelled as their events.
    const options = {
      events: EVENTS,
      input: { timeouts, key: OWN_KEY },
      // A timer only exists while its state is active.
      filterEvents: (
        snap: { matches: (v: never) => boolean },
        e: ConnectionEvent,
      ) => {
        if (e.type.startsWith("xstate.after.")) {
          return snap.matches(afterStateValue(e.type) as never);
        }
        // A refusal only exists where their auth is verified.
        if (e.type === "AUTH_REFUSED") {
          return snap.matches({ handshake: "auth" } as never);
        }
        return true;
      },
    };
    const adjacency = getAdjacencyMap(connectionMachine, options);
    const paths = getShortestPaths(connectionMachine, options);
    const pathTo = new Map<string, ConnectionEvent[]>();
    for (const p of paths) {
      pathTo.set(key(p.state), p.steps.map((s) => s.event));
    }
    const covered = new Set<unknown>();
    let machine: typeof connectionMachine | undefined;
    const stateNames = new Set<string>();
    let edges = 0;
    for (const entry of Object.values(adjacency)) {
      const prefix = pathTo.get(key(entry.state));
      assert.ok(prefix, `no path to ${key(entry.state)}`);
      const transitions = Object.values(entry.transitions) as Array<
        { event: ConnectionEvent; state: typeof entry.state }
      >;
      for (const { event, state: expected } of transitions) {
        edges++;
        const env = startActor(timeouts);
        machine = env.machine;
        const label = [...prefix, event].map((e) => e.type).join(" > ");
        for (const e of prefix) apply(env, e, timeouts);
        assert.equal(key(env.actor.getSnapshot()), key(entry.state), label);
        apply(env, event, timeouts);
        const snap = env.actor.getSnapshot();
        assert.equal(key(snap), key(expected), label);
        const name = stateName(snap.value);
        stateNames.add(name);
        assert.equal(snap.status === "done", name === "closed", label);
        checkInvariants(env.run, name, label);
        for (const t of env.run.transitions) covered.add(t);
        env.actor.stop();
      }
    }
    assert.ok(edges > 40, `only ${edges} edges walked`);
    for (
      const s of ["hello", "auth", "resume", "open", "closing", "closed"]
    ) assert.ok(stateNames.has(s), `state ${s} never reached`);
    // Transition coverage against the chart's own definitions.
    const defined = allTransitions(machine!.root);
    const missing = [...defined].map(describeTransition)
      .filter((d) => !covered.has(d))
      // With pinging off the ping timers are unreachable, and vice versa.
      .filter((d) =>
        pingInterval > 0
          ? !d.includes("open.off") &&
            !d.includes("-> connection.open.off")
          : !d.includes("open.idle") && !d.includes("open.pinging")
      )
      // Without a host nothing is ever received: walked in the tests below.
      .filter((d) => !d.endsWith(" heardWhileWaiting"));
    assert.deepEqual(missing, [], "transitions never taken");
  });
}

/**
 * An open actor whose host only knows when a line was last received (on the
 * simulated clock); the chart's other host calls do nothing.
 */
function openWithHost() {
  const time = { receivedAt: 0, waitFrom: 0, now: () => 0 };
  const liveness: Partial<ConnectionHost> = {
    startWait: () => void (time.waitFrom = time.now()),
    quietFor: () => time.now() - time.receivedAt,
    waitedFor: () => time.now() - time.waitFrom,
  };
  const host = new Proxy(liveness, {
    get: (target, name: keyof ConnectionHost) => target[name] ?? (() => {}),
  }) as ConnectionHost;
  const env = startActor(TIMEOUTS, host);
  time.now = () => env.clock.now();
  for (const type of ["HELLO_OK", "AUTH_OK", "RESUME"] as const) {
    env.actor.send({ type });
  }
  const pings = () => env.run.actions.filter((a) => a === "sendPing").length;
  const state = () => stateName(env.actor.getSnapshot().value);
  const receive = () => void (time.receivedAt = env.clock.now());
  // SimulatedClock runs due timers at the end of an increment: 1 ms steps
  // keep what they read of the clock exact.
  const advance = (ms: number) => {
    for (let i = 0; i < ms; i++) env.clock.increment(1);
  };
  return { ...env, pings, state, receive, advance };
}

Deno.test("model: two missed pongs mean dead; a pong ends the wait for it", () => {
  const env = openWithHost();
  const interval = TIMEOUTS.pingInterval;
  env.advance(interval - 1);
  assert.equal(env.pings(), 0);
  env.advance(1);
  assert.equal(env.pings(), 1);
  env.advance(50);
  env.receive(); // the pong, 50 ms after the ping
  env.actor.send({ type: "PONG" });
  env.advance(interval - 1);
  assert.equal(env.pings(), 1, "no ping before the interval since the pong");
  env.advance(1);
  assert.equal(env.pings(), 2, "quiet for the interval: ping");
  env.advance(interval);
  assert.equal(env.pings(), 3, "one missed pong: ping again");
  env.advance(interval - 1);
  assert.equal(env.state(), "open");
  env.advance(1);
  const snap = env.actor.getSnapshot();
  assert.equal(snap.value, "closed");
  assert.match(snap.context.reason, /dead/);
  assert.equal(env.run.actions.at(-1), "closeTransport");
});

Deno.test("model: a re-armed wait still times out: a peer that goes quiet is dropped on time", () => {
  const env = openWithHost();
  const interval = TIMEOUTS.pingInterval;
  // Lines keep coming, each before the interval is up: never a ping.
  for (let i = 0; i < 10; i++) {
    env.advance(interval - 20);
    env.receive();
  }
  assert.equal(env.pings(), 0);
  const quietSince = env.clock.now();
  // Then nothing: a ping an interval after the last line, another one
  // interval later, and dead one interval after that.
  env.advance(interval - 1);
  assert.equal(env.pings(), 0);
  env.advance(1);
  assert.equal(env.pings(), 1);
  env.advance(interval);
  assert.equal(env.pings(), 2);
  env.advance(interval - 1);
  assert.equal(env.state(), "open");
  env.advance(1);
  assert.equal(env.state(), "closed");
  assert.equal(env.clock.now() - quietSince, 3 * interval);
  assert.match(env.actor.getSnapshot().context.reason, /dead/);
});

Deno.test("model: err codes close exactly as SPEC 9.7 says", () => {
  const codes: Record<string, boolean> = {
    bad_frame: true,
    version: true,
    auth: true,
    too_large: true,
    unsupported: false,
    forbidden: false,
    blob_refused: false,
    internal: false,
  };
  for (const [code, closes] of Object.entries(codes)) {
    const env = startActor(TIMEOUTS);
    for (const type of ["HELLO_OK", "AUTH_OK", "RESUME"] as const) {
      env.actor.send({ type });
    }
    env.actor.send({ type: "PEER_ERR", code });
    assert.equal(
      env.actor.getSnapshot().value === "closed",
      closes,
      `err ${code}`,
    );
    env.actor.stop();
  }
});

Deno.test("model: a peer's bye is answered with bye, then closed", () => {
  const env = startActor(TIMEOUTS);
  for (const type of ["HELLO_OK", "AUTH_OK", "RESUME"] as const) {
    env.actor.send({ type });
  }
  env.actor.send({ type: "PEER_BYE", reason: "done" });
  assert.deepEqual(env.run.actions.slice(-2), ["replyBye", "closeTransport"]);
  assert.equal(env.actor.getSnapshot().context.reason, "peer said bye: done");
});

Deno.test("model: our bye closes on their bye, or after byeTimeout", () => {
  for (const answered of [true, false]) {
    const env = startActor(TIMEOUTS);
    for (const type of ["HELLO_OK", "AUTH_OK", "RESUME"] as const) {
      env.actor.send({ type });
    }
    env.actor.send({ type: "BYE" });
    assert.equal(env.actor.getSnapshot().value, "closing");
    if (answered) env.actor.send({ type: "PEER_BYE" });
    else env.clock.increment(TIMEOUTS.bye);
    const snap = env.actor.getSnapshot();
    assert.equal(snap.value, "closed");
    assert.equal(
      snap.context.reason,
      answered ? "bye" : "bye: no answer in time",
    );
  }
});

Deno.test("model: a line other than the pong still counts when the ping's wait ends", () => {
  const env = openWithHost();
  const interval = TIMEOUTS.pingInterval;
  env.advance(interval);
  assert.equal(env.pings(), 1);
  env.advance(100);
  env.receive(); // an ack, say: no PONG event
  env.advance(interval - 100);
  assert.equal(
    env.pings(),
    1,
    "heard during the wait: idle, not a second ping",
  );
  env.advance(100 - 1);
  assert.equal(env.pings(), 1);
  env.advance(1);
  assert.equal(env.pings(), 2, "an interval after that line: ping");
  assert.equal(env.actor.getSnapshot().context.missed, 1);
});
