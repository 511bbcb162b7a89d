// Two of our stdin/stdout drivers against each other, as real processes
// over a real TCP socket on 127.0.0.1 with real Deno KV homes.

import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { DriverProcess } from "../helpers/driver_process.ts";

const MOD = new URL("../../mod.ts", import.meta.url).pathname;

Deno.test("driver: two drivers talk: queued commands, send, state, blob, grant, bye, quit", async () => {
  const da = await Deno.makeTempDir({ prefix: "awp-drv-a-" });
  const db = await Deno.makeTempDir({ prefix: "awp-drv-b-" });
  const files = await Deno.makeTempDir({ prefix: "awp-drv-f-" });
  const a = new DriverProcess([
    "--state",
    da,
    "--name",
    "alpha",
    "--ping-interval",
    "0",
    "listen",
    "tcp:127.0.0.1:0",
  ]);
  let b: DriverProcess | undefined;
  try {
    const idA = await a.waitFor((e) => e.event === "identity", "a: identity");
    assert.equal(idA.name, "alpha");
    const listening = await a.waitFor(
      (e) => e.event === "listening",
      "a: listening",
    );
    assert.equal(listening.key, idA.key);
    assert.match(String(listening.addr), /^tcp:127\.0\.0\.1:\d+$/);

    // Given before any peer connected: queued, then delivered to the first one.
    await a.command({ cmd: "send", th: "t0", text: "queued on the listener" });
    b = new DriverProcess([
      "--state",
      db,
      "--name",
      "beta",
      "connect",
      String(listening.addr),
    ]);
    await b.command({
      cmd: "send",
      th: "t1",
      subject: "Run the suite",
      text: "Please run make integration.",
    });
    await b.command({ cmd: "bogus" });

    const idB = await b.waitFor((e) => e.event === "identity", "b: identity");
    const connB = await b.waitFor(
      (e) => e.event === "connected",
      "b: connected",
    );
    assert.equal(connB.key, idA.key);
    assert.equal(connB.name, "alpha");
    const connA = await a.waitFor(
      (e) => e.event === "connected",
      "a: connected",
    );
    assert.equal(connA.key, idB.key);
    assert.ok(Array.isArray(connA.caps));
    assert.match(
      String((await b.waitFor((e) => e.event === "error", "b: error")).detail),
      /unknown command "bogus"/,
    );

    const sentB = await b.waitFor(
      (e) => e.event === "sent" && e.t === "msg",
      "b: sent",
    );
    const recvA = await a.waitFor(
      (e) => e.event === "recv" && (e.msg as { th?: string }).th === "t1",
      "a: recv",
    );
    const m = recvA.msg as {
      t: string;
      id: string;
      subject: string;
      parts: Array<{ k: string; text: string }>;
    };
    assert.equal(m.t, "msg");
    assert.equal(m.id, sentB.id);
    assert.equal(m.subject, "Run the suite");
    assert.deepEqual(m.parts, [{
      k: "text",
      text: "Please run make integration.",
    }]);
    await b.waitFor(
      (e) => e.event === "acked" && e.id === sentB.id,
      "b: acked",
    );

    const sentA = await a.waitFor(
      (e) => e.event === "sent" && e.th === "t0",
      "a: sent",
    );
    const recvB = await b.waitFor(
      (e) => e.event === "recv" && (e.msg as { th?: string }).th === "t0",
      "b: recv",
    );
    assert.equal((recvB.msg as { id: string }).id, sentA.id);
    await a.waitFor(
      (e) => e.event === "acked" && e.id === sentA.id,
      "a: acked",
    );

    // state
    await a.command({
      cmd: "state",
      th: "t1",
      state: "waiting",
      note: "need the branch name",
    });
    const st = await b.waitFor(
      (e) => e.event === "recv" && (e.msg as { t: string }).t === "state",
      "b: recv state",
    );
    assert.deepEqual(
      { ...(st.msg as Record<string, unknown>), id: undefined, ts: undefined },
      {
        t: "state",
        th: "t1",
        state: "waiting",
        note: "need the branch name",
        id: undefined,
        ts: undefined,
      },
    );

    // blob: the received file is byte-identical, sha256 reported.
    const bytes = new Uint8Array(300_001).map((_, i) => (i * 31 + 7) % 256);
    await Deno.writeFile(`${files}/test-output.log`, bytes);
    await b.command({
      cmd: "blob",
      th: "t1",
      path: `${files}/test-output.log`,
      text: "log attached",
    });
    const blob = await a.waitFor((e) => e.event === "blob", "a: blob");
    const sha = createHash("sha256").update(bytes).digest("hex");
    assert.equal(blob.sha256, sha);
    assert.equal(blob.size, bytes.length);
    assert.deepEqual(await Deno.readFile(String(blob.path)), bytes);
    const withBlob = await a.waitFor((e) =>
      e.event === "recv" &&
      ((e.msg as { parts?: Array<{ k: string }> }).parts ?? []).some((p) =>
        p.k === "blob"
      ), "a: recv");
    assert.equal(
      (withBlob.msg as { parts: Array<{ k: string; ref?: string }> }).parts[1]
        .ref,
      blob.ref,
    );
    // Every received line is a recv; chunks come without their data.
    const chunks = a.lines.filter((e) =>
      e.event === "recv" && (e.msg as { t: string }).t === "chunk"
    ).map((e) => e.msg as Record<string, unknown>);
    assert.equal(chunks.length, 2, "300,001 bytes are two 256 KiB chunks");
    assert.deepEqual(chunks.map((c) => [c.ref, c.n, c.last]), [
      [blob.ref, 0, false],
      [blob.ref, 1, true],
    ]);
    assert.ok(chunks.every((c) => !("data" in c) && typeof c.id === "string"));

    // grant
    await b.command({
      cmd: "grant",
      sub: idA.key,
      caps: ["fs:read"],
      ttl: 3600,
    });
    const g = await a.waitFor(
      (e) => e.event === "recv" && (e.msg as { t: string }).t === "grant",
      "a: recv grant",
    );
    const grant =
      (g.msg as { grant: { iss: string; sub: string; caps: string[] } }).grant;
    assert.equal(grant.iss, idB.key);
    assert.equal(grant.sub, idA.key);
    assert.deepEqual(grant.caps, ["fs:read"]);
    const grantLine = g.msg as { id?: string; ts?: string };
    assert.equal(typeof grantLine.id, "string", "the grant line as sent");
    assert.equal(typeof grantLine.ts, "string");

    // Closing stdin does not stop the driver: it still receives.
    await a.closeStdin();
    const mark = a.lines.length;
    await b.command({ cmd: "send", th: "t1", text: "still there?" });
    const still = await a.waitFor(
      (e) =>
        e.event === "recv" && JSON.stringify(e.msg).includes("still there?"),
      "a: recv",
      20_000,
      mark,
    );
    assert.equal((still.msg as { t: string }).t, "msg");

    // bye: the other side sees it and the connection ends.
    const byeMark = a.lines.length;
    await b.command({ cmd: "bye", reason: "done" });
    const bye = await a.waitFor(
      (e) => e.event === "recv" && (e.msg as { t: string }).t === "bye",
      "a: recv bye",
      20_000,
      byeMark,
    );
    assert.equal((bye.msg as { reason?: string }).reason, "done");
    const disc = await a.waitFor(
      (e) => e.event === "disconnected",
      "a: disconnected",
      20_000,
      byeMark,
    );
    assert.equal(disc.key, idB.key);

    assert.equal(await b.quit(), 0);
    // a's stdin is closed: it is stopped by a signal instead, cleanly.
    assert.equal(await a.quit(), 0);
  } finally {
    a.kill9();
    b?.kill9();
    await a.quit().catch(() => {});
    await b?.quit().catch(() => {});
    for (const d of [da, db, files]) {
      await Deno.remove(d, { recursive: true }).catch(() => {});
    }
  }
});

Deno.test("driver: usage errors are one line and exit 2", async () => {
  for (
    const [args, pattern] of [
      [["listen", "tcp:127.0.0.1:0"], /--state DIR is required/],
      [
        ["--state", "/tmp/x", "dial", "tcp:127.0.0.1:1"],
        /give listen ADDR or connect ADDR/,
      ],
      [["--state", "/tmp/x", "connect", "tcp:nohost"], /invalid address/],
    ] as const
  ) {
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", "--unstable-kv", MOD, "driver", ...args],
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert.equal(out.code, 2);
    const err = new TextDecoder().decode(out.stderr).trimEnd().split("\n");
    assert.equal(err.length, 1);
    assert.match(err[0], pattern);
  }
});
