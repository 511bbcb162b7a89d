/**
 * The dashboard's server without a browser: two real Peers over a unix
 * socket, the server on loopback. Host checks (DNS rebinding), the CSP and
 * other headers, the write gate (read-only default; same origin and the
 * per-run token under `write`), the event stream's replay from
 * `Last-Event-ID`, the conversation's delivery marks, blob downloads as
 * attachments, and the embedded bundle being up to date with web/app/.
 */
import assert from "node:assert/strict";
import { Peer } from "../../peer/peer.ts";
import { serveDashboard } from "../../web/serve_dashboard.ts";
import type { Conversation, Snapshot } from "../../web/dashboard_types.ts";
import { awp, awpOk } from "../helpers/awp_cli.ts";

const fast = { timeouts: { pingInterval: 0, bye: 1000 } };

/** One raw HTTP/1.1 request (fetch will not send a foreign Host header). */
async function rawGet(
  port: number,
  path: string,
  host: string,
): Promise<{ status: number; head: string }> {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  try {
    await conn.write(
      new TextEncoder().encode(
        `GET ${path} HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`,
      ),
    );
    let text = "";
    const buf = new Uint8Array(16384);
    while (!text.includes("\r\n\r\n")) {
      const n = await conn.read(buf);
      if (n === null) break;
      text += new TextDecoder().decode(buf.subarray(0, n));
    }
    const head = text.split("\r\n\r\n")[0];
    return { status: Number(head.split(" ")[1]), head };
  } finally {
    conn.close();
  }
}

/** Reads SSE events from `url` until `enough` says stop; returns them. */
async function readEvents(
  url: string,
  headers: Record<string, string>,
  enough: (
    events: Array<{ id: string; event: string; data: string }>,
  ) => boolean,
): Promise<Array<{ id: string; event: string; data: string }>> {
  const ctl = new AbortController();
  const res = await fetch(url, { headers, signal: ctl.signal });
  assert.equal(
    res.headers.get("content-type"),
    "text/event-stream; charset=utf-8",
  );
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  const events: Array<{ id: string; event: string; data: string }> = [];
  let buf = "";
  try {
    while (!enough(events)) {
      const { value, done } = await reader.read();
      if (done) break;
      buf += value;
      let cut;
      while ((cut = buf.indexOf("\n\n")) >= 0) {
        const block = buf.slice(0, cut);
        buf = buf.slice(cut + 2);
        const field = (name: string) =>
          block.split("\n").find((l) => l.startsWith(`${name}: `))?.slice(
            name.length + 2,
          );
        const event = field("event");
        if (event) {
          events.push({ id: field("id")!, event, data: field("data")! });
        }
      }
    }
  } finally {
    ctl.abort();
    await reader.cancel().catch(() => {});
  }
  return events;
}

async function twoPeers(dir: string) {
  const alice = await Peer.open({ home: `${dir}/a`, name: "alice", ...fast });
  const bob = await Peer.open({ home: `${dir}/b`, name: "bob", ...fast });
  await alice.connect(await bob.listen(`unix:${dir}/bob.sock`));
  return { alice, bob };
}

Deno.test({
  name:
    "dashboard server: Host check, CSP, read-only by default, replay from Last-Event-ID",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "awp-webs-" });
    const { alice, bob } = await twoPeers(dir);
    const web = await serveDashboard({
      peer: alice,
      self: () => ({ key: alice.key, name: "alice", addrs: [] }),
    });
    try {
      const port = Number(new URL(web.url).port);
      // Only the bound name (and localhost on loopback) is answered.
      assert.equal((await rawGet(port, "/", `127.0.0.1:${port}`)).status, 200);
      assert.equal((await rawGet(port, "/", `localhost:${port}`)).status, 200);
      assert.equal(
        (await rawGet(port, "/", `evil.example:${port}`)).status,
        403,
      );
      assert.equal((await rawGet(port, "/", "127.0.0.1:1")).status, 403);
      assert.equal((await rawGet(port, "/", "")).status, 403);

      const page = await fetch(web.url);
      const csp = page.headers.get("content-security-policy") ?? "";
      assert.match(csp, /default-src 'none'/);
      assert.match(csp, /script-src 'self'(;|$)/);
      assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval|https?:/);
      assert.equal(page.headers.get("x-content-type-options"), "nosniff");
      const body = await page.text();
      assert.doesNotMatch(body, /<script>|<style>|awp-token/);
      assert.match(body, /<script type="module" src="\/app.js"><\/script>/);
      const js = await fetch(new URL("/app.js", web.url));
      assert.match(js.headers.get("content-type") ?? "", /^text\/javascript/);
      assert.ok((await js.text()).length > 10_000);

      // Read-only: every write is refused, token or not.
      const post = await fetch(new URL("/api/send", web.url), {
        method: "POST",
        headers: {
          "content-type": "application/json",
          origin: web.url.slice(0, -1),
        },
        body: JSON.stringify({ peer: bob.key, text: "hi" }),
      });
      assert.equal(post.status, 403);
      assert.match(await post.text(), /read-only/);

      // The stream opens with a snapshot, then changes; a reconnect with
      // Last-Event-ID gets exactly what it missed, no snapshot.
      const first = await readEvents(
        `${web.url}events`,
        {},
        (es) => es.some((e) => e.event === "snapshot"),
      );
      const snap = JSON.parse(first[0].data) as Snapshot;
      assert.equal(first[0].event, "snapshot");
      assert.equal(snap.self.name, "alice");
      assert.equal(snap.peers[0].name, "bob");
      assert.equal(snap.peers[0].connected, true);
      const { id, th } = await bob.send(alice.key, "missed while away", {
        subject: "Replay",
      });
      await bob.waitAck(id, { timeoutMs: 10_000 });
      const replay = await readEvents(
        `${web.url}events`,
        { "last-event-id": first[0].id },
        (es) =>
          es.some((e) => e.event === "touch" && e.data.includes(th)) &&
          es.some((e) => e.event === "line" && e.data.includes("missed")) &&
          // Lists skipped while nobody watched come fresh after the replay.
          es.some((e) => e.event === "threads" && e.data.includes(th)),
      );
      assert.ok(!replay.some((e) => e.event === "snapshot"));
      const ns = replay.map((e) => Number(e.id.split("-")[1]));
      assert.deepEqual(ns, [...ns].sort((x, y) => x - y));
      assert.ok(ns[0] > Number(first[0].id.split("-")[1]));
      // An id from another run gets a snapshot instead.
      const other = await readEvents(
        `${web.url}events`,
        { "last-event-id": "deadbeef-3" },
        (es) => es.length > 0,
      );
      assert.equal(other[0].event, "snapshot");
      assert.ok(
        (JSON.parse(other[0].data) as Snapshot).activity.some((l) =>
          l.line.includes("missed while away")
        ),
      );
    } finally {
      await web.close();
      await alice.close();
      await bob.close();
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test({
  name:
    "dashboard server: writes need the same origin and the run's token; delivery marks; blob downloads are attachments",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "awp-webw-" });
    const { alice, bob } = await twoPeers(dir);
    const web = await serveDashboard({
      peer: alice,
      self: () => ({ key: alice.key, addrs: [] }),
    }, { write: true });
    try {
      const origin = web.url.slice(0, -1);
      const page = await (await fetch(web.url)).text();
      const token = page.match(/name="awp-token" content="([0-9a-f]+)"/)?.[1];
      assert.ok(token && token.length >= 32, "the page carries the token");
      const send = (headers: Record<string, string>, body: unknown) =>
        fetch(new URL("/api/send", web.url), {
          method: "POST",
          headers: { "content-type": "application/json", ...headers },
          body: JSON.stringify(body),
        });
      const msg = { peer: bob.key, text: "from the page", subject: "Web" };
      const refused: Array<Record<string, string>> = [
        { origin, "x-awp-token": "0".repeat(48) },
        { origin: "http://evil.example", "x-awp-token": token },
        { "x-awp-token": token },
        { origin },
      ];
      for (const headers of refused) {
        const r = await send(headers, msg);
        assert.equal(r.status, 403, JSON.stringify(headers));
        await r.body?.cancel();
      }
      const bad = await send({ origin, "x-awp-token": token }, {
        peer: bob.key,
      });
      assert.equal(bad.status, 400);
      assert.equal(await bad.text(), "missing text\n");
      const ok = await send({ origin, "x-awp-token": token }, msg);
      assert.equal(ok.status, 200);
      const sent = await ok.json() as { id: string; th: string };
      await alice.waitAck(sent.id, { timeoutMs: 10_000 });

      const state = await fetch(new URL("/api/state", web.url), {
        method: "POST",
        headers: { origin, "x-awp-token": token },
        body: JSON.stringify({ peer: bob.key, th: sent.th, state: "waiting" }),
      });
      assert.equal(state.status, 200);
      await state.body?.cancel();
      const grant = await fetch(new URL("/api/grant", web.url), {
        method: "POST",
        headers: { origin, "x-awp-token": token },
        body: JSON.stringify({ peer: bob.key, caps: ["rm -rf"] }),
      });
      assert.equal(grant.status, 400);
      assert.match(await grant.text(), /unknown capability/);

      // Bob's reply with a blob; then a msg to bob while he is away: queued.
      const file = `${dir}/report.html`;
      await Deno.writeTextFile(file, "<script>alert(1)</script>");
      const reply = await bob.send(alice.key, "here", {
        thread: sent.th,
        files: [file],
      });
      await bob.waitAck(reply.id, { timeoutMs: 10_000 });
      let conv: Conversation | undefined;
      for (let i = 0; i < 100; i++) {
        conv = await (await fetch(
          `${web.url}api/conversation?${new URLSearchParams({
            peer: bob.key,
            th: sent.th,
          })}`,
        )).json() as Conversation;
        if (conv.items.find((x) => x.id === reply.id)?.blobs?.[0].download) {
          break;
        }
        await new Promise((r) => setTimeout(r, 50));
      }
      const mine = conv!.items.find((x) => x.id === sent.id)!;
      assert.equal(mine.delivery, "acked");
      assert.equal(conv!.subject, "Web");
      assert.ok(
        conv!.items.some((x) => x.kind === "state" && x.state === "waiting"),
      );
      const blob = conv!.items.find((x) => x.id === reply.id)!.blobs![0];
      assert.equal(blob.name, "report.html");
      assert.equal(blob.status, "complete");
      const dl = await fetch(new URL(blob.download!, web.url));
      assert.equal(dl.headers.get("content-type"), "application/octet-stream");
      assert.match(dl.headers.get("content-disposition") ?? "", /^attachment;/);
      assert.equal(await dl.text(), "<script>alert(1)</script>");

      await bob.close();
      const later = await alice.send(bob.key, "while you are away", {
        thread: sent.th,
      });
      const after = await (await fetch(
        `${web.url}api/conversation?${new URLSearchParams({
          peer: bob.key,
          th: sent.th,
        })}`,
      )).json() as Conversation;
      assert.equal(
        after.items.find((x) => x.id === later.id)?.delivery,
        "queued",
      );
    } finally {
      await web.close();
      await alice.close();
      await bob.close();
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test("dashboard bundle: web/app_bundle.generated.ts matches web/app/", async () => {
  const { success, stderr } = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      new URL("../../web/build_bundle.ts", import.meta.url).pathname,
      "--check",
    ],
    stdout: "null",
    stderr: "piped",
  }).output();
  assert.ok(success, new TextDecoder().decode(stderr));
});

Deno.test({
  name:
    "awp web: a bad --listen is one usage line; starts the daemon when none runs; serves once; status shows it",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const home = await Deno.makeTempDir({ prefix: "awp-webcli-" });
    try {
      const bad = await awp(home, ["web", "--listen", "nowhere"]);
      assert.equal(bad.code, 2);
      assert.equal(
        bad.stderr.trim(),
        'awp: bad --listen "nowhere": use HOST:PORT',
      );
      // No daemon yet: `awp web` starts one with the dashboard on.
      const first = JSON.parse(
        await awpOk(home, ["web", "--listen", "127.0.0.1:0", "--json"]),
      ) as { url: string; write: boolean };
      assert.match(first.url, /^http:\/\/127\.0\.0\.1:\d+\/$/);
      assert.equal(first.write, false);
      // Asked again (with --write): the same server, and a note saying why
      // the page stays read-only.
      const again = await awp(home, ["web", "--write"]);
      assert.equal(again.code, 0, again.stderr);
      assert.equal(again.stdout.trim(), first.url);
      assert.match(again.stderr, /read-only/);
      assert.match(
        await awpOk(home, ["status"]),
        /^web http:\/\/127\.0\.0\.1/m,
      );
      assert.equal((await fetch(first.url)).status, 200);
    } finally {
      await awp(home, ["down"]);
      await Deno.remove(home, { recursive: true });
    }
  },
});

Deno.test("tailLog: the newest entries of a forward-only log, across gaps", async () => {
  const { tailLog } = await import("../../web/tail_log.ts");
  // Seqs 0..2999 with every third one missing (retention, replays).
  const entries = Array.from({ length: 3000 }, (_, i) => i)
    .filter((i) => i % 3 !== 1)
    .map((seq) => ({
      seq,
      peer: "p",
      dir: "in" as const,
      t: "msg",
      line: "{}",
      at: 0,
    }));
  let reads = 0;
  const source = {
    log: ({ after = -1, limit = Infinity }) => {
      reads++;
      return Promise.resolve(
        entries.filter((e) => e.seq > after).slice(0, limit),
      );
    },
  };
  const last = await tailLog(source, 300);
  assert.equal(last.length, 300);
  assert.deepEqual(last.slice(-2).map((e) => e.seq), [2997, 2999]);
  assert.deepEqual(last, entries.slice(-300));
  assert.ok(reads < 40, `${reads} reads`);
  assert.deepEqual(
    (await tailLog(source, 5000)).length,
    entries.length,
    "asking for more than there is gives all",
  );
  assert.deepEqual(await tailLog({ log: () => Promise.resolve([]) }, 10), []);
});
