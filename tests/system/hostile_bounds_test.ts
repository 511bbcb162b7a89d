/**
 * Issue 24: what a remote can make a peer hold, against a real peer process
 * (tests/fixtures/serve_peer.ts) and our own hostile client over real Unix
 * sockets: an err forbidden survives a connection dropped before it was
 * read (it is outboxed); a remote that never reads is cut off past the
 * unsent-bytes bound; a line over 1 MiB without a newline and a burst of
 * 900 KiB lines leave the peer's memory bounded while it keeps serving a
 * well-behaved peer. Bigger runs are in `deno task bench --only hostile`.
 */

import assert from "node:assert/strict";
import { Peer, type PeerOptions } from "../../peer/peer.ts";
import { HostileClient, type Line } from "../helpers/hostile_client.ts";
import { FAST_PEER } from "../helpers/peer_pair.ts";
import { ServePeerProcess } from "../helpers/serve_peer_process.ts";
import { readMemory } from "../../bench/proc_memory.ts";
import { Signer } from "../../wire/keys.ts";
import { parseArgs } from "../../cli/args.ts";
import { DAEMON_FLAGS } from "../../cli/daemon_flags.ts";
import {
  applyBounds,
  boundFlagArgv,
  parseBoundFlags,
} from "../../cli/bound_flags.ts";

const MiB = 1024 * 1024;

interface Server {
  child: ServePeerProcess;
  key: string;
  addr: string;
  home: string;
}

async function startServer(extra: string[] = []): Promise<Server> {
  const home = await Deno.makeTempDir();
  const child = new ServePeerProcess([
    "--home",
    home,
    "--listen",
    `unix:${home}/sock`,
    ...extra,
  ]);
  const ready = await child.waitFor((l) => l.event === "ready", "ready");
  return { child, key: String(ready.key), addr: String(ready.addr), home };
}

async function stopServer(s: Server): Promise<void> {
  await s.child.finish();
  await Deno.remove(s.home, { recursive: true });
}

/** A well-behaved peer exchanges one msg with the server: it still serves. */
async function stillServes(s: Server): Promise<void> {
  const peer = await Peer.open({
    memory: true,
    name: "bystander",
    ...FAST_PEER,
  });
  try {
    await peer.connect(s.addr);
    const { id } = await peer.send(s.key, "still there?");
    await peer.waitAck(id, { timeoutMs: 15_000 });
  } finally {
    await peer.close();
  }
}

function request(th: string): Record<string, unknown> {
  return {
    t: "msg",
    th,
    parts: [{
      k: "data",
      mime: "application/vnd.awp.exec+json",
      data: { cmd: "true" },
    }],
  };
}

Deno.test("err forbidden goes through the outbox: a requester that dropped before reading it gets it on its next connection", async () => {
  const s = await startServer();
  const signer = await Signer.generate();
  try {
    const first = await HostileClient.connect(s.addr, { signer });
    const id = await first.send(request("t1"));
    await first.readUntil((l) => l.t === "ack" && l.re === id);
    first.close(); // anything after the ack is never read

    const second = await HostileClient.connect(s.addr, { signer });
    try {
      const err = await second.readUntil((l: Line) => l.t === "err");
      assert.equal(err.code, "forbidden");
      assert.equal(err.re, id);
      assert.equal(err.th, "t1");
      assert.match(String(err.detail), /exec/);
    } finally {
      second.close();
    }
  } finally {
    await stopServer(s);
  }
});

Deno.test("a remote that never reads is cut off past the unsent-bytes bound, and the peer goes on serving others", async () => {
  const s = await startServer(["--max-unsent", String(256 * 1024)]);
  try {
    const c = await HostileClient.connect(s.addr);
    // Msgs are acked; the acks pile up unread until the bound closes us.
    const body = "x".repeat(100);
    let sent = 0;
    try {
      for (; sent < 200_000; sent++) {
        await c.send({
          t: "msg",
          th: `t${sent % 8}`,
          parts: [{ k: "text", text: body }],
        });
        if (s.child.of("disconnected").length > 0) break;
      }
    } catch { /* the write failed: closed on us */ }
    const gone = await s.child.waitFor(
      (l) => l.event === "disconnected" && l.peer === c.key,
      "the cut-off",
    );
    assert.match(String(gone.reason), /not reading: over 262144 bytes unsent/);
    c.close();
    await stillServes(s);
  } finally {
    await stopServer(s);
  }
});

Deno.test("a replay of many small msgs stays under the unsent bound: all arrive", async () => {
  const homes = [await Deno.makeTempDir(), await Deno.makeTempDir()];
  const options = { ...FAST_PEER, maxUnsentBytes: 64 * 1024 };
  const a = await Peer.open({ home: homes[0], ...options });
  let b = await Peer.open({ home: homes[1], ...FAST_PEER });
  try {
    const addr = await a.listen(`unix:${homes[0]}/sock`);
    await b.connect(addr);
    const key = b.key;
    await b.close();
    // 400 lines of ~250 bytes: 400 KiB as the bound counts them.
    let last = "";
    for (let i = 0; i < 400; i++) {
      last = (await a.send(key, `queued ${i}`, { thread: `r${i % 4}` })).id;
    }
    b = await Peer.open({ home: homes[1], ...FAST_PEER });
    await b.connect(addr);
    await a.waitAck(last, { timeoutMs: 30_000 });
  } finally {
    await a.close();
    await b.close();
    for (const h of homes) await Deno.remove(h, { recursive: true });
  }
});

Deno.test("a 1 MiB + 1 line without newline, then 900 KiB lines as fast as possible: bounded memory, others still served", async () => {
  const s = await startServer();
  try {
    const pid = s.child.child.pid;
    const before = (await readMemory(pid))!;
    const long = await HostileClient.connect(s.addr);
    await long.write(new Uint8Array(MiB + 1).fill(0x61)).catch(() => {});
    const err = await long.readUntil((l) => l.t === "err");
    assert.equal(err.code, "too_large");
    await long.drain();
    assert.ok(long.ended, "closed after too_large");
    long.close();

    // 900 KiB msgs, each valid: committed, acked, bounded in flight.
    const flood = await HostileClient.connect(s.addr);
    const text = "y".repeat(900 * 1024);
    const count = 40;
    const draining = flood.drain();
    const bystander = stillServes(s);
    for (let i = 0; i < count; i++) {
      await flood.send({ t: "msg", th: "big", parts: [{ k: "text", text }] });
    }
    await bystander;
    flood.close();
    await draining;
    const after = (await readMemory(pid))!;
    const peakOver = (after.hwmBytes - before.rssBytes) / MiB;
    console.log(
      `900 KiB lines x ${count}: peak RSS ${
        (after.hwmBytes / MiB).toFixed(0)
      } MiB (+${peakOver.toFixed(0)} MiB over idle)`,
    );
    // Bound: the line limit times what is in flight, not the total sent (36 MiB).
    assert.ok(peakOver < 200, `peak grew ${peakOver.toFixed(0)} MiB`);
  } finally {
    await stopServer(s);
  }
});

/** Every file under `dir`, recursively (paths relative to it). */
async function filesUnder(dir: string): Promise<string[]> {
  const out: string[] = [];
  const walk = async (at: string, rel: string) => {
    for await (const e of Deno.readDir(at)) {
      if (e.isDirectory) await walk(`${at}/${e.name}`, `${rel}${e.name}/`);
      else out.push(`${rel}${e.name}`);
    }
  };
  await walk(dir, "").catch(() => {});
  return out;
}

Deno.test("a blob over the limit is refused and its temp file removed; 1,000 blob parts announced but never sent hold nothing", async () => {
  const s = await startServer(["--max-blob", String(64 * 1024)]);
  try {
    const c = await HostileClient.connect(s.addr);
    try {
      // Two 48 KiB chunks: the second goes over the 64 KiB limit.
      const data = btoa("z".repeat(48 * 1024));
      for (let n = 0; n < 2; n++) {
        await c.send({
          t: "chunk",
          th: "b",
          ref: "big",
          n,
          last: n === 1,
          data,
        });
      }
      const refused = await c.readUntil((l) => l.t === "err");
      assert.equal(refused.code, "blob_refused");
      assert.equal(refused.ref, "big");

      // Msgs naming blobs whose chunks never come: acked, nothing kept.
      let last = "";
      for (let i = 0; i < 1_000; i++) {
        last = await c.send({
          t: "msg",
          th: "b",
          parts: [{ k: "blob", ref: `never${i}`, size: 1024 * 1024 }],
        });
      }
      await c.readUntil((l) => l.t === "ack" && l.re === last);
      assert.deepEqual(await filesUnder(`${s.home}/blobs`), []);
    } finally {
      c.close();
    }
    await stillServes(s);
  } finally {
    await stopServer(s);
  }
});

Deno.test("--max-unsent and --max-serving: checked with a one-line error, applied, passed on by up", () => {
  const values = parseBoundFlags(
    parseArgs(["--max-unsent", "1048576", "--max-serving", "2"], DAEMON_FLAGS),
  );
  const options: PeerOptions = {};
  applyBounds(options, values);
  assert.equal(options.maxUnsentBytes, 1048576);
  assert.equal(options.maxServing, 2);
  const argv = boundFlagArgv(values);
  assert.deepEqual(
    argv.slice(argv.indexOf("--max-unsent"), argv.indexOf("--max-unsent") + 2),
    ["--max-unsent", "1048576"],
  );
  for (const bad of [["--max-unsent", "-1"], ["--max-serving", "x"]]) {
    assert.throws(
      () => parseBoundFlags(parseArgs(bad, DAEMON_FLAGS)),
      (e: Error) => /--max-/.test(e.message) && !e.message.includes("\n"),
    );
  }
});
