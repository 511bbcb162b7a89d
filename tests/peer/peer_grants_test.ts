import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { Peer, type PeerOptions } from "../../peer/peer.ts";
import type { PeerMessageEvent } from "../../peer/peer_events.ts";
import type { EventLog } from "../helpers/event_log.ts";
import { pathExists } from "../helpers/path_exists.ts";
import { closeNodes, openNode } from "../helpers/peer_node.ts";
import { Signer } from "../../wire/keys.ts";
import { mintGrant } from "../../wire/grant.ts";
import type { Part } from "../../wire/types.ts";

const EXEC = "application/vnd.awp.exec+json";
const FS_READ = "application/vnd.awp.fs-read+json";

/** The msg answering `id`. */
function replyTo(events: EventLog, id: string): Promise<PeerMessageEvent> {
  return events.find(
    () => events.of("message").find((m) => m.re === id),
    `a reply to ${id}`,
  );
}

function open(name: string, extra: Partial<PeerOptions> = {}) {
  return openNode(name, extra, 15_000);
}

function request(mime: string, data: unknown): Part[] {
  return [{ k: "data", mime, data } as Part];
}

function resultData(m: PeerMessageEvent): Record<string, unknown> {
  const part = m.parts.find((p) => p.k === "data") as
    | { data: Record<string, unknown> }
    | undefined;
  assert.ok(part, "the result has a data part");
  return part.data;
}

Deno.test("Peer.open: bad trust, admission and serve options are one-line errors", async () => {
  for (
    const [options, pattern] of ([
      [{ accept: "some" as "any" }, /accept must be "any" or "allowlist"/],
      [{ trust: ["bob"] }, /trust: "bob" is not an ed25519 key/],
      [{ allow: ["x"] }, /allow: "x" is not an ed25519 key/],
      [{ serve: ["admin"] }, /serve: unknown capability "admin"/],
    ] as Array<[Partial<PeerOptions>, RegExp]>)
  ) {
    await assert.rejects(
      () => Peer.open({ memory: true, ...options }),
      (e: Error) => pattern.test(e.message) && !e.message.includes("\n"),
    );
  }
});

Deno.test("forged, expired, wrong-audience and two-level-delegated grants are not honored, nothing runs, and the connection stays", async () => {
  const root = await Deno.makeTempDir();
  const trusted = await Signer.generate();
  const c = await open("c", { trust: [trusted.key], serve: ["exec"], root });
  const b = await open("b");
  try {
    const addr = await c.peer.listen("tcp:127.0.0.1:0");
    const other = await Signer.generate();
    const x = await Signer.generate();
    const y = await Signer.generate();
    const sub = b.peer.key;
    const caps = ["exec"];
    const forged = {
      ...(await mintGrant(other, { sub, caps })),
      iss: trusted.key,
    };
    const expired = await mintGrant(trusted, {
      sub,
      caps,
      exp: "2020-01-01T00:00:00Z",
    });
    const wrongAud = await mintGrant(trusted, { sub, caps, aud: other.key });
    // trusted → x (introduce) → y (introduce) → b: two levels.
    const tx = await mintGrant(trusted, {
      sub: x.key,
      caps: ["introduce", "exec"],
    });
    const xy = await mintGrant(x, { sub: y.key, caps: ["introduce", "exec"] });
    const yb = await mintGrant(y, { sub, caps });
    await b.peer.connect(addr, {
      present: [forged, expired, wrongAud, tx, xy, yb],
    });
    const admitted = await c.events.find(
      () => c.events.of("admission").find((e) => e.peer === sub),
      "the admission",
    );
    assert.equal(admitted.admitted, true);
    assert.deepEqual(admitted.caps, []);
    assert.deepEqual(await c.peer.capsOf(sub), []);

    const marker = `${root}/ran`;
    const { id } = await b.peer.send(c.peer.key, "run this", {
      parts: request(EXEC, { cmd: ["touch", marker] }),
    });
    await b.peer.waitAck(id, { timeoutMs: 10_000 });
    const err = await b.events.find(
      () => b.events.of("error").find((e) => e.re === id),
      "err forbidden",
    );
    assert.equal(err.code, "forbidden");
    assert.equal(err.remote, true);
    assert.match(err.detail, /exec/);
    const seen = await c.events.find(
      () => c.events.of("message").find((m) => m.id === id),
      "the request at c",
    );
    assert.deepEqual(seen.requests, [
      { cap: "exec", mime: EXEC, allowed: false, served: false },
    ]);
    assert.equal(await pathExists(marker), false, "nothing ran");
    assert.equal(c.events.of("served").length, 0);
    // The connection survived all of it.
    assert.equal(b.events.of("disconnected").length, 0);
    assert.equal(
      (await b.peer.peers()).find((p) => p.key === c.peer.key)?.connected,
      true,
    );
  } finally {
    await closeNodes(b, c);
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("exec with a grant on a serving peer answers with a result msg; a short timeout kills the command", async () => {
  const root = await Deno.makeTempDir();
  const c = await open("c", { serve: ["exec"], root, execTimeoutMs: 1500 });
  const b = await open("b");
  try {
    await b.peer.connect(await c.peer.listen("tcp:127.0.0.1:0"));
    await c.peer.grant(b.peer.key, ["exec"]);
    await b.events.find(() => b.events.of("grant")[0], "the grant");
    assert.deepEqual(await c.peer.capsOf(b.peer.key), ["exec"]);

    const { id, th } = await b.peer.send(c.peer.key, "", {
      parts: request(EXEC, { cmd: ["sh", "-c", "echo hi; pwd"] }),
    });
    const reply = await replyTo(b.events, id);
    assert.equal(reply.th, th);
    const data = resultData(reply);
    assert.equal(data.exit, 0);
    assert.equal(data.stdout, `hi\n${await Deno.realPath(root)}\n`);
    const served = await c.events.find(
      () => c.events.of("served").find((e) => e.re === id),
      "the serve log",
    );
    assert.equal(served.ok, true);
    assert.equal(served.peer, b.peer.key);
    const seen = c.events.of("message").find((m) => m.id === id);
    assert.deepEqual(seen?.requests, [
      { cap: "exec", mime: EXEC, allowed: true, served: true },
    ]);

    // Output over 64 KiB: truncated inline, the whole of it as a blob.
    const loud = await b.peer.send(c.peer.key, "", {
      thread: th,
      parts: request(EXEC, { cmd: "head -c 100000 /dev/zero | tr '\\0' x" }),
    });
    const loudReply = await replyTo(b.events, loud.id);
    const loudData = resultData(loudReply);
    assert.match(loudReply.text, /^[^\n]+$/, "a one-line text");
    assert.equal(loudData.stdout_truncated, true);
    assert.equal(String(loudData.stdout).length, 65536);
    assert.equal(loudReply.blobs.length, 1);
    const [out] = loudReply.blobs;
    assert.equal(out.name, "stdout.txt");
    assert.equal(out.status, "complete");
    assert.equal(await Deno.readTextFile(out.path!), "x".repeat(100000));

    const slow = await b.peer.send(c.peer.key, "", {
      thread: th,
      parts: request(EXEC, { cmd: ["sleep", "30"] }),
    });
    const killed = resultData(await replyTo(b.events, slow.id));
    assert.equal(killed.timed_out, true);
    assert.equal(typeof killed.error, "string");
  } finally {
    await closeNodes(b, c);
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("an allowed request on a peer that does not serve it goes to the application marked allowed", async () => {
  const c = await open("c");
  const b = await open("b");
  try {
    await b.peer.connect(await c.peer.listen("tcp:127.0.0.1:0"));
    await c.peer.grant(b.peer.key, ["exec"]);
    const { id } = await b.peer.send(c.peer.key, "", {
      parts: request(EXEC, { cmd: ["true"] }),
    });
    const seen = await c.events.find(
      () => c.events.of("message").find((m) => m.id === id),
      "the request",
    );
    assert.deepEqual(seen.requests, [
      { cap: "exec", mime: EXEC, allowed: true, served: false },
    ]);
    await b.peer.waitAck(id);
    assert.equal(b.events.of("error").length, 0);
  } finally {
    await closeNodes(b, c);
  }
});

Deno.test("fs:read of a big file comes back as a blob; a path escaping the root gets an error result", async () => {
  const root = await Deno.makeTempDir();
  const big = new Uint8Array(randomBytes(200_000));
  await Deno.writeFile(`${root}/big.bin`, big);
  const c = await open("c", { serve: ["fs:read"], root });
  const b = await open("b");
  try {
    await b.peer.connect(await c.peer.listen("tcp:127.0.0.1:0"));
    await c.peer.grant(b.peer.key, ["fs:read"]);
    await b.events.find(() => b.events.of("grant")[0], "the grant");
    const { id } = await b.peer.send(c.peer.key, "", {
      parts: request(FS_READ, { path: "big.bin" }),
    });
    const reply = await replyTo(b.events, id);
    assert.equal(resultData(reply).blob, "big.bin");
    assert.equal(reply.blobs.length, 1);
    const blob = reply.blobs[0];
    assert.equal(blob.status, "complete");
    assert.equal(blob.name, "big.bin");
    assert.deepEqual(await Deno.readFile(blob.path!), big);

    const escape = await b.peer.send(c.peer.key, "", {
      parts: request(FS_READ, { path: "../../etc/passwd" }),
    });
    const failed = resultData(await replyTo(b.events, escape.id));
    assert.equal(typeof failed.error, "string");
    assert.equal(failed.content, undefined);
  } finally {
    await closeNodes(b, c);
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("allowlist: a stranger is refused with err auth and a detail; allowed, trusted, dialed and grant-presenting keys are admitted", async () => {
  const trusted = await Signer.generate();
  const t = await open("t", { memory: true });
  const c = await open("c", {
    accept: "allowlist",
    trust: [t.peer.key, trusted.key],
  });
  const stranger = await open("stranger");
  const allowed = await open("allowed");
  const dialedByC = await open("dialed");
  const presenter = await open("presenter");
  try {
    const addr = await c.peer.listen("tcp:127.0.0.1:0");
    await assert.rejects(
      () => stranger.peer.connect(addr),
      (e: Error) =>
        /not on this peer's allow list/.test(e.message) &&
        !e.message.includes("\n"),
    );
    const refused = await c.events.find(
      () => c.events.of("admission").find((e) => e.peer === stranger.peer.key),
      "the refusal",
    );
    assert.equal(refused.admitted, false);
    assert.equal(refused.why, "refused");

    c.peer.allow(allowed.peer.key);
    await allowed.peer.connect(addr);
    await t.peer.connect(addr);
    // c dialed this one before: it may dial c back.
    await c.peer.connect(await dialedByC.peer.listen("tcp:127.0.0.1:0"));
    await c.peer.bye(dialedByC.peer.key);
    await dialedByC.peer.connect(addr);
    const grant = await mintGrant(trusted, {
      sub: presenter.peer.key,
      caps: ["chat"],
    });
    await presenter.peer.connect(addr, { present: [grant] });

    const why = (key: string) =>
      c.events.of("admission").filter((e) => e.peer === key && e.admitted)
        .map((e) => e.why);
    await c.events.find(
      () => why(presenter.peer.key).length > 0,
      "the last admission",
    );
    assert.deepEqual(why(allowed.peer.key), ["allowed"]);
    assert.deepEqual(why(t.peer.key), ["trusted"]);
    assert.ok(why(dialedByC.peer.key).includes("dialed"));
    assert.deepEqual(why(presenter.peer.key), ["grant"]);
  } finally {
    await closeNodes(stranger, allowed, dialedByC, presenter, t, c);
  }
});

Deno.test("introduce end to end: A introduces C to B with a grant C honors through A's introduce grant; B connects, is admitted and served", async () => {
  const root = await Deno.makeTempDir();
  const a = await open("a");
  const b = await open("b");
  const c = await open("c", {
    accept: "allowlist",
    serve: ["exec"],
    root,
  });
  try {
    const cAddr = await c.peer.listen("tcp:127.0.0.1:0");
    const aAddr = await a.peer.listen("tcp:127.0.0.1:0");
    c.peer.allow(a.peer.key);
    await a.peer.connect(cAddr);
    // C lets A delegate exec (one level).
    await c.peer.grant(a.peer.key, ["introduce", "exec"]);
    await b.peer.connect(aAddr);
    const intro = await a.peer.introduce(b.peer.key, c.peer.key, {
      grantCaps: ["exec"],
    });
    assert.equal(intro.grant?.aud, c.peer.key);
    const introduced = await b.events.find(
      () => b.events.of("introduced")[0],
      "the introduction",
    );
    assert.equal(introduced.key, c.peer.key);
    assert.equal(introduced.address, cAddr);
    assert.ok(introduced.grant);

    // The held grant (aud C) is presented automatically.
    await b.peer.connect(introduced.address!);
    const admission = await c.events.find(
      () => c.events.of("admission").find((e) => e.peer === b.peer.key),
      "b's admission",
    );
    assert.equal(admission.admitted, true);
    assert.equal(admission.why, "grant");
    assert.deepEqual(admission.caps, ["exec"]);

    const { id } = await b.peer.send(c.peer.key, "", {
      parts: request(EXEC, { cmd: ["echo", "introduced"] }),
    });
    const data = resultData(await replyTo(b.events, id));
    assert.equal(data.stdout, "introduced\n");
  } finally {
    await closeNodes(a, b, c);
    await Deno.remove(root, { recursive: true });
  }
});
