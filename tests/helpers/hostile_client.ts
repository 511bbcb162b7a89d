/**
 * A small hostile AWP client for the bound tests and the `hostile` bench
 * workload: it does the real handshake (hello, auth, resume) over a real
 * socket with its own key, then lets the caller misbehave: write raw bytes
 * (a line with no end, huge lines), flood msgs without reading, or read
 * lines one by one.
 *
 * @module
 */

import { decodeBase64, encodeBase64Url } from "../../wire/base64.ts";
import { encodeLine } from "../../wire/frame.ts";
import { IdGenerator } from "../../wire/id.ts";
import { randomNonce, Signer, verify } from "../../wire/keys.ts";
import { LineReader } from "../../wire/line_reader.ts";
import { parseLine } from "../../wire/parse.ts";
import { authTranscript } from "../../wire/transcript.ts";
import { timestamp } from "../../wire/time.ts";

/** A received line, parsed. */
export type Line = Record<string, unknown> & { t: string };

function connectOptions(
  address: string,
): Deno.ConnectOptions | Deno.UnixConnectOptions {
  if (address.startsWith("unix:")) {
    return { transport: "unix", path: address.slice(5) };
  }
  const m = /^tcp:(.+):(\d+)$/.exec(address);
  if (!m) throw new Error(`hostile client: bad address ${address}`);
  return { hostname: m[1].replace(/^\[|\]$/g, ""), port: Number(m[2]) };
}

/**
 * One authenticated connection that misbehaves on request.
 *
 * @example
 * ```ts ignore
 * const c = await HostileClient.connect("unix:/tmp/s/sock");
 * await c.write(new Uint8Array(1024 * 1024 + 1).fill(0x61)); // no newline
 * c.close();
 * ```
 */
export class HostileClient {
  /** Our key. */
  readonly key: string;
  /** The remote's key, from its hello. */
  remoteKey = "";
  readonly #conn: Deno.Conn;
  readonly #ids = new IdGenerator();
  readonly #reader = new LineReader();
  readonly #pending: Line[] = [];
  /** Lines read from the socket, not parsed yet. */
  readonly #raw: Uint8Array[] = [];
  readonly #buffer = new Uint8Array(64 * 1024);
  #ended = false;

  private constructor(conn: Deno.Conn, signer: Signer) {
    this.#conn = conn;
    this.key = signer.key;
  }

  /**
   * Connects and completes the handshake as `signer` (a fresh key unless
   * given), sending `seen` in its resume. Resolves once the remote's resume
   * arrived; lines after it are left for {@link read}.
   */
  static async connect(
    address: string,
    options: { signer?: Signer; seen?: Record<string, string> } = {},
  ): Promise<HostileClient> {
    const signer = options.signer ?? await Signer.generate();
    const conn = await Deno.connect(
      connectOptions(address) as Deno.ConnectOptions,
    );
    const c = new HostileClient(conn, signer);
    try {
      await c.#handshake(signer, options.seen ?? {});
    } catch (error) {
      c.close();
      throw error;
    }
    return c;
  }

  async #handshake(
    signer: Signer,
    seen: Record<string, string>,
  ): Promise<void> {
    const hello = encodeLine({
      t: "hello",
      id: this.#ids.next(),
      ts: timestamp(),
      v: 0,
      key: signer.key,
      nonce: randomNonce(),
      name: "hostile",
      caps: ["chat", "blob"],
    });
    await this.write(hello);
    const mine = hello.subarray(0, hello.length - 1);
    const theirs = await this.#rawLine();
    const theirHello = parseLine(theirs);
    if (!theirHello.ok || theirHello.message.t !== "hello") {
      throw new Error("hostile client: no hello");
    }
    this.remoteKey = String(theirHello.message.key);
    const sig = await signer.sign(authTranscript(mine, theirs));
    await this.send({ t: "auth", sig: encodeBase64Url(sig) });
    const auth = await this.read();
    if (auth.t !== "auth") {
      throw new Error(`hostile client: got ${JSON.stringify(auth)}`);
    }
    const ok = await verify(
      this.remoteKey,
      authTranscript(theirs, mine),
      decodeBase64(String(auth.sig)),
    );
    if (!ok) throw new Error("hostile client: the remote's auth is bad");
    await this.send({ t: "resume", seen });
    for (;;) {
      const line = await this.read();
      if (line.t === "resume") return;
      this.#pending.push(line);
    }
  }

  /** A fresh id, greater than every earlier one. */
  nextId(): string {
    return this.#ids.next();
  }

  /** Writes every byte of `bytes`. */
  async write(bytes: Uint8Array): Promise<void> {
    let at = 0;
    while (at < bytes.length) at += await this.#conn.write(bytes.subarray(at));
  }

  /** Sends one line; `id` and `ts` are filled in. Resolves with the id. */
  async send(message: Record<string, unknown>): Promise<string> {
    const id = typeof message.id === "string" ? message.id : this.nextId();
    await this.write(encodeLine({ ...message, id, ts: timestamp() }));
    return id;
  }

  /** The next line (pings are answered and skipped); throws at the end. */
  async read(): Promise<Line> {
    for (;;) {
      const queued = this.#pending.shift();
      if (queued) return queued;
      const parsed = parseLine(await this.#rawLine());
      if (!parsed.ok) throw new Error(`hostile client: ${parsed.detail}`);
      const line = parsed.message as unknown as Line;
      if (line.t === "ping") {
        await this.send({ t: "pong", re: line.id });
        continue;
      }
      return line;
    }
  }

  /** Reads lines until `match`; throws at the end of the stream. */
  async readUntil(match: (line: Line) => boolean): Promise<Line> {
    for (;;) {
      const line = await this.read();
      if (match(line)) return line;
    }
  }

  /** True once the remote closed (or reset) the connection, read so far. */
  get ended(): boolean {
    return this.#ended;
  }

  /** Reads and drops bytes until the remote closes; resolves then. */
  async drain(): Promise<void> {
    try {
      while (await this.#conn.read(this.#buffer) !== null) { /* drop */ }
    } catch { /* reset */ }
    this.#ended = true;
  }

  async #rawLine(): Promise<Uint8Array> {
    for (;;) {
      const next = this.#raw.shift();
      if (next) return next;
      const n = await this.#conn.read(this.#buffer).catch(() => null);
      if (n === null) {
        this.#ended = true;
        throw new Error("hostile client: the remote closed the connection");
      }
      for (const event of this.#reader.push(this.#buffer.subarray(0, n))) {
        if (event.kind === "line") this.#raw.push(event.bytes.slice());
      }
    }
  }

  /** Closes the socket (idempotent). */
  close(): void {
    try {
      this.#conn.close();
    } catch { /* closed */ }
  }
}
