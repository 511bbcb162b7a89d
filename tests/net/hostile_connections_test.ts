// Strangers that open connections and never finish the handshake, against
// a real daemon process (issue 25 item 2, issue 24 "unauthenticated
// connections").

import assert from "node:assert/strict";
import { Peer } from "../../peer/peer.ts";
import { startDaemon } from "../helpers/awp_daemon.ts";

function tcpPort(addr: string): number {
  return Number(addr.slice(addr.lastIndexOf(":") + 1));
}

/** Resolves when the other side closed `conn` (EOF or reset). */
async function closedByServer(conn: Deno.Conn): Promise<void> {
  const buf = new Uint8Array(4096);
  try {
    while ((await conn.read(buf)) !== null) { /* the server's hello */ }
  } catch { /* reset: closed too */ }
}

async function withHome(fn: (home: string) => Promise<void>): Promise<void> {
  const home = await Deno.makeTempDir({ prefix: "awp-hostile-" });
  try {
    await fn(home);
  } finally {
    await Deno.remove(home, { recursive: true }).catch(() => {});
  }
}

/** A real peer can connect and get a msg acked within `ms`. */
async function realPeerGetsThrough(
  addr: string,
  key: string,
  ms: number,
): Promise<void> {
  const peer = await Peer.open({ memory: true, name: "real" });
  try {
    const deadline = Date.now() + ms;
    for (;;) {
      try {
        await peer.connect(addr);
        break;
      } catch (error) {
        if (Date.now() > deadline) throw error;
        await new Promise((r) => setTimeout(r, 200));
      }
    }
    const { id } = await peer.send(key, "still here?");
    await peer.waitAck(id, {
      timeoutMs: Math.max(1000, deadline - Date.now()),
    });
  } finally {
    await peer.close();
  }
}

Deno.test("hostile: accepting survives running out of file descriptors; the soft limit is raised at start", async () => {
  await withHome(async (home) => {
    // Hard limit 200 (nothing to raise to): 300 bare connects exhaust it.
    const daemon = await startDaemon(
      home,
      [
        "--max-connections",
        "100000",
        "--max-unauthenticated",
        "100000",
        "--max-unauthenticated-per-host",
        "100000",
      ],
      {},
      "ulimit -n 200",
    );
    const held: Deno.Conn[] = [];
    try {
      const port = tcpPort(daemon.addr);
      for (let i = 0; i < 300; i++) {
        try {
          held.push(await Deno.connect({ hostname: "127.0.0.1", port }));
        } catch { /* backlog full: fine */ }
      }
      await new Promise((r) => setTimeout(r, 1500));
      for (const c of held.splice(0)) c.close();
      // The listener still accepts: a real peer gets in.
      await realPeerGetsThrough(daemon.addr, daemon.key, 20_000);
    } finally {
      for (const c of held) c.close();
      await daemon.stop();
    }
  });
  await withHome(async (home) => {
    // Soft 200, hard higher: the daemon raises its soft limit to the hard one.
    const daemon = await startDaemon(home, [], {}, "ulimit -Sn 200");
    try {
      const pid = Number(
        (await Deno.readTextFile(`${home}/daemon.lock`)).trim(),
      );
      const line = (await Deno.readTextFile(`/proc/${pid}/limits`)).split("\n")
        .find((l) => l.startsWith("Max open files"))!;
      const [soft, hard] = line.split(/\s+/).slice(3, 5);
      assert.equal(soft, hard, line);
      assert.notEqual(soft, "200");
    } finally {
      await daemon.stop();
    }
  });
});

Deno.test("hostile: 500 connections sending a byte a second are all closed by the handshake timeout and caps; a real peer gets through meanwhile", async () => {
  await withHome(async (home) => {
    const sock = `${home}/peer.sock`;
    const daemon = await startDaemon(home, [
      "--listen",
      `unix:${sock}`,
      "--handshake-timeout",
      "4",
    ]);
    const conns: Deno.Conn[] = [];
    let dripping = true;
    try {
      const port = tcpPort(daemon.addr);
      const closed: Promise<number>[] = [];
      for (let i = 0; i < 500; i++) {
        const opened = Date.now();
        const conn = await Deno.connect({ hostname: "127.0.0.1", port });
        conns.push(conn);
        closed.push(closedByServer(conn).then(() => Date.now() - opened));
      }
      // One byte a second each, of a hello that never ends.
      const drip = (async () => {
        const byte = new TextEncoder().encode("{");
        while (dripping) {
          await Promise.all(conns.map((c) => c.write(byte).catch(() => 0)));
          await new Promise((r) => setTimeout(r, 1000));
        }
      })();
      // A real peer (over the Unix socket: the 500 fill TCP's per-address
      // pre-auth bucket) connects and is served meanwhile.
      await realPeerGetsThrough(`unix:${sock}`, daemon.key, 10_000);
      const times = await Promise.race([
        Promise.all(closed),
        new Promise<never>((_, reject) =>
          setTimeout(
            () => reject(new Error("not all 500 were closed within 20 s")),
            20_000,
          )
        ),
      ]);
      dripping = false;
      await drip;
      assert.equal(times.length, 500);
      // Over the per-address pre-auth cap (128): closed at once, well
      // before the 4 s handshake timeout closes the others.
      const atOnce = times.filter((t) => t < 3000).length;
      assert.ok(atOnce >= 500 - 128, `${atOnce} closed at once`);
      // The ones admitted to the handshake go at its timeout, not later.
      assert.ok(
        Math.max(...times) < 15_000,
        `slowest ${Math.max(...times)} ms`,
      );
    } finally {
      dripping = false;
      for (const c of conns) {
        try {
          c.close();
        } catch { /* closed */ }
      }
      await daemon.stop();
    }
  });
});
