/**
 * wire/presence.ts: building within the limits, signing, verifying (forged,
 * malformed, oversized), seq ordering and slicing the exact document text.
 */

import assert from "node:assert/strict";
import {
  buildPresence,
  clipText,
  extractDocText,
  MAX_PRESENCE_BYTES,
  nextPresenceSeq,
  parsePresenceTime,
  PRESENCE_MAX_PEERS,
  PRESENCE_MAX_THREADS,
  type PresenceDescription,
  PresenceError,
  signPresence,
  verifyPresence,
} from "../../wire/presence.ts";
import { canonicalJson } from "../../wire/canonical_json.ts";
import { Signer, verify } from "../../wire/keys.ts";
import { decodeBase64 } from "../../wire/base64.ts";

const seed = new Uint8Array(32).map((_, i) => i + 1);
const other = "ed25519:" + "A".repeat(43);
const TS = "2026-12-02T15:53:05.123Z";

Deno.test("presence: a signed document verifies, is canonical JSON and signs the body without sig", async () => {
  const me = await Signer.fromSeed(seed);
  const { doc, text } = await signPresence(me, {
    name: "codex@builder",
    about: "building",
    peers: [{ key: other, name: "w", up: true, rtt: 12 }],
    threads: [{
      th: "thr_1",
      peer: other,
      subject: "Build",
      mine: "working",
      theirs: "open",
      updated: TS,
      unread: 1,
    }],
    outbox: 2,
    unread: 1,
    waiting: true,
    shares: [other],
  }, { seq: 1790352652876, ts: TS });
  assert.equal(doc.origin, me.key);
  assert.equal(text, canonicalJson(doc));
  const { sig, ...body } = doc;
  assert.ok(
    await verify(
      me.key,
      new TextEncoder().encode(canonicalJson(body)),
      decodeBase64(sig),
    ),
  );
  const v = await verifyPresence(text);
  assert.ok(v.ok, v.ok ? "" : v.reason);
  assert.equal(v.text, text);
  assert.equal(v.doc.seq, 1790352652876);
  assert.equal(v.time, Date.parse(TS));
  // A parsed value verifies too.
  assert.ok((await verifyPresence(JSON.parse(text))).ok);
});

Deno.test("presence: forged documents are refused with a one-line reason", async () => {
  const me = await Signer.fromSeed(seed);
  const mallory = await Signer.generate();
  const { text } = await signPresence(me, { name: "me", unread: 3 }, {
    seq: 5,
    ts: TS,
  });
  const cases: Array<[string, string]> = [
    [text.replace('"name":"me"', '"name":"mf"'), "bad signature"],
    [text.replace('"unread":3', '"unread":4'), "bad signature"],
    [text.replace('"seq":5', '"seq":6'), "bad signature"],
    [text.replace(me.key, mallory.key), "bad signature"],
    [
      text.replace(/"sig":"(.)/, (_m, c) => `"sig":"${c === "A" ? "B" : "A"}`),
      "bad signature",
    ],
    [
      text.replace(/"sig":"[^"]*"/, '"sig":"!!"'),
      "sig missing or not base64url",
    ],
    [text.replace(/,"sig":"[^"]*"/, ""), "sig missing or not base64url"],
  ];
  for (const [forged, reason] of cases) {
    assert.notEqual(forged, text);
    const v = await verifyPresence(forged);
    assert.equal(v.ok, false, forged);
    assert.equal(v.ok ? "" : v.reason, reason);
  }
});

Deno.test("presence: malformed documents are refused, never thrown", async () => {
  const me = await Signer.fromSeed(seed);
  const { doc } = await signPresence(me, {}, { seq: 1, ts: TS });
  const bad: Array<[unknown, RegExp]> = [
    ["{", /not JSON/],
    ["[1]", /not an object/],
    [null, /not an object/],
    [{ ...doc, origin: "ed25519:x" }, /origin/],
    [{ ...doc, seq: -1 }, /seq/],
    [{ ...doc, seq: 1.5 }, /seq/],
    [{ ...doc, seq: undefined }, /seq/],
    [{ ...doc, ts: "yesterday" }, /ts is not RFC 3339/],
    [{ ...doc, peers: {} }, /peers/],
    [{ ...doc, threads: [{ th: "x" }] }, /thread/],
    [{ ...doc, name: 7 }, /name/],
    [{ ...doc, waiting: "yes" }, /waiting/],
  ];
  for (const [value, reason] of bad) {
    const v = await verifyPresence(value);
    assert.equal(v.ok, false);
    assert.match(v.ok ? "" : v.reason, reason);
    assert.ok(!(v.ok ? "" : v.reason).includes("\n"));
  }
});

Deno.test("presence: the 64 KiB cap, on signing and on receipt", async () => {
  const me = await Signer.fromSeed(seed);
  await assert.rejects(
    () =>
      signPresence(me, { about: "x".repeat(MAX_PRESENCE_BYTES) }, {
        seq: 1,
        ts: TS,
      }),
    (e: Error) =>
      e instanceof PresenceError && /over the 65536 byte cap/.test(e.message),
  );
  // Just under the cap signs; multi-byte characters count as bytes.
  const small = await signPresence(me, { about: "é".repeat(30_000) }, {
    seq: 1,
    ts: TS,
  });
  assert.ok(new TextEncoder().encode(small.text).length <= MAX_PRESENCE_BYTES);
  await assert.rejects(
    () => signPresence(me, { about: "é".repeat(33_000) }, { seq: 1, ts: TS }),
    PresenceError,
  );
  // A received text over the cap is refused before parsing or verifying.
  const big = small.text.replace('"about":"', `"about":"${"y".repeat(10_000)}`);
  const v = await verifyPresence(big);
  assert.equal(v.ok, false);
  assert.match(v.ok ? "" : v.reason, /over the cap/);
  await assert.rejects(
    () => signPresence(me, {}, { seq: -1, ts: TS }),
    PresenceError,
  );
  await assert.rejects(
    () => signPresence(me, {}, { seq: 1, ts: "now" }),
    PresenceError,
  );
});

Deno.test("presence: clipping, limits and only the allowed fields", async () => {
  assert.equal(clipText("short", 120), "short");
  const long = "😀".repeat(130); // astral: one character each
  const clipped = clipText(long, 120);
  assert.equal(Array.from(clipped).length, 120);
  assert.ok(clipped.endsWith("…"));
  assert.equal(clipText("x".repeat(120), 120), "x".repeat(120));

  const key = (i: number) =>
    "ed25519:" + String(i).padStart(3, "0") + "A".repeat(40);
  const description = {
    name: "n",
    about: "",
    peers: Array.from(
      { length: 70 },
      (_, i) => ({ key: key(i), up: false, rtt: 0, addr: "tcp:10.0.0.1:1" }),
    ),
    threads: Array.from({ length: 70 }, (_, i) => ({
      th: `t${i}`,
      peer: key(i),
      subject: "s".repeat(300),
      note: "secret note",
      parts: [{ k: "text", text: "secret contents" }],
    })),
    address: "tcp:10.0.0.1:7000",
    notes: "secret",
  } as unknown as PresenceDescription;
  const built = buildPresence(description);
  assert.equal(built.peers!.length, PRESENCE_MAX_PEERS);
  assert.equal(built.threads!.length, PRESENCE_MAX_THREADS);
  assert.equal(Array.from(built.threads![0].subject!).length, 120);
  assert.equal(built.about, undefined);
  assert.deepEqual(built.peers![0], { key: key(0) });
  const me = await Signer.fromSeed(seed);
  const { text } = await signPresence(me, description, { seq: 1, ts: TS });
  for (const leak of ["secret", "tcp:10.0.0.1", "addr", "note"]) {
    assert.ok(!text.includes(leak), `document leaks ${leak}`);
  }
});

Deno.test("presence: seq only increases, whatever the clock does", () => {
  assert.equal(nextPresenceSeq(undefined, 1_000), 1_000);
  assert.equal(nextPresenceSeq(1_000, 5_000), 5_000);
  assert.equal(nextPresenceSeq(5_000, 5_000), 5_001);
  assert.equal(nextPresenceSeq(5_000, 10), 5_001); // clock stepped back
});

Deno.test("presence: time parsing is RFC 3339 only", () => {
  assert.equal(parsePresenceTime(TS), Date.parse(TS));
  assert.equal(parsePresenceTime("2026-02-30T00:00:00Z"), undefined);
  assert.equal(parsePresenceTime("2026-12-02 15:53:05Z"), undefined);
  assert.equal(parsePresenceTime(5), undefined);
});

Deno.test("presence: extractDocText slices the exact text of doc", () => {
  const doc = '{"a" : "}{\\"]", "b":[1,{"c":"doc"}] , "d":null}';
  const line = `{"t":"presence","id":"1", "doc" :  ${doc} ,"hops":0}`;
  assert.equal(extractDocText(line), doc);
  assert.deepEqual(JSON.parse(extractDocText(line)!), JSON.parse(doc));
  // The last of repeated keys, as JSON.parse keeps.
  assert.equal(extractDocText('{"doc":{"x":1},"doc":{"y":2}}'), '{"y":2}');
  // A nested "doc" is not the top-level one; escaped keys are decoded.
  assert.equal(extractDocText('{"x":{"doc":1}}'), undefined);
  assert.equal(extractDocText('{"\\u0064oc":true}'), "true");
  assert.equal(extractDocText("[]"), undefined);
  assert.equal(extractDocText('{"doc":'), undefined);
});
