// Two of our stdin/stdout drivers against each other, as real processes
// over a real TCP socket on 127.0.0.1 with real Deno KV homes.

import assert from "node:assert/strict";
import { createHash } from "node:crypto";

const MOD = new URL("../../mod.ts", import.meta.url).pathname;

type Event = Record<string, unknown> & { event: string };

class DriverProcess {
  readonly #child: Deno.ChildProcess;
  readonly #writer: WritableStreamDefaultWriter<Uint8Array>;
  readonly events: Event[] = [];
  #waiters = new Set<() => void>();
  readonly #reading: Promise<void>;
  readonly stderr: Promise<string>;
  #stdinOpen = true;

  constructor(args: string[]) {
    this.#child = new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", "--unstable-kv", MOD, "driver", ...args],
      stdin: "piped",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    this.#writer = this.#child.stdin.getWriter();
    this.#reading = this.#read();
    this.stderr = new Response(this.#child.stderr).text();
  }

  async #read(): Promise<void> {
    const decoder = new TextDecoder();
    let buffer = "";
    for await (const chunk of this.#child.stdout) {
      buffer += decoder.decode(chunk, { stream: true });
      let nl: number;
      while ((nl = buffer.indexOf("\n")) !== -1) {
        this.events.push(JSON.parse(buffer.slice(0, nl)));
        buffer = buffer.slice(nl + 1);
        for (const w of this.#waiters) w();
      }
    }
  }

  /** The first event (from `from` on) matching `pred`, waiting up to `ms`. */
  async next(
    pred: (e: Event) => boolean,
    ms = 20_000,
    from = 0,
  ): Promise<Event> {
    const deadline = Date.now() + ms;
    while (true) {
      const hit = this.events.slice(from).find(pred);
      if (hit) return hit;
      const left = deadline - Date.now();
      if (left <= 0) {
        throw new Error(
          `no matching event within ${ms} ms; got:\n${
            this.events.map((e) => JSON.stringify(e)).join("\n")
          }`,
        );
      }
      let timer: ReturnType<typeof setTimeout> | undefined;
      await new Promise<void>((resolve) => {
        const w = () => resolve();
        this.#waiters.add(w);
        timer = setTimeout(() => {
          this.#waiters.delete(w);
          resolve();
        }, left);
      }).finally(() => clearTimeout(timer));
      this.#waiters.clear();
    }
  }

  async send(command: Record<string, unknown>): Promise<void> {
    await this.#writer.write(
      new TextEncoder().encode(JSON.stringify(command) + "\n"),
    );
  }

  async closeStdin(): Promise<void> {
    if (!this.#stdinOpen) return;
    this.#stdinOpen = false;
    await this.#writer.close().catch(() => {});
  }

  /** `quit`, then the exit code; kills it if it does not go. */
  async quit(): Promise<number> {
    if (this.#stdinOpen) await this.send({ cmd: "quit" }).catch(() => {});
    else this.#child.kill("SIGTERM");
    const timer = setTimeout(() => this.#child.kill("SIGKILL"), 10_000);
    const status = await this.#child.status;
    clearTimeout(timer);
    await this.closeStdin();
    await this.#reading.catch(() => {});
    await this.stderr;
    return status.code;
  }

  kill(): void {
    try {
      this.#child.kill("SIGKILL");
    } catch { /* gone */ }
  }
}

Deno.test("driver: two drivers talk: queued commands, send, state, blob, grant, bye, quit", async () => {
  const da = await Deno.makeTempDir({ prefix: "awp-drv-a-" });
  const db = await Deno.makeTempDir({ prefix: "awp-drv-b-" });
  const files = await Deno.makeTempDir({ prefix: "awp-drv-f-" });
  const a = new DriverProcess([
    "--state",
    da,
    "--name",
    "alpha",
    "--ping-interval",
    "0",
    "listen",
    "tcp:127.0.0.1:0",
  ]);
  let b: DriverProcess | undefined;
  try {
    const idA = await a.next((e) => e.event === "identity");
    assert.equal(idA.name, "alpha");
    const listening = await a.next((e) => e.event === "listening");
    assert.equal(listening.key, idA.key);
    assert.match(String(listening.addr), /^tcp:127\.0\.0\.1:\d+$/);

    // Given before any peer connected: queued, then delivered to the first one.
    await a.send({ cmd: "send", th: "t0", text: "queued on the listener" });
    b = new DriverProcess([
      "--state",
      db,
      "--name",
      "beta",
      "connect",
      String(listening.addr),
    ]);
    await b.send({
      cmd: "send",
      th: "t1",
      subject: "Run the suite",
      text: "Please run make integration.",
    });
    await b.send({ cmd: "bogus" });

    const idB = await b.next((e) => e.event === "identity");
    const connB = await b.next((e) => e.event === "connected");
    assert.equal(connB.key, idA.key);
    assert.equal(connB.name, "alpha");
    const connA = await a.next((e) => e.event === "connected");
    assert.equal(connA.key, idB.key);
    assert.ok(Array.isArray(connA.caps));
    assert.match(
      String((await b.next((e) => e.event === "error")).detail),
      /unknown command "bogus"/,
    );

    const sentB = await b.next((e) => e.event === "sent" && e.t === "msg");
    const recvA = await a.next((e) =>
      e.event === "recv" && (e.msg as { th?: string }).th === "t1"
    );
    const m = recvA.msg as {
      t: string;
      id: string;
      subject: string;
      parts: Array<{ k: string; text: string }>;
    };
    assert.equal(m.t, "msg");
    assert.equal(m.id, sentB.id);
    assert.equal(m.subject, "Run the suite");
    assert.deepEqual(m.parts, [{
      k: "text",
      text: "Please run make integration.",
    }]);
    await b.next((e) => e.event === "acked" && e.id === sentB.id);

    const sentA = await a.next((e) => e.event === "sent" && e.th === "t0");
    const recvB = await b.next((e) =>
      e.event === "recv" && (e.msg as { th?: string }).th === "t0"
    );
    assert.equal((recvB.msg as { id: string }).id, sentA.id);
    await a.next((e) => e.event === "acked" && e.id === sentA.id);

    // state
    await a.send({
      cmd: "state",
      th: "t1",
      state: "waiting",
      note: "need the branch name",
    });
    const st = await b.next((e) =>
      e.event === "recv" && (e.msg as { t: string }).t === "state"
    );
    assert.deepEqual(
      { ...(st.msg as Record<string, unknown>), id: undefined, ts: undefined },
      {
        t: "state",
        th: "t1",
        state: "waiting",
        note: "need the branch name",
        id: undefined,
        ts: undefined,
      },
    );

    // blob: the received file is byte-identical, sha256 reported.
    const bytes = new Uint8Array(300_001).map((_, i) => (i * 31 + 7) % 256);
    await Deno.writeFile(`${files}/test-output.log`, bytes);
    await b.send({
      cmd: "blob",
      th: "t1",
      path: `${files}/test-output.log`,
      text: "log attached",
    });
    const blob = await a.next((e) => e.event === "blob");
    const sha = createHash("sha256").update(bytes).digest("hex");
    assert.equal(blob.sha256, sha);
    assert.equal(blob.size, bytes.length);
    assert.deepEqual(await Deno.readFile(String(blob.path)), bytes);
    const withBlob = await a.next((e) =>
      e.event === "recv" &&
      ((e.msg as { parts?: Array<{ k: string }> }).parts ?? []).some((p) =>
        p.k === "blob"
      )
    );
    assert.equal(
      (withBlob.msg as { parts: Array<{ k: string; ref?: string }> }).parts[1]
        .ref,
      blob.ref,
    );
    // Every received line is a recv; chunks come without their data.
    const chunks = a.events.filter((e) =>
      e.event === "recv" && (e.msg as { t: string }).t === "chunk"
    ).map((e) => e.msg as Record<string, unknown>);
    assert.equal(chunks.length, 2, "300,001 bytes are two 256 KiB chunks");
    assert.deepEqual(chunks.map((c) => [c.ref, c.n, c.last]), [
      [blob.ref, 0, false],
      [blob.ref, 1, true],
    ]);
    assert.ok(chunks.every((c) => !("data" in c) && typeof c.id === "string"));

    // grant
    await b.send({ cmd: "grant", sub: idA.key, caps: ["fs:read"], ttl: 3600 });
    const g = await a.next((e) =>
      e.event === "recv" && (e.msg as { t: string }).t === "grant"
    );
    const grant =
      (g.msg as { grant: { iss: string; sub: string; caps: string[] } }).grant;
    assert.equal(grant.iss, idB.key);
    assert.equal(grant.sub, idA.key);
    assert.deepEqual(grant.caps, ["fs:read"]);
    const grantLine = g.msg as { id?: string; ts?: string };
    assert.equal(typeof grantLine.id, "string", "the grant line as sent");
    assert.equal(typeof grantLine.ts, "string");

    // Closing stdin does not stop the driver: it still receives.
    await a.closeStdin();
    const mark = a.events.length;
    await b.send({ cmd: "send", th: "t1", text: "still there?" });
    const still = await a.next(
      (e) =>
        e.event === "recv" && JSON.stringify(e.msg).includes("still there?"),
      20_000,
      mark,
    );
    assert.equal((still.msg as { t: string }).t, "msg");

    // bye: the other side sees it and the connection ends.
    const byeMark = a.events.length;
    await b.send({ cmd: "bye", reason: "done" });
    const bye = await a.next(
      (e) => e.event === "recv" && (e.msg as { t: string }).t === "bye",
      20_000,
      byeMark,
    );
    assert.equal((bye.msg as { reason?: string }).reason, "done");
    const disc = await a.next(
      (e) => e.event === "disconnected",
      20_000,
      byeMark,
    );
    assert.equal(disc.key, idB.key);

    assert.equal(await b.quit(), 0);
    // a's stdin is closed: it is stopped by a signal instead, cleanly.
    assert.equal(await a.quit(), 0);
  } finally {
    a.kill();
    b?.kill();
    await a.quit().catch(() => {});
    await b?.quit().catch(() => {});
    for (const d of [da, db, files]) {
      await Deno.remove(d, { recursive: true }).catch(() => {});
    }
  }
});

Deno.test("driver: usage errors are one line and exit 2", async () => {
  for (
    const [args, pattern] of [
      [["listen", "tcp:127.0.0.1:0"], /--state DIR is required/],
      [
        ["--state", "/tmp/x", "dial", "tcp:127.0.0.1:1"],
        /give listen ADDR or connect ADDR/,
      ],
      [["--state", "/tmp/x", "connect", "tcp:nohost"], /invalid address/],
    ] as const
  ) {
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", "--unstable-kv", MOD, "driver", ...args],
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert.equal(out.code, 2);
    const err = new TextDecoder().decode(out.stderr).trimEnd().split("\n");
    assert.equal(err.length, 1);
    assert.match(err[0], pattern);
  }
});
