import assert from "node:assert/strict";
import { Peer, type PeerOptions } from "../../peer/peer.ts";
import { FAST_PEER, openPeerPair } from "../helpers/peer_pair.ts";
import { randomBytes } from "../helpers/random_bytes.ts";
import { sha256Hex } from "../helpers/sha256_hex.ts";
import { hasOpenssl, makeTestCa } from "../helpers/test_ca.ts";

async function msgsAndBlob(
  root: string,
  listenAt: string,
  a2: Partial<PeerOptions> = {},
  b2: Partial<PeerOptions> = {},
) {
  const { a, b, eb, addr } = await openPeerPair(root, {
    listenAt,
    waitMs: 30_000,
    alice: a2,
    bob: b2,
  });
  try {
    const scheme = listenAt.split(":")[0];
    assert.match(addr, new RegExp(`^${scheme}://.+:\\d+/awp$`));
    // 50 msgs both ways, acked, in order.
    const sent = [];
    for (let i = 0; i < 50; i++) {
      sent.push(await a.send("bob", `m${i}`, { thread: "t1" }));
    }
    for (const s of sent) await a.waitAck(s.id, { timeoutMs: 20_000 });
    await eb.until(() => eb.of("message").length === 50, "50 msgs");
    assert.deepEqual(
      eb.of("message").map((m) => m.text),
      sent.map((_, i) => `m${i}`),
    );
    const back = await b.send("alice", "pong", { thread: "t1" });
    await b.waitAck(back.id, { timeoutMs: 10_000 });
    // A 20 MiB file, byte-identical.
    const bytes = randomBytes(20 * 1024 * 1024);
    const file = `${root}/big.bin`;
    await Deno.writeFile(file, bytes);
    const withFile = await a.send("bob", "big file", { files: [file] });
    await a.waitAck(withFile.id, { timeoutMs: 60_000 });
    await eb.until(
      () => eb.of("message").some((m) => m.text === "big file"),
      "the file",
    );
    const msg = eb.of("message").find((m) => m.text === "big file")!;
    assert.equal(msg.blobs[0].status, "complete", msg.blobs[0].detail);
    const got = await Deno.readFile(msg.blobs[0].path!);
    assert.equal(got.length, bytes.length);
    assert.equal(sha256Hex(got), sha256Hex(bytes));
  } finally {
    await a.close();
    await b.close();
  }
}

Deno.test("two peers over ws: on loopback: msgs both ways and a 20 MiB file", async () => {
  const root = await Deno.makeTempDir();
  try {
    await msgsAndBlob(root, "ws://127.0.0.1:0/awp");
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test({
  name:
    "two peers over wss: with a private CA: msgs both ways and a 20 MiB file",
  ignore: !hasOpenssl(),
  async fn() {
    const root = await Deno.makeTempDir();
    try {
      const ca = await makeTestCa(root);
      await msgsAndBlob(
        root,
        "wss://localhost:0/awp",
        { caCerts: [ca.caPem] },
        { tls: { cert: ca.certPem, key: ca.keyPem } },
      );
    } finally {
      await Deno.remove(root, { recursive: true });
    }
  },
});

Deno.test("a peer behind a proxy advertises its public wss:// address in hello.addr", async () => {
  const root = await Deno.makeTempDir();
  const a = await Peer.open({
    home: `${root}/a`,
    name: "alice",
    addr: "wss://alice.example.dev/awp",
    ...FAST_PEER,
  });
  const b = await Peer.open({ home: `${root}/b`, name: "bob", ...FAST_PEER });
  try {
    await a.listen("ws://127.0.0.1:0/awp");
    await a.connect(await b.listen("ws://127.0.0.1:0/awp"));
    // The record is written just after the handshake.
    let addresses: string[] | undefined;
    for (let i = 0; i < 100 && !addresses?.length; i++) {
      await new Promise((r) => setTimeout(r, 20));
      addresses = (await b.peers()).find((p) => p.key === a.key)?.addresses;
    }
    assert.deepEqual(addresses, ["wss://alice.example.dev/awp"]);
  } finally {
    await a.close();
    await b.close();
    await Deno.remove(root, { recursive: true });
  }
});
