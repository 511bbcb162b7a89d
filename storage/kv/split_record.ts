/**
 * Records of the KV engine: JSON values stored as UTF-8 bytes, and split
 * over several keys when bigger than one Deno KV value may be (64 KiB;
 * lines go up to 1 MiB).
 *
 * A record over {@link PART_BYTES} is stored as its parts at
 * `[...key, 0..n-1]` and, at `key`, the number of parts `n` (written last,
 * see `Tx.putRecord`); a small one is its bytes at `key`. This module reads
 * both shapes back: one record ({@link readRecord}), or every record of a
 * range in key order ({@link listRecords}, lazily, joining split ones).
 *
 * @module
 */

import type { KvBackend } from "./kv_backend.ts";
import type { Key, KeyRange } from "./key.ts";
import { RecordText } from "./record_text.ts";

/** Largest record part stored in one value (KV values are ≤ 64 KiB). */
export const PART_BYTES = 60_000;

const fromUtf8 = new TextDecoder();

/** The record in its stored bytes. */
function decodeRecord(bytes: Uint8Array): unknown {
  return JSON.parse(fromUtf8.decode(bytes));
}

function concat(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.byteLength, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.byteLength;
  }
  return out;
}

/**
 * Reads a possibly split record from its head value (inline bytes, or a
 * parts count), with `get` for the parts; undefined when absent or
 * incomplete.
 *
 * @example
 * ```ts
 * import { assembleRecord } from "./split_record.ts";
 * const head = new TextEncoder().encode('{"a":1}');
 * console.log(await assembleRecord(["k"], head, () => Promise.resolve(undefined))); // { a: 1 }
 * ```
 */
export async function assembleRecord(
  key: Key,
  head: unknown,
  get: (key: Key) => Promise<unknown>,
): Promise<unknown> {
  if (head instanceof Uint8Array) return decodeRecord(head);
  // Not committed yet (a transaction's or the overlay's): still text.
  if (head instanceof RecordText) return head.decode();
  if (typeof head !== "number") return undefined;
  const parts: Uint8Array[] = [];
  for (let k = 0; k < head; k++) {
    const part = await get([...key, k]);
    if (!(part instanceof Uint8Array)) return undefined;
    parts.push(part);
  }
  return decodeRecord(concat(parts));
}

/**
 * The record at `key` in `backend`, or undefined.
 *
 * @example
 * ```ts
 * import { readRecord } from "./split_record.ts";
 * import { DenoKvBackend } from "./kv_backend.ts";
 * const backend = new DenoKvBackend(await Deno.openKv(":memory:"));
 * console.log(await readRecord(backend, ["none"])); // undefined
 * backend.close();
 * ```
 */
export async function readRecord<T>(
  backend: KvBackend,
  key: Key,
): Promise<T | undefined> {
  const head = await backend.get(key);
  return await assembleRecord(key, head, (k) => backend.get(k)) as
    | T
    | undefined;
}

/** A listed record, with the number of parts it was split into. */
export interface ListedRecord {
  /** The record's key. */
  key: Key;
  /** The decoded record. */
  value: unknown;
  /** Parts it was split into (0: stored inline). */
  parts: number;
  /** Its stored size in bytes. */
  bytes: number;
}

/**
 * Lists the records at key length `depth` in `range`, in key order,
 * joining split ones; parts whose head is not written yet are skipped.
 * Lazy: it reads the backend as the consumer asks for records.
 *
 * @example
 * ```ts
 * import { listRecords } from "./split_record.ts";
 * import { DenoKvBackend } from "./kv_backend.ts";
 * const backend = new DenoKvBackend(await Deno.openKv(":memory:"));
 * await backend.commit([{ key: ["r", "a"], value: new TextEncoder().encode("1") }]);
 * for await (const r of listRecords(backend, { prefix: ["r"] }, 2)) console.log(r.value); // 1
 * backend.close();
 * ```
 */
export async function* listRecords(
  backend: KvBackend,
  range: KeyRange,
  depth: number,
): AsyncGenerator<ListedRecord> {
  let open: { key: Key; n: number; parts: Uint8Array[] } | undefined;
  for await (const { key, value } of backend.list(range)) {
    if (key.length === depth) {
      open = undefined;
      if (value instanceof Uint8Array) {
        yield {
          key,
          value: decodeRecord(value),
          parts: 0,
          bytes: value.byteLength,
        };
      } else if (typeof value === "number") {
        open = { key, n: value, parts: [] };
      }
    } else if (
      open && key.length === depth + 1 && key[depth] === open.parts.length &&
      value instanceof Uint8Array && open.key.every((p, i) => key[i] === p)
    ) {
      open.parts.push(value);
      if (open.parts.length === open.n) {
        const bytes = concat(open.parts);
        yield {
          key: open.key,
          value: decodeRecord(bytes),
          parts: open.n,
          bytes: bytes.byteLength,
        };
        open = undefined;
      }
    }
    // Anything else is a staged part without its head yet: skipped.
  }
}

/**
 * Every record at key length `depth` under `prefix`, in key order.
 *
 * @example
 * ```ts
 * import { collectRecords } from "./split_record.ts";
 * import { DenoKvBackend } from "./kv_backend.ts";
 * const backend = new DenoKvBackend(await Deno.openKv(":memory:"));
 * console.log(await collectRecords(backend, ["none"], 2)); // []
 * backend.close();
 * ```
 */
export async function collectRecords<T>(
  backend: KvBackend,
  prefix: Key,
  depth: number,
): Promise<T[]> {
  const out: T[] = [];
  for await (const { value } of listRecords(backend, { prefix }, depth)) {
    out.push(value as T);
  }
  return out;
}
