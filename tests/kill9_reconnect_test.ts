import assert from "node:assert/strict";

const FIXTURE = new URL("./fixtures/peer.ts", import.meta.url).pathname;
const CONFIG = new URL("../deno.json", import.meta.url).pathname;

type Line = Record<string, unknown> & { event: string };

/** One fixture process: JSON lines out, commands in. */
class PeerProcess {
  readonly child: Deno.ChildProcess;
  readonly lines: Line[] = [];
  #writer: WritableStreamDefaultWriter<Uint8Array>;
  #pump: Promise<void>;
  #waiters: Array<() => void> = [];

  constructor(args: string[]) {
    this.child = new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", "--config", CONFIG, FIXTURE, ...args],
      stdin: "piped",
      stdout: "piped",
      stderr: "inherit",
    }).spawn();
    this.#writer = this.child.stdin.getWriter();
    this.#pump = this.#read();
  }

  async #read(): Promise<void> {
    const decoder = new TextDecoder();
    let buffered = "";
    for await (const chunk of this.child.stdout) {
      buffered += decoder.decode(chunk, { stream: true });
      let nl: number;
      while ((nl = buffered.indexOf("\n")) >= 0) {
        const text = buffered.slice(0, nl);
        buffered = buffered.slice(nl + 1);
        try {
          this.lines.push(JSON.parse(text));
        } catch {
          this.lines.push({ event: "stdout", text });
        }
        for (const wake of this.#waiters.splice(0)) wake();
      }
    }
    for (const wake of this.#waiters.splice(0)) wake();
  }

  /** Waits for a line matching `match`, at or after index `from`. */
  async waitFor(
    match: (l: Line) => boolean,
    what: string,
    ms = 20_000,
    from = 0,
  ): Promise<Line> {
    const deadline = Date.now() + ms;
    for (;;) {
      const found = this.lines.slice(from).find(match);
      if (found) return found;
      const left = deadline - Date.now();
      if (left <= 0) {
        throw new Error(
          `timed out waiting for ${what}; saw ${
            JSON.stringify(this.lines.slice(-10))
          }`,
        );
      }
      let timer: ReturnType<typeof setTimeout> | undefined;
      await new Promise<void>((resolve) => {
        this.#waiters.push(resolve);
        timer = setTimeout(resolve, Math.min(left, 200));
      });
      clearTimeout(timer);
    }
  }

  async command(value: Record<string, unknown>): Promise<void> {
    await this.#writer.write(
      new TextEncoder().encode(JSON.stringify(value) + "\n"),
    );
  }

  kill9(): void {
    this.child.kill("SIGKILL");
  }

  /** Asks it to quit, then waits (or kills it after a while). */
  async finish(): Promise<void> {
    try {
      await this.command({ quit: true });
      await this.#writer.close();
    } catch { /* already gone */ }
    const timer = setTimeout(() => {
      try {
        this.child.kill("SIGKILL");
      } catch { /* exited */ }
    }, 10_000);
    await this.child.status;
    clearTimeout(timer);
    await this.#pump;
  }

  /** After a kill: reap the process and its pipes. */
  async reap(): Promise<void> {
    try {
      await this.#writer.close();
    } catch { /* broken pipe */ }
    await this.child.status;
    await this.#pump;
  }
}

Deno.test("kill -9 one peer: the other detects it, redials with backoff, resume delivers the queue", async () => {
  const dir = await Deno.makeTempDir();
  const address = `unix:${dir}/listener.sock`;
  const common = ["--ping", "300", "--backoff", "100", "--cap", "400"];
  const listenerArgs = [
    "--home",
    `${dir}/listener`,
    "--listen",
    address,
    "--name",
    "listener",
    ...common,
  ];
  let listener = new PeerProcess(listenerArgs);
  const dialer = new PeerProcess([
    "--home",
    `${dir}/dialer`,
    "--name",
    "dialer",
    ...common,
  ]);
  let second: PeerProcess | undefined;
  try {
    const lReady = await listener.waitFor((l) => l.event === "ready", "ready");
    const dReady = await dialer.waitFor((l) => l.event === "ready", "ready");
    const lKey = lReady.key as string;
    const dKey = dReady.key as string;
    assert.equal(lReady.addr, address);

    // Connect and exchange both ways.
    await dialer.command({ reach: { peer: lKey, address } });
    await dialer.command({ send: { peer: lKey, th: "t1", text: "one" } });
    await listener.waitFor(
      (l) => l.event === "delivered" && l.text === "one" && l.peer === dKey,
      "listener got one",
    );
    await listener.command({ send: { peer: dKey, th: "t1", text: "reply" } });
    await dialer.waitFor(
      (l) => l.event === "delivered" && l.text === "reply",
      "dialer got reply",
    );

    // Freeze the listener first (a sleeping sandbox: the socket stays open,
    // nothing answers): only the ping timeout can tell. Then kill -9 it.
    const mark = dialer.lines.length;
    listener.child.kill("SIGSTOP");
    const lost = await dialer.waitFor(
      (l) => l.event === "disconnected" && l.peer === lKey,
      "dialer detects the loss by missed pongs",
      20_000,
      mark,
    );
    assert.match(String(lost.reason), /pong/);
    listener.kill9();
    await listener.reap();
    await dialer.command({ send: { peer: lKey, th: "t1", text: "two" } });
    await dialer.command({ send: { peer: lKey, th: "t2", text: "three" } });
    await dialer.waitFor(
      (l) => l.event === "dial_failed" && l.peer === lKey,
      "a failed redial while it is down",
      20_000,
      mark,
    );

    // It comes back with the same home (same key, same store).
    second = new PeerProcess(listenerArgs);
    listener = second;
    const again = await second.waitFor((l) => l.event === "ready", "ready 2");
    assert.equal(again.key, lKey, "same identity after restart");
    const two = await second.waitFor(
      (l) => l.event === "delivered" && l.text === "two",
      "queued two delivered on resume",
    );
    const three = await second.waitFor(
      (l) => l.event === "delivered" && l.text === "three",
      "queued three delivered on resume",
    );
    assert.equal(two.th, "t1");
    assert.equal(three.th, "t2");
    // Nothing delivered twice: "one" was committed before the kill.
    const deliveredOne = second.lines.filter((l) =>
      l.event === "delivered" && l.text === "one"
    );
    assert.equal(deliveredOne.length, 0);
    const failures = dialer.lines.slice(mark).filter((l) =>
      l.event === "dial_failed"
    );
    assert.ok(failures.length >= 1);
    await dialer.waitFor(
      (l) => l.event === "connected" && l.peer === lKey,
      "dialer reconnected",
      20_000,
      mark,
    );
  } finally {
    await Promise.all([listener.finish(), dialer.finish()]);
    await Deno.remove(dir, { recursive: true });
  }
});
