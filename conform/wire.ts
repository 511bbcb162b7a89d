/**
 * One connection of the conformance runner to the peer under test: the
 * bytes it reads as a queue of lines, each parsed and checked against the
 * schema, and the lines it writes (traced).
 *
 * @module
 */

import type { Transport } from "../net/transport.ts";
import { encodeLine, MAX_LINE_BYTES } from "../wire/frame.ts";
import type { IdGenerator } from "../wire/id.ts";
import { LineReader } from "../wire/line_reader.ts";
import { createPong } from "../wire/messages.ts";
import { parseLine } from "../wire/parse.ts";
import { validateMessage } from "../wire/validate.ts";
import type { PeerHello, Received } from "./scenarios.ts";
import { TRACE_CHARS, truncate } from "./line_text.ts";

/** What a wire yields: a valid line, a line that failed validation, or its end. */
export type WireEvent =
  | { kind: "line"; line: Received; bytes: Uint8Array }
  | { kind: "invalid"; detail: string }
  | { kind: "end"; error?: Error };

/**
 * One connection to the peer under test, as a queue of validated lines.
 *
 * @example
 * ```ts ignore
 * import { Wire } from "./wire.ts";
 * const wire = new Wire(1, transport, ids);
 * console.log(await wire.take(Date.now() + 1000));
 * ```
 */
export class Wire {
  readonly number: number;
  #transport: Transport;
  #reader = new LineReader();
  #events: WireEvent[] = [];
  #end: WireEvent | undefined;
  #waiter: (() => void) | undefined;
  #trace: ((line: string) => void) | undefined;
  #ids: IdGenerator;
  /** The peer's hello line, exact bytes, once received. */
  theirHello: Uint8Array | undefined;
  /** Our hello line, exact bytes, once sent. */
  ourHello: Uint8Array | undefined;
  peer: PeerHello | undefined;
  open = false;
  byeSent = false;

  constructor(
    number: number,
    transport: Transport,
    ids: IdGenerator,
    trace?: (line: string) => void,
  ) {
    this.number = number;
    this.#transport = transport;
    this.#ids = ids;
    this.#trace = trace;
    transport.start({
      onData: (chunk) => this.#onData(chunk),
      onEnd: (error) => {
        this.#trace?.(
          `#${this.number} closed${error ? `: ${error.message}` : ""}`,
        );
        this.#end = { kind: "end", error };
        this.#wake();
      },
    });
  }

  get ended(): boolean {
    return this.#end !== undefined;
  }

  #onData(chunk: Uint8Array): void {
    for (const event of this.#reader.push(chunk)) {
      if (event.kind === "too_large") {
        this.#trace?.(
          `#${this.number} < (a line over ${MAX_LINE_BYTES} bytes)`,
        );
        this.#events.push({
          kind: "invalid",
          detail: `sent a line over ${MAX_LINE_BYTES} bytes`,
        });
        continue;
      }
      const parsed = parseLine(event.bytes);
      if (!parsed.ok) {
        const text = new TextDecoder().decode(event.bytes);
        this.#trace?.(`#${this.number} < ${truncate(text, TRACE_CHARS)}`);
        this.#events.push({
          kind: "invalid",
          detail: `sent a line that is not a JSON object (${parsed.detail}): ${
            truncate(text, 160)
          }`,
        });
        continue;
      }
      this.#trace?.(`#${this.number} < ${truncate(parsed.raw, TRACE_CHARS)}`);
      const verdict = validateMessage(parsed.message);
      if (!verdict.ok) {
        this.#events.push({
          kind: "invalid",
          detail: `sent a line that does not match the schema (${
            verdict.errors.slice(0, 3).join("; ")
          }): ${truncate(parsed.raw, 160)}`,
        });
        continue;
      }
      const line: Received = { message: parsed.message, raw: parsed.raw };
      // Liveness is the runner's duty as a peer, not a scenario's.
      if (line.message.t === "ping" && this.open && !this.byeSent) {
        void this.write(
          createPong({ id: this.#ids.next(), re: String(line.message.id) }),
        ).catch(() => {});
      }
      this.#events.push({ kind: "line", line, bytes: event.bytes });
    }
    this.#wake();
  }

  #wake(): void {
    const waiter = this.#waiter;
    this.#waiter = undefined;
    waiter?.();
  }

  /** The next event, or undefined at the deadline. After the end, the end again. */
  take(deadline: number): Promise<WireEvent | undefined> {
    const ready = this.#events.shift() ?? this.#end;
    if (ready) return Promise.resolve(ready);
    const wait = deadline - Date.now();
    if (wait <= 0) return Promise.resolve(undefined);
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.#waiter = undefined;
        resolve(undefined);
      }, wait);
      this.#waiter = () => {
        clearTimeout(timer);
        resolve(this.#events.shift() ?? this.#end);
      };
    });
  }

  /** Removes and returns the details of queued lines that failed validation. */
  drainInvalid(): string[] {
    const invalid = this.#events.filter((e) => e.kind === "invalid") as Array<
      { kind: "invalid"; detail: string }
    >;
    this.#events = this.#events.filter((e) => e.kind !== "invalid");
    return invalid.map((e) => e.detail);
  }

  async write(message: object): Promise<Uint8Array> {
    const frame = encodeLine(message);
    await this.writeRaw(frame);
    return frame.subarray(0, frame.length - 1);
  }

  async writeRaw(bytes: Uint8Array): Promise<void> {
    if (this.#trace) {
      const text = new TextDecoder().decode(
        bytes.length > TRACE_CHARS * 4
          ? bytes.subarray(0, TRACE_CHARS * 4)
          : bytes,
      );
      const shown = bytes.length > TRACE_CHARS
        ? `${text.slice(0, TRACE_CHARS)}… (${bytes.length} bytes)`
        : text.replace(/\n$/, "");
      this.#trace(`#${this.number} > ${shown}`);
    }
    await this.#transport.write(bytes);
  }

  close(): void {
    this.#transport.close();
  }
}
