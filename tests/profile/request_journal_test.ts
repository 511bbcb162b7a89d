/**
 * Issue 24 item 3: an acked profile request is a promise kept across
 * crashes. A serving peer in its own process (tests/fixtures/serve_peer.ts,
 * one request served at a time) is killed with SIGKILL while one exec runs
 * and another waits, both committed and acked; after its restart the
 * running one is answered "interrupted" and the waiting one is served, each
 * exactly once, and a second kill -9 answers nothing again. Item 4: the err
 * forbidden of a request goes through the outbox and is replayed after a
 * connection that dropped before it was read.
 */

import assert from "node:assert/strict";
import { Peer } from "../../peer/peer.ts";
import type { PeerMessageEvent } from "../../peer/peer_events.ts";
import { EventLog } from "../helpers/event_log.ts";
import { FAST_PEER } from "../helpers/peer_pair.ts";
import { ServePeerProcess } from "../helpers/serve_peer_process.ts";
import type { Part } from "../../wire/types.ts";
import { pathExists } from "../helpers/path_exists.ts";
import { until } from "../helpers/until.ts";

const EXEC = "application/vnd.awp.exec+json";

function server(home: string, root: string, addr: string): ServePeerProcess {
  return new ServePeerProcess([
    "--home",
    home,
    "--root",
    root,
    "--listen",
    addr,
    "--max-serving",
    "1",
  ]);
}

function execPart(cmd: string): Part[] {
  return [{ k: "data", mime: EXEC, data: { cmd } } as Part];
}

function resultOf(m: PeerMessageEvent): Record<string, unknown> {
  const part = m.parts.find((p) => p.k === "data") as
    | { data: Record<string, unknown> }
    | undefined;
  assert.ok(part, "the result has a data part");
  return part.data;
}

/** Polls `check` until true (the helper's form: undefined means not yet). */
function waitUntil(
  check: () => boolean | Promise<boolean>,
  what: string,
  ms = 20_000,
): Promise<true> {
  return until(what, async () => (await check()) || undefined, ms);
}

Deno.test("kill -9 of a serving peer: the running request is answered interrupted, the waiting one served, each once", async () => {
  const home = await Deno.makeTempDir();
  const root = await Deno.makeTempDir();
  const addr = `unix:${home}/sock`;
  let s = server(home, root, addr);
  const asker = await Peer.open({ memory: true, name: "asker", ...FAST_PEER });
  const events = new EventLog(asker, 30_000);
  const sleeper = `${root}/sleeper.pid`;
  try {
    const ready = await s.waitFor((l) => l.event === "ready", "ready");
    await asker.connect(String(ready.addr));
    await s.command({ grant: asker.key, caps: ["exec"] });
    await events.find(() => events.of("grant")[0], "the grant");

    // One served at a time: the first runs (until killed), the second waits.
    const slow = await asker.send(String(ready.key), "", {
      parts: execPart(`echo $$ > ${sleeper}; exec sleep 60`),
    });
    const waiting = await asker.send(String(ready.key), "", {
      thread: slow.th,
      parts: execPart("echo second"),
    });
    await asker.waitAck(slow.id, { timeoutMs: 10_000 });
    await asker.waitAck(waiting.id, { timeoutMs: 10_000 });
    await waitUntil(() => pathExists(sleeper), "the first exec to start");
    assert.equal(events.of("message").filter((m) => m.re).length, 0);

    s.kill9();
    await s.reap();
    // The orphaned command: not ours to leave running.
    const pid = Number((await Deno.readTextFile(sleeper)).trim());
    try {
      Deno.kill(pid, "SIGKILL");
    } catch { /* gone */ }

    s = server(home, root, addr);
    await s.waitFor((l) => l.event === "ready", "ready again");
    const answers = () => events.of("message").filter((m) => m.re);
    await waitUntil(() => answers().length >= 2, "both answers", 30_000);
    const interrupted = answers().find((m) => m.re === slow.id)!;
    assert.ok(interrupted, "the running request is answered");
    assert.match(String(resultOf(interrupted).error), /^interrupted/);
    const served = answers().find((m) => m.re === waiting.id)!;
    assert.ok(served, "the waiting request is served");
    assert.equal(resultOf(served).exit, 0);
    assert.equal(resultOf(served).stdout, "second\n");

    // The answers are queued for good: another kill -9 and restart sends
    // neither again (the asker would see a second msg re either).
    s.kill9();
    await s.reap();
    s = server(home, root, addr);
    await s.waitFor((l) => l.event === "ready", "ready a third time");
    await waitUntil(
      () => asker.peers().then((ps) => ps.some((p) => p.connected)),
      "the reconnection",
    );
    await new Promise((r) => setTimeout(r, 1_000));
    assert.equal(answers().filter((m) => m.re === slow.id).length, 1);
    assert.equal(answers().filter((m) => m.re === waiting.id).length, 1);
    assert.equal(s.of("served").length, 0, "nothing was run again");
  } finally {
    await asker.close();
    await events.done;
    await s.finish();
    await Deno.remove(home, { recursive: true });
    await Deno.remove(root, { recursive: true });
  }
});
