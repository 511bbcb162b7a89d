/**
 * Presence documents (extension, NOTES.md "Presence gossip"): building a
 * document within its limits, signing it, verifying a received one, and
 * slicing its exact text out of a received line so relays forward it byte
 * for byte. Pure: no I/O.
 *
 * The wire form of a document is the canonical JSON of the whole document,
 * `sig` included; the signature covers the canonical JSON without `sig`.
 *
 * @module
 */

import { decodeBase64, encodeBase64Url } from "./base64.ts";
import { canonicalJson } from "./canonical_json.ts";
import { isKey, type Signer, verify } from "./keys.ts";
import type { Presence, PresencePeer, PresenceThread } from "./types.ts";

/** The hello cap (and message type) of presence gossip. */
export const PRESENCE_CAP = "presence";
/** Largest signed document, in UTF-8 bytes of its text. */
export const MAX_PRESENCE_BYTES = 64 * 1024;
/** A document is not forwarded with `hops` at or past this. */
export const PRESENCE_MAX_HOPS = 8;
/** Most peers one document lists. */
export const PRESENCE_MAX_PEERS = 64;
/** Most threads one document lists. */
export const PRESENCE_MAX_THREADS = 64;
/** Subjects are clipped to this many characters (code points). */
export const PRESENCE_SUBJECT_CHARS = 120;
/** Older documents are refused, stored ones forgotten. */
export const PRESENCE_MAX_AGE_MS = 10 * 60 * 1000;
/** Clock skew tolerated for a document stamped in the future. */
export const PRESENCE_FUTURE_MS = 5 * 60 * 1000;

/**
 * What an agent says about itself: a document without `origin`, `seq`, `ts`
 * and `sig`, which signing fills in.
 */
export type PresenceDescription = Omit<
  Presence,
  "origin" | "seq" | "ts" | "sig"
>;

/** A signed document and its wire text (canonical JSON). */
export interface SignedPresence {
  /** The signed document. */
  doc: Presence;
  /** Its wire text: canonical JSON, as signed. */
  text: string;
}

/** The outcome of {@linkcode verifyPresence}; `reason` is one line. */
export type PresenceVerdict =
  | { ok: true; doc: Presence; text: string; time: number }
  | { ok: false; reason: string };

/**
 * Thrown when a document cannot be signed (over the size cap, bad fields).
 *
 * @example
 * ```ts
 * import { PresenceError } from "./presence.ts";
 * console.log(new PresenceError("too big").name); // "PresenceError"
 * ```
 */
export class PresenceError extends Error {
  /** Builds the error with a one-line message. */
  constructor(message: string) {
    super(message);
    this.name = "PresenceError";
  }
}

const encoder = new TextEncoder();
const B64URL = /^[A-Za-z0-9_-]+$/;
const DATE_TIME =
  /^(\d{4})-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])[Tt]([01]\d|2[0-3]):[0-5]\d:([0-5]\d|60)(\.\d+)?([Zz]|[+-]([01]\d|2[0-3]):[0-5]\d)$/;

/**
 * Clips `text` to at most `max` characters (code points), ending a clipped
 * text with "…" as the reference does.
 *
 * @example
 * ```ts
 * import { clipText } from "./presence.ts";
 * console.log(clipText("abcdef", 4)); // "abc…"
 * ```
 */
export function clipText(text: string, max: number): string {
  const chars = Array.from(text);
  if (chars.length <= max) return text;
  return chars.slice(0, Math.max(0, max - 1)).join("") + "…";
}

/**
 * The next `seq`: the larger of `previous + 1` and `now` (ms), so it only
 * increases, across restarts and clock steps, once `previous` is persisted.
 *
 * @example
 * ```ts
 * import { nextPresenceSeq } from "./presence.ts";
 * console.log(nextPresenceSeq(500, 100), nextPresenceSeq(undefined, 100)); // 501 100
 * ```
 */
export function nextPresenceSeq(
  previous: number | undefined,
  now: number,
): number {
  return Math.max((previous ?? 0) + 1, Math.floor(now));
}

/**
 * Parses an RFC 3339 date-time to ms, or undefined (also for impossible
 * dates such as February 30).
 *
 * @example
 * ```ts
 * import { parsePresenceTime } from "./presence.ts";
 * console.log(parsePresenceTime("1970-01-01T00:00:01Z"), parsePresenceTime("now")); // 1000 undefined
 * ```
 */
export function parsePresenceTime(text: unknown): number | undefined {
  if (typeof text !== "string") return undefined;
  const m = DATE_TIME.exec(text);
  if (!m) return undefined;
  const days = new Date(Date.UTC(Number(m[1]), Number(m[2]), 0)).getUTCDate();
  if (Number(m[3]) > days) return undefined;
  const ms = Date.parse(text.replace(/(:\d\d:)60/, "$159"));
  return Number.isNaN(ms) ? undefined : ms;
}

function pickPeer(p: PresencePeer): PresencePeer {
  const out: PresencePeer = { key: p.key };
  if (p.name) out.name = p.name;
  if (p.up) out.up = true;
  if (p.rtt !== undefined && p.rtt > 0) {
    out.rtt = Math.max(1, Math.round(p.rtt));
  }
  return out;
}

function pickThread(t: PresenceThread): PresenceThread {
  const out: PresenceThread = { th: t.th, peer: t.peer };
  if (t.subject) out.subject = clipText(t.subject, PRESENCE_SUBJECT_CHARS);
  if (t.mine) out.mine = t.mine;
  if (t.theirs) out.theirs = t.theirs;
  if (t.updated) out.updated = t.updated;
  if (t.unread) out.unread = t.unread;
  return out;
}

/**
 * Keeps only the fields a presence document may carry, drops empty ones
 * (as the reference's `omitempty`), clips subjects to 120 characters and
 * lists at most 64 peers and 64 threads. Whatever else the description
 * holds (notes, addresses, contents) is left out by construction.
 *
 * @example
 * ```ts
 * import { buildPresence } from "./presence.ts";
 * const d = buildPresence({ name: "a", about: "", threads: [{ th: "t", peer: "ed25519:x", subject: "s".repeat(200) }] });
 * console.log(d.about, d.threads![0].subject!.length); // undefined 120
 * ```
 */
export function buildPresence(
  description: PresenceDescription,
): PresenceDescription {
  const d = description;
  const out: PresenceDescription = {};
  for (
    const field of [
      "name",
      "about",
      "version",
      "harness",
      "model",
      "host",
      "active",
    ] as const
  ) {
    const v = d[field];
    if (typeof v === "string" && v !== "") out[field] = v;
  }
  if (d.shares?.length) out.shares = [...d.shares];
  if (d.waiting) out.waiting = true;
  if (d.peers?.length) {
    out.peers = d.peers.slice(0, PRESENCE_MAX_PEERS).map(pickPeer);
  }
  if (d.threads?.length) {
    out.threads = d.threads.slice(0, PRESENCE_MAX_THREADS).map(pickThread);
  }
  if (d.outbox) out.outbox = d.outbox;
  if (d.unread) out.unread = d.unread;
  return out;
}

/**
 * Signs a document for `signer` with the given `seq` and `ts` (after
 * {@linkcode buildPresence}). Returns it with its wire text. Throws
 * {@linkcode PresenceError} when the document is over 64 KiB.
 *
 * @example
 * ```ts
 * import { Signer } from "./keys.ts";
 * import { signPresence, verifyPresence } from "./presence.ts";
 * const me = await Signer.generate();
 * const { text } = await signPresence(me, { name: "me" }, { seq: 1, ts: new Date().toISOString() });
 * console.log((await verifyPresence(text)).ok); // true
 * ```
 */
export async function signPresence(
  signer: Signer,
  description: PresenceDescription,
  stamp: { seq: number; ts: string },
): Promise<SignedPresence> {
  if (!Number.isSafeInteger(stamp.seq) || stamp.seq < 0) {
    throw new PresenceError(
      `presence seq is not a non-negative integer: ${stamp.seq}`,
    );
  }
  if (parsePresenceTime(stamp.ts) === undefined) {
    throw new PresenceError(
      `presence ts is not RFC 3339: ${JSON.stringify(stamp.ts)}`,
    );
  }
  const body = {
    ...buildPresence(description),
    origin: signer.key,
    seq: stamp.seq,
    ts: stamp.ts,
  };
  const sig = await signer.sign(encoder.encode(canonicalJson(body)));
  const text = canonicalJson({ ...body, sig: encodeBase64Url(sig) });
  // Parsed back so its keys are in canonical order: JSON.stringify of the
  // document then gives the wire text again.
  const doc = JSON.parse(text) as Presence;
  const size = encoder.encode(text).length;
  if (size > MAX_PRESENCE_BYTES) {
    throw new PresenceError(
      `presence document is ${size} bytes, over the ${MAX_PRESENCE_BYTES} byte cap`,
    );
  }
  return { doc, text };
}

function isCount(v: unknown): boolean {
  return typeof v === "number" && Number.isSafeInteger(v) && v >= 0;
}

/** A one-line reason the document's shape is wrong, or undefined. */
function shapeProblem(d: Record<string, unknown>): string | undefined {
  if (typeof d.origin !== "string" || !isKey(d.origin)) {
    return "origin is not an ed25519 key";
  }
  if (typeof d.sig !== "string" || !B64URL.test(d.sig)) {
    return "sig missing or not base64url";
  }
  if (!isCount(d.seq)) return "seq is not a non-negative integer";
  for (const f of ["name", "about", "version", "harness", "model", "host"]) {
    if (f in d && typeof d[f] !== "string") return `${f} is not a string`;
  }
  if ("active" in d && parsePresenceTime(d.active) === undefined) {
    return "active is not RFC 3339";
  }
  if ("waiting" in d && typeof d.waiting !== "boolean") {
    return "waiting is not a boolean";
  }
  for (const f of ["outbox", "unread"]) {
    if (f in d && !isCount(d[f])) return `${f} is not a count`;
  }
  if (
    "shares" in d &&
    !(Array.isArray(d.shares) && d.shares.every((s) => typeof s === "string"))
  ) return "shares is not an array of strings";
  if ("peers" in d) {
    if (!Array.isArray(d.peers)) return "peers is not an array";
    for (const p of d.peers as unknown[]) {
      const r = p as Record<string, unknown>;
      if (!r || typeof r !== "object" || typeof r.key !== "string") {
        return "a peer has no key";
      }
    }
  }
  if ("threads" in d) {
    if (!Array.isArray(d.threads)) return "threads is not an array";
    for (const t of d.threads as unknown[]) {
      const r = t as Record<string, unknown>;
      if (
        !r || typeof r !== "object" || typeof r.th !== "string" ||
        typeof r.peer !== "string"
      ) return "a thread has no th or peer";
    }
  }
  return undefined;
}

/**
 * Verifies a received document, given as its text (preferred: its size is
 * then exact) or as a parsed value. Checks size, shape, `ts` and the
 * origin's signature over the canonical JSON without `sig`. Never throws.
 *
 * @example
 * ```ts
 * import { verifyPresence } from "./presence.ts";
 * const v = await verifyPresence('{"origin":"x"}');
 * console.log(v.ok ? "ok" : v.reason); // "origin is not an ed25519 key"
 * ```
 */
export async function verifyPresence(doc: unknown): Promise<PresenceVerdict> {
  let text: string;
  let value: unknown;
  try {
    if (typeof doc === "string") {
      text = doc;
      const size = encoder.encode(text).length;
      if (size > MAX_PRESENCE_BYTES) {
        return { ok: false, reason: `document is ${size} bytes, over the cap` };
      }
      value = JSON.parse(text);
    } else {
      value = doc;
      text = JSON.stringify(doc) ?? "";
      const size = encoder.encode(text).length;
      if (size > MAX_PRESENCE_BYTES) {
        return { ok: false, reason: `document is ${size} bytes, over the cap` };
      }
    }
  } catch {
    return { ok: false, reason: "document is not JSON" };
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    return { ok: false, reason: "document is not an object" };
  }
  const d = value as Record<string, unknown>;
  const problem = shapeProblem(d);
  if (problem) return { ok: false, reason: problem };
  const time = parsePresenceTime(d.ts);
  if (time === undefined) return { ok: false, reason: "ts is not RFC 3339" };
  let signature: Uint8Array;
  let signed: Uint8Array;
  try {
    signature = decodeBase64(d.sig as string);
    const { sig: _sig, ...body } = d;
    signed = encoder.encode(canonicalJson(body));
  } catch (error) {
    return {
      ok: false,
      reason: `document cannot be checked: ${(error as Error).message}`,
    };
  }
  if (!await verify(d.origin as string, signed, signature)) {
    return { ok: false, reason: "bad signature" };
  }
  return { ok: true, doc: d as unknown as Presence, text, time };
}

const WS = new Set([0x20, 0x09, 0x0a, 0x0d]);

/** Index just past the JSON string starting at `i` (a quote). */
function skipString(s: string, i: number): number {
  for (let j = i + 1; j < s.length; j++) {
    const c = s.charCodeAt(j);
    if (c === 0x5c) j++;
    else if (c === 0x22) return j + 1;
  }
  return -1;
}

/** Index just past the JSON value starting at `i`, or -1. */
function skipValue(s: string, i: number): number {
  const c = s[i];
  if (c === '"') return skipString(s, i);
  if (c !== "{" && c !== "[") {
    let j = i;
    while (j < s.length && !",}] \t\r\n".includes(s[j])) j++;
    return j > i ? j : -1;
  }
  let depth = 0;
  for (let j = i; j < s.length; j++) {
    const d = s[j];
    if (d === '"') {
      j = skipString(s, j) - 1;
      if (j < 0) return -1;
    } else if (d === "{" || d === "[") depth++;
    else if (d === "}" || d === "]") {
      if (--depth === 0) return j + 1;
    }
  }
  return -1;
}

/**
 * The exact text of the top-level `doc` member of a presence line (the
 * last one if repeated, as `JSON.parse` keeps), or undefined. The line must
 * already be known to be valid JSON (it was parsed).
 *
 * @example
 * ```ts
 * import { extractDocText } from "./presence.ts";
 * console.log(extractDocText('{"t":"presence","doc": {"a" : 1},"hops":0}')); // {"a" : 1}
 * ```
 */
export function extractDocText(raw: string): string | undefined {
  let i = 0;
  const skipWs = () => {
    while (i < raw.length && WS.has(raw.charCodeAt(i))) i++;
  };
  skipWs();
  if (raw[i] !== "{") return undefined;
  i++;
  let found: string | undefined;
  for (;;) {
    skipWs();
    if (raw[i] === "}") return found;
    if (raw[i] !== '"') return undefined;
    const keyEnd = skipString(raw, i);
    if (keyEnd < 0) return undefined;
    let key: string;
    try {
      key = JSON.parse(raw.slice(i, keyEnd));
    } catch {
      return undefined;
    }
    i = keyEnd;
    skipWs();
    if (raw[i] !== ":") return undefined;
    i++;
    skipWs();
    const end = skipValue(raw, i);
    if (end < 0) return undefined;
    if (key === "doc") found = raw.slice(i, end);
    i = end;
    skipWs();
    if (raw[i] === ",") i++;
    else if (raw[i] === "}") return found;
    else return undefined;
  }
}
