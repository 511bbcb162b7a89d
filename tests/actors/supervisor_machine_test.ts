/**
 * The supervisor chart's one-connection-per-key decision (NOTES item 4):
 * which of two connections to a key stays, as its guards route an
 * AUTHENTICATED event, and what it asks of its host.
 */

import assert from "node:assert/strict";
import { createActor } from "npm:xstate@^5.33.3";
import {
  activatesWithoutStep,
  type Authenticated,
  type SupervisorHost,
  supervisorMachine,
} from "../../actors/supervisor_machine.ts";

function chart() {
  const calls: string[] = [];
  const host: SupervisorHost<unknown> = {
    activate: (peer, conn) => calls.push(`activate ${peer} ${conn}`),
    closeDuplicate: (peer, conn, kept) =>
      calls.push(`duplicate ${peer} ${conn} kept ${kept}`),
    closeReplaced: (peer, conn) => calls.push(`replaced ${peer} ${conn}`),
    refuse: (conn) => calls.push(`refuse ${conn}`),
  };
  const actor = createActor(supervisorMachine, { input: { host } }).start();
  return { actor, calls };
}

function authenticated(
  conn: string,
  dialedBy: string,
  other?: { conn: string; dialedBy: string; since: number },
  at = 10_000,
): Authenticated<unknown> {
  return {
    type: "AUTHENTICATED",
    peer: "P",
    conn: { conn, dialedBy },
    other,
    at,
    windowMs: 5_000,
  };
}

Deno.test("supervisor chart: the first connection to a key becomes active", () => {
  const { actor, calls } = chart();
  actor.send(authenticated("c1", "A"));
  assert.deepEqual(calls, ["activate P c1"]);
});

Deno.test("supervisor chart: simultaneous open keeps the one dialed by the smaller key", () => {
  const { actor, calls } = chart();
  actor.send(authenticated("c1", "A"));
  // c2 dialed by the larger key "B", within the window: c1 stays.
  actor.send(
    authenticated("c2", "B", { conn: "c1", dialedBy: "A", since: 9_000 }),
  );
  assert.deepEqual(calls, ["activate P c1", "duplicate P c2 kept c1"]);
});

Deno.test("supervisor chart: the smaller key's connection replaces the other within the window", () => {
  const { actor, calls } = chart();
  actor.send(authenticated("c1", "B"));
  actor.send(
    authenticated("c2", "A", { conn: "c1", dialedBy: "B", since: 9_000 }),
  );
  assert.deepEqual(calls, ["activate P c1", "replaced P c1", "activate P c2"]);
});

Deno.test("supervisor chart: after the window a newer connection replaces the active one", () => {
  const { actor, calls } = chart();
  actor.send(authenticated("c1", "A"));
  actor.send(
    authenticated("c2", "B", { conn: "c1", dialedBy: "A", since: 1_000 }),
  );
  assert.deepEqual(calls, ["activate P c1", "replaced P c1", "activate P c2"]);
});

Deno.test("supervisor chart: while stopping, an authenticated connection is refused", () => {
  const { actor, calls } = chart();
  actor.send({ type: "STOP" });
  actor.send(authenticated("c1", "A"));
  assert.deepEqual(calls, ["refuse c1"]);
});

Deno.test("supervisor chart: activatesWithoutStep agrees with the chart in every state", () => {
  const other = { conn: "c0", dialedBy: "B", since: 1_000 };
  const cases: Array<[string, Authenticated<unknown>]> = [
    ["alone", authenticated("c1", "A")],
    ["replacing", authenticated("c1", "A", other)],
    [
      "simultaneous",
      authenticated("c1", "B", { ...other, dialedBy: "A", since: 9_000 }),
    ],
  ];
  const toState: Record<string, Array<{ type: "STOP" | "STOPPED" }>> = {
    running: [],
    stopping: [{ type: "STOP" }],
    stopped: [{ type: "STOP" }, { type: "STOPPED" }],
  };
  let shortcuts = 0;
  for (const [state, path] of Object.entries(toState)) {
    for (const [name, event] of cases) {
      const { actor, calls } = chart();
      for (const e of path) actor.send(e);
      assert.equal(String(actor.getSnapshot().value), state);
      const without = activatesWithoutStep(actor.getSnapshot(), event);
      actor.send(event);
      // The shortcut is taken exactly when the chart's answer is a lone activate.
      assert.equal(
        without,
        calls.length === 1 && calls[0] === "activate P c1",
        `${state}, ${name}: ${calls.join(", ")}`,
      );
      if (without) shortcuts++;
    }
  }
  assert.equal(shortcuts, 1); // running, alone
});
