/**
 * `deno task compile` builds `dist/awp`, a single binary with every asset
 * embedded: the copy is run from a temporary directory, away from the
 * package, so a run-time read of a package file by relative path would fail.
 *
 * `deno compile` needs the `denort` runtime for this Deno version. It
 * downloads it from dl.deno.land, or uses the file `DENORT_BIN` names. No
 * npm package ships `denort` (the npm `deno` package's platform packages,
 * e.g. `@deno/linux-x64-glibc`, hold the full `deno` binary only), so when
 * neither is available these tests register as ignored and say why: they
 * are never reported as passed without running.
 */

import assert from "node:assert/strict";

const ROOT = new URL("../..", import.meta.url).pathname;
const DENO = Deno.execPath();

/** Why the runtime is unavailable, or undefined when compiling can work. */
async function runtimeUnavailable(): Promise<string | undefined> {
  const bin = Deno.env.get("DENORT_BIN");
  if (bin) {
    try {
      return (await Deno.stat(bin)).isFile
        ? undefined
        : `DENORT_BIN=${bin} is not a file`;
    } catch {
      return `DENORT_BIN=${bin} does not exist`;
    }
  }
  const url =
    `https://dl.deno.land/release/v${Deno.version.deno}/denort-${Deno.build.target}.zip`;
  try {
    const res = await fetch(url, {
      method: "HEAD",
      signal: AbortSignal.timeout(5_000),
    });
    await res.body?.cancel();
    return res.ok ? undefined : `${url} answered ${res.status}`;
  } catch (error) {
    const why = error instanceof Error ? error.message : String(error);
    return `cannot download the denort runtime (${url}: ${
      why.split("\n")[0]
    }) and DENORT_BIN is not set`;
  }
}

const unavailable = await runtimeUnavailable();
if (unavailable) {
  console.log(`compile_test: ignored: ${unavailable}`);
}

/** Builds once per file run: `deno task compile` from the package root. */
let built: Promise<string> | undefined;
function build(): Promise<string> {
  built ??= (async () => {
    const out = await new Deno.Command(DENO, {
      args: ["task", "--quiet", "compile"],
      cwd: ROOT,
      stdout: "piped",
      stderr: "piped",
    }).output();
    const stderr = new TextDecoder().decode(out.stderr);
    assert.ok(out.success, `deno task compile failed:\n${stderr}`);
    // Run a copy from elsewhere: the binary must need nothing beside it.
    const dir = await Deno.makeTempDir({ prefix: "awp_compile_" });
    globalThis.addEventListener("unload", () => {
      Deno.removeSync(dir, { recursive: true });
    });
    const copy = `${dir}/awp`;
    await Deno.copyFile(`${ROOT}dist/awp`, copy);
    await Deno.chmod(copy, 0o755);
    return copy;
  })();
  return built;
}

/** Runs `bin` in `dir` (a fresh temp dir, removed after, when not given). */
async function run(
  bin: string,
  args: string[],
  dir?: string,
): Promise<{ code: number; stdout: string; stderr: string }> {
  const cwd = dir ?? await Deno.makeTempDir({ prefix: "awp_compile_cwd_" });
  try {
    const out = await new Deno.Command(bin, {
      args,
      cwd,
      env: { AWP_HOME: `${cwd}/home` },
      stdout: "piped",
      stderr: "piped",
    }).output();
    const dec = new TextDecoder();
    return {
      code: out.code,
      stdout: dec.decode(out.stdout),
      stderr: dec.decode(out.stderr),
    };
  } finally {
    if (!dir) await Deno.remove(cwd, { recursive: true });
  }
}

Deno.test({
  name: "compiled awp prints its version",
  ignore: unavailable !== undefined,
  async fn() {
    const bin = await build();
    const config = JSON.parse(await Deno.readTextFile(`${ROOT}deno.json`));
    const { code, stdout, stderr } = await run(bin, ["version"]);
    assert.equal(code, 0, stderr);
    assert.equal(stdout.trim(), `awp ${config.version} (protocol v0)`);
  },
});

Deno.test({
  name: "compiled awp prints the embedded schema, identical to the package's",
  ignore: unavailable !== undefined,
  async fn() {
    const bin = await build();
    const { code, stdout, stderr } = await run(bin, ["schema"]);
    assert.equal(code, 0, stderr);
    const schema = JSON.parse(
      await Deno.readTextFile(`${ROOT}schema/awp.schema.json`),
    );
    assert.deepEqual(JSON.parse(stdout), schema);
  },
});

/** Reads JSON lines from a driver's stdout, one at a time. */
class Events {
  #reader: ReadableStreamDefaultReader<string>;
  #buffer = "";
  // BufferSource: what TextDecoderStream takes under the DOM types too
  // (the dashboard's page, web/app/, brings them into `deno check .`).
  constructor(stream: ReadableStream<BufferSource>) {
    this.#reader = stream.pipeThrough(new TextDecoderStream()).getReader();
  }
  /** The next event matching `match`, skipping others; fails after 20 s. */
  async until(
    match: (e: Record<string, unknown>) => boolean,
  ): Promise<Record<string, unknown>> {
    const deadline = Date.now() + 20_000;
    while (Date.now() < deadline) {
      const nl = this.#buffer.indexOf("\n");
      if (nl >= 0) {
        const line = this.#buffer.slice(0, nl);
        this.#buffer = this.#buffer.slice(nl + 1);
        const event = JSON.parse(line);
        if (match(event)) return event;
        continue;
      }
      const { value, done } = await this.#reader.read();
      if (done) throw new Error("driver exited before the expected event");
      this.#buffer += value;
    }
    throw new Error("no matching driver event within 20 s");
  }
  /** Reads to the end, so the process's stdout is released. */
  async drain(): Promise<void> {
    while (!(await this.#reader.read()).done) { /* discard */ }
  }
}

Deno.test({
  name: "two compiled binaries exchange a message through `awp driver`",
  ignore: unavailable !== undefined,
  async fn() {
    const bin = await build();
    const dir = await Deno.makeTempDir({ prefix: "awp_compile_pair_" });
    const start = (args: string[]) =>
      new Deno.Command(bin, {
        args,
        cwd: dir,
        stdin: "piped",
        stdout: "piped",
        stderr: "inherit",
      }).spawn();
    const a = start([
      "driver",
      "--state",
      `${dir}/a`,
      "--name",
      "a",
      "listen",
      "tcp:127.0.0.1:0",
    ]);
    const aEvents = new Events(a.stdout);
    const aIn = a.stdin.getWriter();
    let b: Deno.ChildProcess | undefined;
    let bEvents: Events | undefined;
    let bIn: WritableStreamDefaultWriter<Uint8Array> | undefined;
    const enc = new TextEncoder();
    try {
      const listening = await aEvents.until((e) => e.event === "listening");
      b = start([
        "driver",
        "--state",
        `${dir}/b`,
        "--name",
        "b",
        "connect",
        String(listening.addr),
      ]);
      bEvents = new Events(b.stdout);
      bIn = b.stdin.getWriter();
      await bEvents.until((e) => e.event === "connected");
      await bIn.write(
        enc.encode(
          JSON.stringify({ cmd: "send", th: "t1", text: "hello from b" }) +
            "\n",
        ),
      );
      const sent = await bEvents.until((e) => e.event === "sent");
      const recv = await aEvents.until((e) => e.event === "recv");
      const msg = recv.msg as { id: string; th: string; parts: unknown[] };
      assert.equal(msg.id, sent.id);
      assert.equal(msg.th, "t1");
      assert.deepEqual(msg.parts, [{ k: "text", text: "hello from b" }]);
      await bEvents.until((e) => e.event === "acked" && e.id === sent.id);
    } finally {
      const quit = enc.encode(JSON.stringify({ cmd: "quit" }) + "\n");
      for (const w of [aIn, bIn]) {
        await w?.write(quit).catch(() => {});
        await w?.close().catch(() => {});
      }
      const stop = async (p: Deno.ChildProcess | undefined, e?: Events) => {
        if (!p) return;
        const timer = setTimeout(() => p.kill("SIGKILL"), 5_000);
        await Promise.all([e?.drain(), p.status]);
        clearTimeout(timer);
      };
      await stop(a, aEvents);
      await stop(b, bEvents);
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test({
  name: "compiled awp serves the dashboard with its embedded page and script",
  ignore: unavailable !== undefined,
  async fn() {
    const bin = await build();
    const cwd = await Deno.makeTempDir({ prefix: "awp_compile_web_" });
    const awp = (args: string[]) => run(bin, args, cwd);
    try {
      const up = await awp([
        "up",
        "--listen",
        "tcp:127.0.0.1:0",
        "--web=127.0.0.1:0",
        "--json",
      ]);
      assert.equal(up.code, 0, up.stderr);
      const { web } = JSON.parse(up.stdout) as { web: string };
      const page = await (await fetch(web)).text();
      assert.match(page, /src="\/app.js"/);
      const { APP_JS } = await import("../../web/app_bundle.generated.ts");
      assert.equal(await (await fetch(new URL("/app.js", web))).text(), APP_JS);
    } finally {
      await awp(["down"]);
      await Deno.remove(cwd, { recursive: true });
    }
  },
});
