/**
 * The conformance scenarios: one table entry per behaviour the runner checks,
 * named and sectioned as in `awp conform` (seed 004), plus `replay`.
 *
 * A scenario is data plus a `run(ctx)` that drives a scripted peer through a
 * {@link ScenarioContext}; the runner (`conform/runner.ts`) owns sockets,
 * timeouts and schema checks, so adding a scenario is adding one entry.
 *
 * @module
 */

import type { Signer } from "../wire/keys.ts";
import { MAX_LINE_BYTES } from "../wire/frame.ts";
import { encodeBase64 } from "../wire/base64.ts";
import { mintGrant } from "../wire/grant.ts";
import {
  blobPart,
  codePart,
  createAck,
  createBye,
  createChunk,
  createErr,
  createGrantMsg,
  createMsg,
  createPing,
  createState,
  dataPart,
  textPart,
} from "../wire/messages.ts";

/** One line received from the peer under test, already parsed and validated. */
export interface Received {
  /** The parsed object. */
  message: Record<string, unknown> & { t: string };
  /** The line as received, without its newline. */
  raw: string;
}

/** What the peer said about itself in its hello. */
export interface PeerHello {
  /** The peer's key. */
  key: string;
  /** The protocol version from its hello. */
  v: number;
  /** The name from its hello. */
  name?: string;
  /** The capabilities from its hello. */
  caps: string[];
  /** The self-description from its hello. */
  about?: string;
  /** The hello line as received, without its newline. */
  raw: string;
}

/** Options of {@link ScenarioContext.next}. */
export interface NextOptions {
  /**
   * Lines to pass over while waiting. Pings and pongs (the runner answers
   * pings itself) and extension types are always passed over; any other
   * line that neither matches nor is ignored fails the scenario.
   */
  ignore?: (line: Received) => boolean;
}

/** A peer started by `--run --driver`, speaking the stdin/stdout driver contract. */
export interface DriverHandle {
  /** Writes one command line (e.g. `{cmd:"send",th,text}`) to the peer's stdin. */
  command(command: Record<string, unknown>): Promise<void>;
}

/** What a scenario can do with the peer under test. All waits end at the scenario's deadline. */
export interface ScenarioContext {
  /** "dial": the runner dialed the peer; "listen": the peer dialed in (`--listen --run`). */
  readonly mode: "dial" | "listen";
  /** The runner's own identity. */
  readonly signer: Signer;
  /** Per scenario timeout in ms. */
  readonly timeoutMs: number;
  /** The peer's hello on the current connection, once received. */
  readonly peer: PeerHello | undefined;
  /** True once the handshake (hello, auth, resume) completed on the current connection. */
  readonly open: boolean;
  /** Set when the peer was started with `--run ... --driver`. */
  readonly driver: DriverHandle | undefined;
  /** A fresh id, increasing for the whole run. */
  id(): string;
  /** A fresh thread id for this scenario. */
  thread(): string;
  /** Encodes and sends one message. */
  send(message: object): Promise<void>;
  /** Sends raw bytes as they are (the caller adds any newline). */
  sendRaw(bytes: Uint8Array): Promise<void>;
  /** Waits for the peer's hello, which must be the first line it sends. */
  receiveHello(): Promise<PeerHello>;
  /** Sends our hello; `overrides` replace fields (e.g. `{ v: 1 }`). */
  sendHello(overrides?: Record<string, unknown>): Promise<void>;
  /** Sends our auth, signed over the transcript, or over garbage with `badSignature`. */
  sendAuth(options?: { badSignature?: boolean }): Promise<void>;
  /**
   * Completes the handshake: hello (ours at once, or after theirs with
   * `theirsFirst`), auth both ways with the peer's signature verified, then
   * resume both ways. Returns the peer's resume.
   */
  handshake(
    options?: { theirsFirst?: boolean; seen?: Record<string, string> },
  ): Promise<Received>;
  /** Waits for the next line that `match`es; see {@link NextOptions}. */
  next(
    what: string,
    match: (line: Received) => boolean,
    options?: NextOptions,
  ): Promise<Received>;
  /** Waits until the peer closes the connection. */
  expectClose(what: string, options?: NextOptions): Promise<void>;
  /** Sends a ping and waits for its pong: proves the connection is still open and every earlier line was processed. */
  roundTrip(what: string, options?: NextOptions): Promise<void>;
  /** Closes the current connection without a bye and waits for the peer to dial in again (listen mode). */
  reconnect(): Promise<void>;
  /** Ends the scenario as failed; `detail` says what the peer did instead. */
  fail(detail: string): never;
  /** Ends the scenario as skipped, with the reason. */
  skip(reason: string): never;
}

/** One scenario of the table. */
export interface Scenario {
  /** Short unique name, used by `--scenario`. */
  name: string;
  /** The SPEC section(s) it checks, e.g. "§9.1, 9.2". */
  section: string;
  /** One line: what a conforming peer does. */
  doc: string;
  /** Caps the peer must list in its hello, else the scenario is skipped. */
  needs?: string[];
  /** Breaks the connection on purpose: needs a connection of its own. */
  breaksConnection?: boolean;
  /** A remark for `--list`, e.g. what else the scenario needs. */
  note?: string;
  /** Drives the handshake itself; otherwise the runner completes it first. */
  raw?: boolean;
  /** A whole budget in ms for a scenario that waits on a reconnect (`ctx.reconnect`); its other waits keep the usual timeout. */
  minTimeoutMs?: number;
  /** The script. Throws (via `ctx.fail`/`ctx.skip`) to fail or skip. */
  run(ctx: ScenarioContext): Promise<void>;
}

/** Thrown by `ctx.fail`: the peer did not behave. */
export class ScenarioFailure extends Error {
  /**
   * Creates the failure with a one-line detail.
   *
   * @example
   * ```ts
   * import { ScenarioFailure } from "./scenarios.ts";
   * console.log(new ScenarioFailure("no pong").message); // no pong
   * ```
   */
  constructor(detail: string) {
    super(detail);
    this.name = "ScenarioFailure";
  }
}

/** Thrown by `ctx.skip`: the scenario does not apply to this peer or mode. */
export class ScenarioSkip extends Error {
  /**
   * Creates the skip with the reason it does not apply.
   *
   * @example
   * ```ts
   * import { ScenarioSkip } from "./scenarios.ts";
   * console.log(new ScenarioSkip("needs blob").message); // needs blob
   * ```
   */
  constructor(reason: string) {
    super(reason);
    this.name = "ScenarioSkip";
  }
}

function isErr(line: Received, code?: string): boolean {
  return line.message.t === "err" &&
    (code === undefined || line.message.code === code);
}

function isAckOf(id: string): (line: Received) => boolean {
  return (line) => line.message.t === "ack" && line.message.re === id;
}

/** An ack must carry the thread of what it acks (SPEC 9.2). */
function checkAckThread(ctx: ScenarioContext, ack: Received, th: string): void {
  if (ack.message.th !== th) {
    ctx.fail(
      `acked with th ${JSON.stringify(ack.message.th)} instead of ${
        JSON.stringify(th)
      }`,
    );
  }
}

/** Expects `err code` and then the close, the shape of every closing error. */
async function expectClosingErr(
  ctx: ScenarioContext,
  code: string,
  ignore?: (l: Received) => boolean,
): Promise<void> {
  await ctx.next(`err ${code}`, (l) => isErr(l, code), { ignore });
  await ctx.expectClose(`the connection to close after err ${code}`);
}

/** A msg line whose JSON is exactly `size` bytes long. */
function msgOfSize(ctx: ScenarioContext, size: number): Uint8Array {
  const base = createMsg({
    id: ctx.id(),
    th: ctx.thread(),
    parts: [textPart("")],
  });
  const empty = JSON.stringify(base).length;
  const text = "x".repeat(Math.max(0, size - empty));
  return new TextEncoder().encode(
    JSON.stringify({ ...base, parts: [textPart(text)] }),
  );
}

/**
 * The scenarios, in the order they run. In listen mode they share one
 * connection, so `bye` stays last and `handshake` first.
 *
 * @example
 * ```ts
 * import { SCENARIOS } from "./scenarios.ts";
 * console.log(SCENARIOS.map((s) => s.name).join(" "));
 * ```
 */
export const SCENARIOS: readonly Scenario[] = [
  {
    name: "handshake",
    section: "§7",
    doc:
      "hello without waiting, then auth and resume in order; the auth signature verifies",
    raw: true,
    async run(ctx) {
      const resume = await ctx.handshake({ theirsFirst: true });
      const seen = resume.message.seen;
      if (seen === null || typeof seen !== "object" || Array.isArray(seen)) {
        ctx.fail(`resume without a seen object: ${resume.raw}`);
      }
    },
  },
  {
    name: "version",
    section: "§7.1",
    doc: "a hello with an unknown v gets err version and the connection closes",
    raw: true,
    breaksConnection: true,
    async run(ctx) {
      await ctx.receiveHello();
      await ctx.sendHello({ v: 1 });
      await expectClosingErr(ctx, "version");
    },
  },
  {
    name: "auth-bad-sig",
    section: "§7.2",
    doc:
      "an auth whose signature does not verify gets err auth and the connection closes",
    raw: true,
    breaksConnection: true,
    async run(ctx) {
      await ctx.sendHello();
      await ctx.receiveHello();
      await ctx.sendAuth({ badSignature: true });
      // The peer's own auth may cross ours; its resume may not follow.
      await expectClosingErr(ctx, "auth", (l) => l.message.t === "auth");
    },
  },
  {
    name: "bad-frame",
    section: "§5",
    doc:
      "a line that is not a JSON object gets err bad_frame and the connection closes",
    breaksConnection: true,
    async run(ctx) {
      await ctx.sendRaw(new TextEncoder().encode('["awp","conform"]\n'));
      await expectClosingErr(ctx, "bad_frame");
    },
  },
  {
    name: "too-large",
    section: "§5",
    doc: "a line over 1 MiB gets err too_large and the connection closes",
    breaksConnection: true,
    async run(ctx) {
      // One byte over: the peer has read the whole line when it can tell.
      const line = msgOfSize(ctx, MAX_LINE_BYTES + 1);
      const frame = new Uint8Array(line.length + 1);
      frame.set(line);
      frame[line.length] = 0x0a;
      // The peer may close before our write finishes: that is its right.
      const writing = ctx.sendRaw(frame).catch(() => {});
      await expectClosingErr(ctx, "too_large");
      await writing;
    },
  },
  {
    name: "ping",
    section: "§9.4",
    doc: "a ping is answered by a pong whose re is the ping's id",
    async run(ctx) {
      const ping = createPing({ id: ctx.id() });
      await ctx.send(ping);
      await ctx.next(
        `a pong with re ${ping.id}`,
        (l) => l.message.t === "pong" && l.message.re === ping.id,
      );
    },
  },
  {
    name: "msg-ack",
    section: "§9.1, 9.2",
    doc:
      "a msg with text, code and data parts is acked, with the msg's id and thread",
    async run(ctx) {
      const msg = createMsg({
        id: ctx.id(),
        th: ctx.thread(),
        subject: "conformance: msg-ack",
        parts: [
          textPart("A *text* part."),
          codePart("console.log('awp');", "ts"),
          dataPart({ conform: true, n: [1, 2, 3] }, "application/json"),
        ],
      });
      await ctx.send(msg);
      const ack = await ctx.next(`an ack with re ${msg.id}`, isAckOf(msg.id));
      checkAckThread(ctx, ack, msg.th);
    },
  },
  {
    name: "state-ack",
    section: "§8.1, 9.2",
    doc: "a state is acked like a msg",
    async run(ctx) {
      const state = createState({
        id: ctx.id(),
        th: ctx.thread(),
        state: "working",
        note: "conformance: state-ack",
      });
      await ctx.send(state);
      const ack = await ctx.next(
        `an ack with re ${state.id}`,
        isAckOf(state.id),
      );
      checkAckThread(ctx, ack, state.th);
    },
  },
  {
    name: "dedup",
    section: "§9.5",
    doc: "a msg delivered twice with the same id is acked both times",
    async run(ctx) {
      const msg = createMsg({
        id: ctx.id(),
        th: ctx.thread(),
        subject: "conformance: dedup",
        parts: [textPart("sent twice")],
      });
      await ctx.send(msg);
      await ctx.next(`an ack with re ${msg.id}`, isAckOf(msg.id));
      await ctx.send(msg);
      await ctx.next(
        `a second ack with re ${msg.id} for the same msg sent again`,
        isAckOf(msg.id),
      );
    },
  },
  {
    name: "unknown-type",
    section: "§5",
    doc:
      "a message of an unknown type is ignored, or answered with a non-closing err unsupported",
    async run(ctx) {
      await ctx.send({
        t: "x-conform-unknown",
        id: ctx.id(),
        ts: new Date().toISOString(),
        please: "ignore me",
      });
      await ctx.roundTrip("the connection to stay open after an unknown type", {
        ignore: (l) => isErr(l, "unsupported"),
      });
    },
  },
  {
    name: "unknown-field",
    section: "§5",
    doc: "unknown fields in a msg and its parts are ignored; the msg is acked",
    async run(ctx) {
      const msg = createMsg({
        id: ctx.id(),
        th: ctx.thread(),
        subject: "conformance: unknown-field",
        parts: [textPart("with extras")],
      });
      const line = {
        ...msg,
        x_conform: { nested: [1, "two"] },
        parts: [{ ...msg.parts[0], x_conform: true }],
      };
      await ctx.send(line);
      const ack = await ctx.next(`an ack with re ${msg.id}`, isAckOf(msg.id));
      checkAckThread(ctx, ack, msg.th);
    },
  },
  {
    name: "err-nonclosing",
    section: "§9.7",
    doc:
      "an err with a non-closing code (unsupported) leaves the connection open",
    async run(ctx) {
      await ctx.send(createErr({
        id: ctx.id(),
        code: "unsupported",
        detail: "conformance: err-nonclosing",
      }));
      await ctx.roundTrip("the connection to stay open after err unsupported");
    },
  },
  {
    name: "chunk",
    section: "§9.3",
    doc:
      "a msg with a blob part, followed by the blob in two chunks, is acked and refused only with blob_refused",
    needs: ["blob"],
    async run(ctx) {
      const th = ctx.thread();
      const ref = `conform-${crypto.randomUUID().slice(0, 8)}`;
      const bytes = crypto.getRandomValues(new Uint8Array(600));
      const msg = createMsg({
        id: ctx.id(),
        th,
        subject: "conformance: chunk",
        parts: [
          textPart("a blob follows"),
          blobPart({
            ref,
            size: bytes.length,
            name: "conform.bin",
            mime: "application/octet-stream",
          }),
        ],
      });
      await ctx.send(msg);
      await ctx.send(
        createChunk({
          id: ctx.id(),
          th,
          ref,
          n: 0,
          last: false,
          data: encodeBase64(bytes.subarray(0, 300)),
        }),
      );
      await ctx.send(
        createChunk({
          id: ctx.id(),
          th,
          ref,
          n: 1,
          last: true,
          data: encodeBase64(bytes.subarray(300)),
        }),
      );
      const refusal = (l: Received) =>
        isErr(l, "blob_refused") && l.message.ref === ref;
      // Chunks carry no ack duty, but acking one is harmless.
      const chunkAck = (l: Received) =>
        l.message.t === "ack" && l.message.re !== msg.id;
      const ack = await ctx.next(`an ack with re ${msg.id}`, isAckOf(msg.id), {
        ignore: (l) => refusal(l) || chunkAck(l),
      });
      checkAckThread(ctx, ack, th);
      await ctx.roundTrip("the connection to stay open after the blob", {
        ignore: (l) => refusal(l) || chunkAck(l),
      });
    },
  },
  {
    name: "grant",
    section: "§10.3",
    doc:
      "a grant message carrying a grant to the peer is accepted without an err",
    needs: ["grant"],
    async run(ctx) {
      const peer = ctx.peer;
      if (!peer) return ctx.fail("no hello from the peer");
      const grant = await mintGrant(ctx.signer, {
        sub: peer.key,
        caps: ["conform"],
        ttlMs: 60 * 60 * 1000,
      });
      await ctx.send(createGrantMsg({ id: ctx.id(), grant }));
      await ctx.roundTrip("the grant to be accepted without an err");
    },
  },
  {
    name: "replay",
    section: "§4.3, 9.5",
    doc:
      "messages unacked when the connection drops are replayed after resume: original ids, in order, none missing",
    raw: true,
    note: "needs --listen --run CMD --driver",
    minTimeoutMs: 30_000,
    async run(ctx) {
      const driver = ctx.driver;
      if (ctx.mode !== "listen" || !driver) {
        return ctx.skip(
          "needs a driver-contract peer started with --listen --run ... --driver",
        );
      }
      if (!ctx.open) await ctx.handshake();
      const th = ctx.thread();
      const count = 3;
      for (let i = 1; i <= count; i++) {
        await driver.command({
          cmd: "send",
          th,
          text: `replay ${i} of ${count}`,
          ...(i === 1 ? { subject: "conformance: replay" } : {}),
        });
      }
      const sent: Received[] = [];
      for (let i = 1; i <= count; i++) {
        // Deliberately unacked: these are what the peer must replay.
        sent.push(
          await ctx.next(
            `msg ${i} of ${count} in thread ${th} (sent by the driver)`,
            (l) => l.message.t === "msg" && l.message.th === th,
          ),
        );
      }
      await ctx.reconnect();
      // Claim the first as seen: only the later ones may come back.
      await ctx.handshake({ seen: { [th]: String(sent[0].message.id) } });
      const due = sent.slice(1);
      for (const [k, original] of due.entries()) {
        const got = await ctx.next(
          `the replay of ${original.message.id} (${
            k + 1
          } of the ${due.length} not seen)`,
          (l) => l.message.t === "msg" && l.message.th === th,
        );
        if (got.message.id !== original.message.id) {
          const ids = sent.map((s) => s.message.id).join(", ");
          ctx.fail(
            `replayed ${got.message.id} where ${original.message.id} was due (sent ${ids}, seen ${
              sent[0].message.id
            })`,
          );
        }
        if (got.message.ts !== original.message.ts) {
          ctx.fail(
            `replayed ${got.message.id} with ts ${got.message.ts}, originally ${original.message.ts}`,
          );
        }
        await ctx.send(
          createAck({ id: ctx.id(), th, re: String(got.message.id) }),
        );
      }
      // Anything else in the thread now would be a duplicate of the seen one.
      await ctx.roundTrip("no further replays after the last one", {
        ignore: (l) => l.message.t !== "msg" || l.message.th !== th,
      });
    },
  },
  {
    name: "bye",
    section: "§9.6",
    doc: "a bye is answered with a bye and the connection closes",
    async run(ctx) {
      await ctx.send(createBye({ id: ctx.id(), reason: "conformance: bye" }));
      await ctx.next("a bye in reply", (l) => l.message.t === "bye");
      await ctx.expectClose("the connection to close after both byes");
    },
  },
];

/**
 * Looks a scenario up by name.
 *
 * @example
 * ```ts
 * import { findScenario } from "./scenarios.ts";
 * console.log(findScenario("ping")?.section); // §9.4
 * ```
 */
export function findScenario(name: string): Scenario | undefined {
  return SCENARIOS.find((s) => s.name === name);
}
