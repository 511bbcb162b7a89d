/**
 * What a scenario sees of the run: the {@link ScenarioContext} the
 * scenarios of `scenarios.ts` drive the peer under test with (handshake,
 * send, expect, reconnect), over the session's current connection.
 *
 * @module
 */

import { decodeBase64, encodeBase64Url } from "../wire/base64.ts";
import { randomNonce, type Signer, verify } from "../wire/keys.ts";
import {
  createAuth,
  createHello,
  createPing,
  createResume,
} from "../wire/messages.ts";
import { authTranscript } from "../wire/transcript.ts";
import { MESSAGE_TYPES } from "../wire/types.ts";
import {
  type DriverHandle,
  type NextOptions,
  type PeerHello,
  type Received,
  type Scenario,
  type ScenarioContext,
  ScenarioFailure,
  ScenarioSkip,
} from "./scenarios.ts";
import { describe, seconds, truncate } from "./line_text.ts";
import type { Session } from "./session.ts";
import type { Wire } from "./wire.ts";
import { errorText } from "../wire/error_text.ts";

/** Our caps: chat is implied, blob and grant so peers may use them with us. */
const RUNNER_CAPS = ["chat", "blob", "grant"];
const CORE_TYPES: ReadonlySet<string> = new Set(
  MESSAGE_TYPES.filter((t) => !["presence", "mirror", "private"].includes(t)),
);

/** The {@link ScenarioContext} of one scenario run. */
export class Context implements ScenarioContext {
  readonly #session: Session;
  /** Waits end here; moved by reconnect(). */
  #deadline: number;
  /** The scenario's whole budget. */
  readonly #limit: number;
  readonly #scenario: Scenario;
  #start = Date.now();

  constructor(session: Session, scenario: Scenario, deadline: number) {
    this.#session = session;
    this.#scenario = scenario;
    this.#deadline = Math.min(deadline, Date.now() + session.timeoutMs);
    this.#limit = deadline;
  }

  get mode(): "dial" | "listen" {
    return this.#session.mode;
  }
  get signer(): Signer {
    return this.#session.signer;
  }
  get timeoutMs(): number {
    return this.#session.timeoutMs;
  }
  get peer(): PeerHello | undefined {
    return this.#session.wire?.peer;
  }
  get open(): boolean {
    return this.#session.wire?.open ?? false;
  }
  get driver(): DriverHandle | undefined {
    return this.#session.driver;
  }

  id(): string {
    return this.#session.ids.next();
  }

  thread(): string {
    return `conform-${this.#scenario.name}-${crypto.randomUUID().slice(0, 8)}`;
  }

  async #wire(): Promise<Wire> {
    const session = this.#session;
    if (session.wire) return session.wire;
    if (session.mode === "dial") {
      try {
        return await session.dialNew();
      } catch (e) {
        this.fail(`could not connect: ${errorText(e)}`);
      }
    }
    this.fail("no connection from the peer");
  }

  #budget(): string {
    return seconds(this.#deadline - this.#start);
  }

  async send(message: object): Promise<void> {
    const wire = await this.#wire();
    if (wire.ended) this.fail("the peer had already closed the connection");
    try {
      await wire.write(message);
    } catch (e) {
      this.fail(`sending failed: ${errorText(e)}`);
    }
  }

  async sendRaw(bytes: Uint8Array): Promise<void> {
    const wire = await this.#wire();
    if (wire.ended) this.fail("the peer had already closed the connection");
    try {
      await wire.writeRaw(bytes);
    } catch (e) {
      this.fail(`sending failed: ${errorText(e)}`);
    }
  }

  async receiveHello(): Promise<PeerHello> {
    const wire = await this.#wire();
    if (wire.peer) return wire.peer;
    const first = await this.#take(
      wire,
      "the peer's hello",
      (l) => l.message.t === "hello",
      {
        strict: true,
        idle: wire.ourHello
          ? undefined
          : `no hello within ${this.#budget()} of connecting, before ours (SPEC 7: hello is sent at once, without waiting)`,
      },
    );
    const m = first.line.message;
    const hello: PeerHello = {
      key: String(m.key),
      v: Number(m.v),
      caps: Array.isArray(m.caps) ? m.caps.map(String) : [],
      raw: first.line.raw,
    };
    if (typeof m.name === "string") hello.name = m.name;
    if (typeof m.about === "string") hello.about = m.about;
    wire.theirHello = first.bytes;
    wire.peer = hello;
    this.#session.notePeer(hello);
    if (hello.v !== 0) {
      this.fail(`the peer's hello has v ${hello.v}; this runner speaks v0`);
    }
    if (hello.key === this.signer.key) {
      this.fail("the peer's hello carries the runner's own key");
    }
    return hello;
  }

  async sendHello(overrides: Record<string, unknown> = {}): Promise<void> {
    const wire = await this.#wire();
    const hello = {
      ...createHello({
        id: this.id(),
        v: 0,
        key: this.signer.key,
        nonce: randomNonce(),
        name: "awp-conform",
        caps: RUNNER_CAPS,
        about: "awp conformance runner",
      }),
      ...overrides,
    };
    try {
      wire.ourHello = await wire.write(hello);
    } catch (e) {
      this.fail(`sending hello failed: ${errorText(e)}`);
    }
  }

  async sendAuth(options: { badSignature?: boolean } = {}): Promise<void> {
    const wire = await this.#wire();
    if (!wire.ourHello || !wire.theirHello) {
      throw new Error("sendAuth before both hellos");
    }
    // A bad signature is a real one over the transcript with the hellos
    // swapped: the mistake an implementation is most likely to make.
    const transcript = options.badSignature
      ? authTranscript(wire.theirHello, wire.ourHello)
      : authTranscript(wire.ourHello, wire.theirHello);
    const sig = await this.signer.sign(transcript);
    await this.send(createAuth({ id: this.id(), sig: encodeBase64Url(sig) }));
  }

  async handshake(
    options: { theirsFirst?: boolean; seen?: Record<string, string> } = {},
  ): Promise<Received> {
    const wire = await this.#wire();
    if (!wire.ourHello && !options.theirsFirst) await this.sendHello();
    const peer = await this.receiveHello();
    if (!wire.ourHello) await this.sendHello();
    await this.sendAuth();
    const auth = await this.next(
      "the peer's auth after the hellos",
      (l) => l.message.t === "auth",
    );
    let sig: Uint8Array;
    try {
      sig = decodeBase64(String(auth.message.sig));
    } catch {
      this.fail(
        `the peer's auth sig is not base64: ${
          truncate(String(auth.message.sig), 100)
        }`,
      );
    }
    const transcript = authTranscript(wire.theirHello!, wire.ourHello!);
    if (!(await verify(peer.key, transcript, sig))) {
      this.fail(
        "the peer's auth signature does not verify with its hello key over awp-auth-v0 0x00 its hello 0x00 our hello",
      );
    }
    await this.send(createResume({ id: this.id(), seen: options.seen ?? {} }));
    const resume = await this.next(
      "the peer's resume after auth",
      (l) => l.message.t === "resume",
    );
    wire.open = true;
    return resume;
  }

  next(
    what: string,
    match: (line: Received) => boolean,
    options: NextOptions = {},
  ): Promise<Received> {
    return this.#wire().then((wire) => this.#take(wire, what, match, options))
      .then((e) => e.line);
  }

  async #take(
    wire: Wire,
    what: string,
    match: (line: Received) => boolean,
    options: NextOptions & { strict?: boolean; idle?: string },
  ): Promise<{ line: Received; bytes: Uint8Array }> {
    for (;;) {
      const event = await wire.take(this.#deadline);
      if (!event) {
        this.fail(
          options.idle ??
            `expected ${what}; nothing came within ${this.#budget()}`,
        );
      }
      if (event.kind === "end") {
        const how = event.error
          ? `the connection failed (${event.error.message})`
          : "the peer closed the connection";
        this.fail(`expected ${what}; ${how} instead`);
      }
      if (event.kind === "invalid") this.fail(event.detail);
      const line = event.line;
      if (match(line)) return event;
      if (!options.strict && passable(line)) continue;
      if (options.ignore?.(line)) continue;
      this.fail(`expected ${what}; got ${describe(line)} instead`);
    }
  }

  async expectClose(what: string, options: NextOptions = {}): Promise<void> {
    const wire = await this.#wire();
    for (;;) {
      const event = await wire.take(this.#deadline);
      if (!event) {
        this.fail(`expected ${what}; still open after ${this.#budget()}`);
      }
      if (event.kind === "end") return;
      if (event.kind === "invalid") this.fail(event.detail);
      if (passable(event.line) || options.ignore?.(event.line)) continue;
      this.fail(`expected ${what}; got ${describe(event.line)} instead`);
    }
  }

  async roundTrip(what: string, options: NextOptions = {}): Promise<void> {
    const ping = createPing({ id: this.id() });
    await this.send(ping);
    await this.next(
      `${what} (a pong to our ping ${ping.id})`,
      (l) => l.message.t === "pong" && l.message.re === ping.id,
      options,
    );
  }

  async reconnect(): Promise<void> {
    const session = this.#session;
    session.wire?.close();
    session.wire = undefined;
    if (session.mode === "dial") {
      await this.#wire();
      return;
    }
    let wire: Wire | undefined;
    const waitStart = Date.now();
    try {
      // Reconnecting may take a backoff step or two: the whole budget.
      wire = await session.acceptNext(this.#limit);
    } catch (e) {
      this.fail(errorText(e));
    }
    if (!wire) {
      this.fail(
        `the peer did not reconnect within ${
          seconds(Date.now() - waitStart)
        } after the connection dropped`,
      );
    }
    // What follows a reconnect gets the usual timeout again.
    this.#deadline = Math.min(this.#limit, Date.now() + session.timeoutMs);
    this.#start = Date.now();
  }

  fail(detail: string): never {
    throw new ScenarioFailure(detail);
  }

  skip(reason: string): never {
    throw new ScenarioSkip(reason);
  }
}

/** Lines any wait passes over: the runner answers pings itself, and extension types are ignorable (SPEC 5). */
function passable(line: Received): boolean {
  const t = line.message.t;
  return t === "ping" || t === "pong" || !CORE_TYPES.has(t);
}
