/**
 * RFC 6455 framing for the WebSocket binding, pure (no I/O): the opening
 * handshake's texts and checks, a bounded frame decoder, and the frame
 * encoder. net/websocket_transport.ts runs them over Deno sockets.
 *
 * @module
 */

import { MAX_LINE_BYTES } from "../wire/frame.ts";

/** RFC 6455 1.3: appended to the client's key before hashing. */
const ACCEPT_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
/** The largest HTTP head either side reads. */
export const MAX_HEAD_BYTES = 16 * 1024;
const NEWLINE = 0x0a;
/** The decoder's first buffer, and what it shrinks back to: idle is small. */
const INITIAL_BYTES = 1024;

const encoder = new TextEncoder();

/**
 * `Sec-WebSocket-Accept` for a `Sec-WebSocket-Key`.
 *
 * @example
 * ```ts
 * import { acceptKey } from "./websocket_frames.ts";
 * // The example of RFC 6455 section 1.3.
 * console.assert(
 *   await acceptKey("dGhlIHNhbXBsZSBub25jZQ==") === "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=",
 * );
 * ```
 */
export async function acceptKey(key: string): Promise<string> {
  const digest = await crypto.subtle.digest(
    "SHA-1",
    encoder.encode(key + ACCEPT_GUID),
  );
  return btoa(String.fromCharCode(...new Uint8Array(digest)));
}

/** A parsed HTTP head: the first line and lower-cased header names. */
export interface HttpHead {
  /** "GET /path HTTP/1.1" or "HTTP/1.1 101 Switching Protocols". */
  start: string;
  headers: Map<string, string>;
}

/**
 * Finds the end of an HTTP head ("\r\n\r\n") in `bytes`; returns the
 * parsed head and where the bytes after it start, or undefined when the
 * head is not complete yet.
 *
 * @example
 * ```ts
 * import { parseHttpHead } from "./websocket_frames.ts";
 * const raw = new TextEncoder().encode("HTTP/1.1 503 Busy\r\nRetry-After: 5\r\n\r\nxy");
 * const head = parseHttpHead(raw)!;
 * console.assert(head.head.start === "HTTP/1.1 503 Busy" && head.rest === raw.length - 2);
 * ```
 */
export function parseHttpHead(
  bytes: Uint8Array,
): { head: HttpHead; rest: number } | undefined {
  for (let i = 3; i < bytes.length; i++) {
    if (
      bytes[i] === NEWLINE && bytes[i - 1] === 0x0d &&
      bytes[i - 2] === NEWLINE &&
      bytes[i - 3] === 0x0d
    ) {
      const text = new TextDecoder("latin1").decode(bytes.subarray(0, i - 3));
      const [start, ...lines] = text.split("\r\n");
      const headers = new Map<string, string>();
      for (const line of lines) {
        const colon = line.indexOf(":");
        if (colon <= 0) continue;
        const name = line.slice(0, colon).trim().toLowerCase();
        const value = line.slice(colon + 1).trim();
        headers.set(
          name,
          headers.has(name) ? `${headers.get(name)}, ${value}` : value,
        );
      }
      return { head: { start, headers }, rest: i + 1 };
    }
  }
  return undefined;
}

/** True when a comma separated header value holds `token` (any case). */
export function hasToken(value: string | undefined, token: string): boolean {
  return (value ?? "").toLowerCase().split(",").some((t) => t.trim() === token);
}

/** Opcodes of RFC 6455 5.2. */
export const OP = {
  continuation: 0x0,
  text: 0x1,
  binary: 0x2,
  close: 0x8,
  ping: 0x9,
  pong: 0xa,
} as const;

/** What the {@link FrameDecoder} reports. */
export type FrameEvent =
  /** A complete text message: its bytes. */
  | { kind: "text"; bytes: Uint8Array }
  /** A framing fault AWP answers with an err (then the connection closes). */
  | { kind: "fault"; code: "bad_frame" | "too_large"; detail: string }
  /** A WebSocket protocol error: close with `status` (1002, 1009...). */
  | { kind: "protocol"; status: number; detail: string }
  | { kind: "ping"; payload: Uint8Array }
  | { kind: "close"; status?: number };

/**
 * Decodes frames from pushed bytes. Server side expects masked frames,
 * client side unmasked ones (RFC 6455 5.1). Never buffers more than one
 * line: a text message over {@link MAX_LINE_BYTES} is reported as soon as
 * its header says so, before its payload arrives. A text event's bytes are
 * a view of the decoder's buffer (an unfragmented message is not copied),
 * valid until the next {@link FrameDecoder.space} or
 * {@link FrameDecoder.push}.
 *
 * @example
 * ```ts
 * import { encodeFrame, FrameDecoder, OP } from "./websocket_frames.ts";
 * const decoder = new FrameDecoder("client");
 * const frame = encodeFrame(OP.text, new TextEncoder().encode('{"t":"ping"}'));
 * const [event] = decoder.push(frame);
 * console.assert(event.kind === "text");
 * ```
 */
export class FrameDecoder {
  #expectMask: boolean;
  #buf = new Uint8Array(INITIAL_BYTES);
  /** Where the bytes not decoded yet start (moved to 0 by `space`). */
  #start = 0;
  #len = 0;
  /** Bytes from `#start` the frame there needs whole (0: unknown yet). */
  #need = 0;
  #message: Uint8Array[] = [];
  #messageBytes = 0;
  #inMessage = false;
  #stopped = false;

  /** `side` is who we are: "server" reads masked frames. */
  constructor(side: "client" | "server") {
    this.#expectMask = side === "server";
  }

  /**
   * Where the next read should go, at least `min` bytes long: reading
   * straight into it saves a copy. Call {@link FrameDecoder.wrote} after.
   */
  space(min = 64 * 1024): Uint8Array {
    // The events of the last decode are done with: move what is left of
    // the buffer to its start now (not while they may still be read).
    if (this.#start > 0) {
      this.#buf.copyWithin(0, this.#start, this.#len);
      this.#len -= this.#start;
      this.#start = 0;
    }
    // Room for `min` more, and for the whole of a frame begun (at most
    // 1 MiB and a header).
    const want = Math.max(min, this.#need - this.#len);
    if (this.#buf.length - this.#len < want) {
      const grown = new Uint8Array(
        Math.max(this.#buf.length * 2, this.#len + want),
      );
      grown.set(this.#buf.subarray(0, this.#len));
      this.#buf = grown;
    }
    return this.#buf.subarray(this.#len);
  }

  /** `n` bytes were read into {@link FrameDecoder.space}: decode them. */
  wrote(n: number): FrameEvent[] {
    this.#len += n;
    return this.#decode();
  }

  /** Decodes `bytes` (copied in). */
  push(bytes: Uint8Array): FrameEvent[] {
    this.space(bytes.length).set(bytes);
    return this.wrote(bytes.length);
  }

  #decode(): FrameEvent[] {
    if (this.#stopped) {
      this.#len = this.#start = 0; // discarded: what follows a fault is never kept
      return [];
    }
    const events: FrameEvent[] = [];
    let at = this.#start;
    this.#need = 0;
    const buf = this.#buf;
    while (!this.#stopped) {
      const avail = this.#len - at;
      if (avail < 2) break;
      const b0 = buf[at];
      const b1 = buf[at + 1];
      const fin = (b0 & 0x80) !== 0;
      const opcode = b0 & 0x0f;
      const masked = (b1 & 0x80) !== 0;
      let size = b1 & 0x7f;
      let head = 2;
      if (size === 126) {
        if (avail < 4) break;
        size = (buf[at + 2] << 8) | buf[at + 3];
        head = 4;
      } else if (size === 127) {
        if (avail < 10) break;
        const high = (buf[at + 2] << 24 >>> 0) + (buf[at + 3] << 16) +
          (buf[at + 4] << 8) + buf[at + 5];
        const low = (buf[at + 6] << 24 >>> 0) + (buf[at + 7] << 16) +
          (buf[at + 8] << 8) + buf[at + 9];
        size = high > 0x1fffff ? Infinity : high * 2 ** 32 + low;
        head = 10;
      }
      if ((b0 & 0x70) !== 0) {
        return this.#stop(events, {
          kind: "protocol",
          status: 1002,
          detail: "reserved bits set",
        });
      }
      if (masked !== this.#expectMask) {
        return this.#stop(events, {
          kind: "protocol",
          status: 1002,
          detail: masked ? "masked frame from a server" : "unmasked frame",
        });
      }
      const control = opcode >= 0x8;
      if (control && (size > 125 || !fin)) {
        return this.#stop(events, {
          kind: "protocol",
          status: 1002,
          detail: "bad control frame",
        });
      }
      if (opcode === OP.binary) {
        return this.#stop(events, {
          kind: "fault",
          code: "bad_frame",
          detail: "binary WebSocket message (AWP lines are text messages)",
        });
      }
      if (!control && opcode !== OP.text && opcode !== OP.continuation) {
        return this.#stop(events, {
          kind: "protocol",
          status: 1002,
          detail: `unknown opcode ${opcode}`,
        });
      }
      if (!control && this.#messageBytes + size > MAX_LINE_BYTES) {
        // Known from the header alone: the payload is never buffered.
        return this.#stop(events, {
          kind: "fault",
          code: "too_large",
          detail: `line of at least ${
            this.#messageBytes + size
          } bytes exceeds 1 MiB`,
        });
      }
      const maskAt = at + head;
      if (masked) head += 4;
      if (avail < head + size) {
        // The next `space` makes room for the whole frame.
        this.#need = head + size;
        break;
      }
      const payload = buf.subarray(at + head, at + head + size);
      // Unmasked and checked for a newline in one pass.
      const newline = masked
        ? unmaskFindNewline(payload, buf.subarray(maskAt, maskAt + 4))
        : !control && hasNewline(payload);
      at += head + size;
      if (control) {
        if (opcode === OP.ping) {
          events.push({ kind: "ping", payload: payload.slice() });
        } else if (opcode === OP.close) {
          const status = size >= 2 ? (payload[0] << 8) | payload[1] : undefined;
          return this.#stop(events, { kind: "close", status });
        }
        continue; // pong: nothing to do
      }
      if (opcode === OP.text && this.#inMessage) {
        return this.#stop(events, {
          kind: "protocol",
          status: 1002,
          detail: "a new message inside a fragmented one",
        });
      }
      if (opcode === OP.continuation && !this.#inMessage) {
        return this.#stop(events, {
          kind: "protocol",
          status: 1002,
          detail: "a continuation without a message",
        });
      }
      if (newline) {
        return this.#stop(events, {
          kind: "fault",
          code: "bad_frame",
          detail: "a newline inside a WebSocket message (one line per message)",
        });
      }
      if (fin && !this.#inMessage) {
        events.push({ kind: "text", bytes: payload });
        continue;
      }
      this.#inMessage = true;
      this.#message.push(payload.slice());
      this.#messageBytes += size;
      if (fin) {
        events.push({ kind: "text", bytes: concat(this.#message) });
        this.#message = [];
        this.#messageBytes = 0;
        this.#inMessage = false;
      }
    }
    if (at === this.#len) this.#start = this.#len = 0;
    else this.#start = at;
    return events;
  }

  /**
   * Gives back the room a burst needed once nothing is pending (the owner
   * calls it after a small read), so idle connections stay small.
   */
  shrink(): void {
    if (this.#len === this.#start && this.#buf.length > INITIAL_BYTES) {
      this.#start = this.#len = 0;
      this.#buf = new Uint8Array(INITIAL_BYTES);
    }
  }

  /** Ends decoding: nothing after a close, a fault or a protocol error counts. */
  #stop(events: FrameEvent[], last: FrameEvent): FrameEvent[] {
    this.#stopped = true;
    this.#len = this.#start = 0;
    events.push(last);
    return events;
  }
}

/**
 * The pieces joined into one array.
 *
 * @example
 * ```ts
 * import { concat } from "./websocket_frames.ts";
 * console.assert(concat([new Uint8Array([1]), new Uint8Array([2, 3])]).length === 3);
 * ```
 */
export function concat(pieces: Uint8Array[]): Uint8Array {
  let size = 0;
  for (const p of pieces) size += p.length;
  const out = new Uint8Array(size);
  let at = 0;
  for (const p of pieces) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/** Newlines in each byte of a word (for the zero-byte test below). */
const NEWLINES = 0x0a0a0a0a;

/** True when one of the 4 bytes of `word` is zero (Hacker's Delight 6-1). */
function hasZeroByte(word: number): boolean {
  return ((word - 0x01010101) & ~word & 0x80808080) !== 0;
}

/**
 * True when `payload` holds a newline: a word at a time (about twice the
 * speed of `includes` on a ~350 KB chunk line).
 *
 * @example
 * ```ts
 * import { hasNewline } from "./websocket_frames.ts";
 * console.assert(hasNewline(new TextEncoder().encode("a\nb")));
 * console.assert(!hasNewline(new TextEncoder().encode("ab")));
 * ```
 */
export function hasNewline(payload: Uint8Array): boolean {
  const n = payload.length;
  let i = 0;
  const lead = Math.min(n, (4 - (payload.byteOffset & 3)) & 3);
  for (; i < lead; i++) if (payload[i] === NEWLINE) return true;
  const words = (n - i) >>> 2;
  if (words > 0) {
    const view = new Uint32Array(payload.buffer, payload.byteOffset + i, words);
    for (let w = 0; w < words; w++) {
      if (hasZeroByte(view[w] ^ NEWLINES)) return true;
    }
    i += words << 2;
  }
  for (; i < n; i++) if (payload[i] === NEWLINE) return true;
  return false;
}

/**
 * Unmasks `payload` in place ({@link unmask}) and says whether the result
 * holds a newline, in the same pass.
 */
function unmaskFindNewline(payload: Uint8Array, mask: Uint8Array): boolean {
  const n = payload.length;
  let found = false;
  let i = 0;
  const lead = Math.min(n, (4 - (payload.byteOffset & 3)) & 3);
  for (; i < lead; i++) {
    payload[i] ^= mask[i & 3];
    if (payload[i] === NEWLINE) found = true;
  }
  const words = (n - i) >>> 2;
  if (words > 0) {
    const key = turnedKey(mask, i);
    const view = new Uint32Array(payload.buffer, payload.byteOffset + i, words);
    let any = 0;
    for (let w = 0; w < words; w++) {
      const word = view[w] ^ key;
      view[w] = word;
      const x = word ^ NEWLINES;
      any |= (x - 0x01010101) & ~x;
    }
    if ((any & 0x80808080) !== 0) found = true;
    i += words << 2;
  }
  for (; i < n; i++) {
    payload[i] ^= mask[i & 3];
    if (payload[i] === NEWLINE) found = true;
  }
  return found;
}

/** The mask as a native-order word for bytes that start at `offset`. */
function turnedKey(mask: Uint8Array, offset: number): number {
  const turned = new Uint8Array(4);
  for (let k = 0; k < 4; k++) turned[k] = mask[(offset + k) & 3];
  return new Uint32Array(turned.buffer)[0];
}

/** XORs `payload` in place with the 4-byte `mask` (RFC 6455 5.3). */
function unmask(payload: Uint8Array, mask: Uint8Array): void {
  const n = payload.length;
  let i = 0;
  // Bytes up to a 4-byte boundary of the buffer, then whole words with the
  // key turned to match, then the tail: payloads after a 14-byte header are
  // never aligned, and a byte loop is several times slower.
  const lead = Math.min(n, (4 - (payload.byteOffset & 3)) & 3);
  for (; i < lead; i++) payload[i] ^= mask[i & 3];
  const words = (n - i) >>> 2;
  if (words > 0) {
    const key = turnedKey(mask, i);
    const view = new Uint32Array(payload.buffer, payload.byteOffset + i, words);
    for (let w = 0; w < words; w++) view[w] ^= key;
    i += words << 2;
  }
  for (; i < n; i++) payload[i] ^= mask[i & 3];
}

/** Bytes of a frame header for a payload of `size` bytes. */
export function headerSize(size: number, masked: boolean): number {
  return (size < 126 ? 2 : size < 65536 ? 4 : 10) + (masked ? 4 : 0);
}

/**
 * Writes one final frame into `out` at `at` (room for
 * {@link headerSize} + payload); a client masks with a fresh key.
 * Returns the offset after it.
 */
export function writeFrame(
  out: Uint8Array,
  at: number,
  opcode: number,
  payload: Uint8Array,
  masked: boolean,
): number {
  const size = payload.length;
  out[at++] = 0x80 | opcode;
  const maskBit = masked ? 0x80 : 0;
  if (size < 126) out[at++] = maskBit | size;
  else if (size < 65536) {
    out[at++] = maskBit | 126;
    out[at++] = size >>> 8;
    out[at++] = size & 255;
  } else {
    out[at++] = maskBit | 127;
    out[at++] = 0;
    out[at++] = 0;
    out[at++] = 0;
    out[at++] = 0;
    out[at++] = (size >>> 24) & 255;
    out[at++] = (size >>> 16) & 255;
    out[at++] = (size >>> 8) & 255;
    out[at++] = size & 255;
  }
  if (!masked) {
    out.set(payload, at);
    return at + size;
  }
  const mask = crypto.getRandomValues(new Uint8Array(4));
  out.set(mask, at);
  at += 4;
  maskInto(out.subarray(at, at + size), payload, mask);
  return at + size;
}

/**
 * `payload` masked into `body` (same length): copied and masked in one
 * pass a word at a time when both have the same alignment (a caller can
 * arrange that: {@link frameStart}), else copied, then masked in place.
 */
function maskInto(body: Uint8Array, payload: Uint8Array, mask: Uint8Array) {
  const n = payload.length;
  if (((body.byteOffset ^ payload.byteOffset) & 3) !== 0) {
    body.set(payload);
    unmask(body, mask);
    return;
  }
  let i = 0;
  const lead = Math.min(n, (4 - (payload.byteOffset & 3)) & 3);
  for (; i < lead; i++) body[i] = payload[i] ^ mask[i & 3];
  const words = (n - i) >>> 2;
  if (words > 0) {
    const key = turnedKey(mask, i);
    const from = new Uint32Array(
      payload.buffer,
      payload.byteOffset + i,
      words,
    );
    const to = new Uint32Array(body.buffer, body.byteOffset + i, words);
    for (let w = 0; w < words; w++) to[w] = from[w] ^ key;
    i += words << 2;
  }
  for (; i < n; i++) body[i] = payload[i] ^ mask[i & 3];
}

/**
 * Where in `room` (at least 3 bytes longer than the frame) a frame of
 * `payload` should start so that its payload lands at the same alignment
 * as `payload`'s own bytes: then masking copies a word at a time.
 *
 * @example
 * ```ts
 * import { frameStart, headerSize, writeFrame, OP } from "./websocket_frames.ts";
 * const payload = new Uint8Array(100_000);
 * const room = new Uint8Array(headerSize(payload.length, true) + payload.length + 3);
 * const at = frameStart(room, payload, true);
 * console.assert((at + headerSize(payload.length, true)) % 4 === 0);
 * writeFrame(room, at, OP.text, payload, true);
 * ```
 */
export function frameStart(
  room: Uint8Array,
  payload: Uint8Array,
  masked: boolean,
): number {
  const body = room.byteOffset + headerSize(payload.length, masked);
  return (payload.byteOffset - body) & 3;
}

/**
 * One final frame as its own bytes.
 *
 * @example
 * ```ts
 * import { encodeFrame, OP } from "./websocket_frames.ts";
 * console.assert(encodeFrame(OP.pong, new Uint8Array(0)).length === 2);
 * ```
 */
export function encodeFrame(
  opcode: number,
  payload: Uint8Array,
  masked = false,
): Uint8Array {
  const out = new Uint8Array(
    headerSize(payload.length, masked) + payload.length,
  );
  writeFrame(out, 0, opcode, payload, masked);
  return out;
}
