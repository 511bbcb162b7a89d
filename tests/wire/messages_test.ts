import assert from "node:assert/strict";
import {
  blobPart,
  codePart,
  createAck,
  createAuth,
  createBye,
  createChunk,
  createErr,
  createGrantMsg,
  createHello,
  createIntroduce,
  createMirror,
  createMsg,
  createPing,
  createPong,
  createPresenceMsg,
  createPrivate,
  createResume,
  createState,
  dataPart,
  textPart,
} from "../../wire/messages.ts";
import {
  CLOSING_ERROR_CODES,
  CONTENT_TYPES,
  ERROR_CODES,
  type Message,
  MESSAGE_TYPES,
  PRE_AUTH_FORBIDDEN,
  PROTOCOL_VERSION,
} from "../../wire/types.ts";
import { validateMessage } from "../../wire/validate.ts";
import { randomNonce, Signer } from "../../wire/keys.ts";
import { mintGrant } from "../../wire/grant.ts";
import { encodeBase64, encodeBase64Url } from "../../wire/base64.ts";
import { IdGenerator } from "../../wire/id.ts";
import schema from "../../schema/awp.schema.json" with { type: "json" };

const alice = await Signer.generate();
const bob = await Signer.generate();
const grant = await mintGrant(alice, { sub: bob.key, caps: ["exec"] });
const ids = new IdGenerator();

/** One line of every type, built with real keys, grants and signatures. */
function everyType(): Message[] {
  const msg = createMsg({
    id: ids.next(),
    th: "t1",
    subject: "Run the suite",
    parts: [
      textPart("hello"),
      codePart("x := 1", "go"),
      dataPart({ repo: "acme/api" }, "application/json"),
      blobPart({ ref: "L1", size: 3, name: "a.log", mime: "text/plain" }),
    ],
  });
  return [
    createHello({
      id: ids.next(),
      v: PROTOCOL_VERSION,
      key: alice.key,
      nonce: randomNonce(),
      name: "test@host",
      caps: ["chat", "blob"],
    }),
    createAuth({
      id: ids.next(),
      sig: encodeBase64Url(new Uint8Array(64)),
      grants: [grant],
    }),
    createResume({ id: ids.next(), seen: { t1: "01J9" } }),
    createState({ id: ids.next(), th: "t1", state: "working", note: "tests" }),
    msg,
    createAck({ id: ids.next(), th: "t1", re: msg.id }),
    createChunk({
      id: ids.next(),
      th: "t1",
      ref: "L1",
      n: 0,
      last: true,
      data: encodeBase64(new Uint8Array([1, 2, 3])),
    }),
    createPing({ id: ids.next() }),
    createPong({ id: ids.next(), re: "p1" }),
    createBye({ id: ids.next(), reason: "done" }),
    createErr({ id: ids.next(), code: "blob_refused", ref: "L1" }),
    createGrantMsg({ id: ids.next(), grant }),
    createIntroduce({
      id: ids.next(),
      peer: { key: bob.key, name: "bob", address: "tcp:127.0.0.1:7000" },
      grant,
    }),
    createPresenceMsg({
      id: ids.next(),
      hops: 1,
      doc: {
        origin: alice.key,
        seq: 1,
        ts: "2026-09-25T17:03:11.000Z",
        peers: [{ key: bob.key, up: true, rtt: 12 }],
        threads: [{ th: "t1", peer: bob.key, mine: "working" }],
        sig: encodeBase64Url(new Uint8Array(64)),
      },
    }),
    createMirror({
      id: ids.next(),
      th: "t1",
      of: bob.key,
      dir: "out",
      line: msg,
    }),
    createPrivate({ id: ids.next(), th: "t1" }),
  ];
}

Deno.test("constructors: one per type, each line validates", () => {
  const lines = everyType();
  assert.deepEqual(lines.map((m) => m.t), [...MESSAGE_TYPES]);
  for (const line of lines) {
    assert.deepEqual(validateMessage(line), { ok: true }, JSON.stringify(line));
    // The envelope comes first, so logs read well.
    assert.deepEqual(Object.keys(line).slice(0, 3), ["t", "id", "ts"]);
  }
});

Deno.test("constructors: ts defaults to now, with milliseconds", () => {
  const before = Date.now();
  const ping = createPing({ id: "1" });
  const after = Date.now();
  assert.match(ping.ts, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  const at = Date.parse(ping.ts);
  assert.ok(at >= before && at <= after, ping.ts);
  const given = createPing({ id: "2", ts: "2026-09-25T17:03:11Z" });
  assert.equal(given.ts, "2026-09-25T17:03:11Z");
});

Deno.test("constructors: undefined optional fields are left out", () => {
  const bye = createBye({
    id: "1",
    ts: "2026-01-01T00:00:00Z",
    reason: undefined,
    re: undefined,
  });
  assert.deepEqual(bye, { t: "bye", id: "1", ts: "2026-01-01T00:00:00Z" });
  assert.equal(
    JSON.stringify(bye),
    '{"t":"bye","id":"1","ts":"2026-01-01T00:00:00Z"}',
  );
});

Deno.test("constructors: t cannot be overridden by the fields", () => {
  const sneaky = { id: "1", t: "msg" } as unknown as Parameters<
    typeof createPing
  >[0];
  assert.equal(createPing(sneaky).t, "ping");
});

Deno.test("constructors: a missing or empty id is a one-line TypeError", () => {
  const noId = {} as Parameters<typeof createPing>[0];
  assert.throws(() => createPing(noId), {
    name: "TypeError",
    message: "create ping: id must be a non-empty string",
  });
  assert.throws(() => createAck({ id: "", th: "t", re: "r" }), TypeError);
});

Deno.test("parts: helpers build the four kinds", () => {
  assert.deepEqual(textPart("a"), { k: "text", text: "a" });
  assert.deepEqual(codePart("a"), { k: "code", text: "a" });
  assert.deepEqual(codePart("a", "ts"), { k: "code", text: "a", lang: "ts" });
  assert.deepEqual(dataPart(null), { k: "data", data: null });
  assert.deepEqual(dataPart([1], "application/json"), {
    k: "data",
    data: [1],
    mime: "application/json",
  });
  assert.deepEqual(blobPart({ ref: "r", size: 0 }), {
    k: "blob",
    ref: "r",
    size: 0,
  });
  assert.deepEqual(blobPart({ ref: "r", size: 5, name: "n", mime: "m" }), {
    k: "blob",
    ref: "r",
    size: 5,
    name: "n",
    mime: "m",
  });
});

Deno.test("constants: match the schema and the protocol", () => {
  const defs = schema.$defs;
  assert.deepEqual([...ERROR_CODES], defs.Err.properties.code.enum);
  assert.deepEqual([...MESSAGE_TYPES], defs.Message.properties.t.enum);
  assert.equal(PROTOCOL_VERSION, 0);
  assert.deepEqual([...CLOSING_ERROR_CODES].sort(), [
    "auth",
    "bad_frame",
    "too_large",
    "version",
  ]);
  assert.deepEqual([...CONTENT_TYPES].sort(), [
    "chunk",
    "introduce",
    "mirror",
    "msg",
    "state",
  ]);
  assert.deepEqual(
    [...PRE_AUTH_FORBIDDEN].sort(),
    ["ack", "chunk", "grant", "introduce", "msg", "resume", "state"],
  );
  for (const code of CLOSING_ERROR_CODES) {
    assert.ok((ERROR_CODES as readonly string[]).includes(code), code);
  }
});
