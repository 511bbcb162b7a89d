import assert from "node:assert/strict";
import {
  buildBundle,
  BUNDLE_ENTRIES,
  BUNDLE_SOURCES,
  bundleDir,
  ensureBundle,
  readStamp,
  sourceHash,
} from "../../cli/process_bundle.ts";
import { BUNDLE_RUN_FLAGS } from "../../cli/self_command.ts";
import { DriverProcess } from "../helpers/driver_process.ts";

const ROOT = new URL("../../", import.meta.url);

async function run(
  args: string[],
): Promise<{ code: number; out: string; err: string }> {
  const o = await new Deno.Command(Deno.execPath(), {
    args,
    cwd: ROOT.pathname,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const dec = new TextDecoder();
  return { code: o.code, out: dec.decode(o.stdout), err: dec.decode(o.stderr) };
}

Deno.test("process bundle: the source hash changes with any source file", async () => {
  const root = await Deno.makeTempDir({ prefix: "awp-bundle-src-" });
  try {
    const at = (p: string) => new URL(p, `file://${root}/`);
    await Deno.mkdir(at("wire/deep"), { recursive: true });
    await Deno.writeTextFile(at("wire/deep/a.ts"), "export const a = 1;\n");
    await Deno.writeTextFile(at("deno.json"), "{}\n");
    const base = new URL(`file://${root}/`);
    const first = await sourceHash(base);
    assert.equal(first, await sourceHash(base)); // stable
    await Deno.writeTextFile(at("wire/deep/a.ts"), "export const a = 2;\n");
    const edited = await sourceHash(base);
    assert.notEqual(edited, first);
    await Deno.mkdir(at("peer"));
    await Deno.writeTextFile(at("peer/b.ts"), "");
    assert.notEqual(await sourceHash(base), edited); // a new, empty file
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("process bundle: every local module the entries load is a hashed source", async () => {
  for (const entry of BUNDLE_ENTRIES) {
    const { code, out, err } = await run(["info", "--json", entry]);
    assert.equal(code, 0, err);
    const modules = (JSON.parse(out) as { modules: { specifier: string }[] })
      .modules.map((m) => m.specifier).filter((s) => s.startsWith("file:"));
    assert.ok(modules.length > 0, entry);
    for (const s of modules) {
      const rel = s.slice(ROOT.href.length);
      assert.ok(s.startsWith(ROOT.href), `${entry} loads ${s}`);
      assert.ok(
        BUNDLE_SOURCES.some((top) => rel === top || rel.startsWith(`${top}/`)),
        `${entry} loads ${rel}, which the bundle's hash does not cover`,
      );
    }
  }
});

Deno.test("process bundle: a fresh build runs each command as the TypeScript does, and its driver talks to a TypeScript driver", async () => {
  const dir = await Deno.makeTempDir({ prefix: "awp-bundle-" });
  const out = new URL(`file://${dir}/bundle/`);
  const states: string[] = [];
  let a: DriverProcess | undefined;
  let b: DriverProcess | undefined;
  try {
    const stamp = await buildBundle(out);
    assert.equal(stamp.sources, await sourceHash());
    assert.deepEqual(await readStamp(out), stamp);
    const cli = `${out.pathname}cli.js`;
    // Every on-demand module resolves inside the bundle: same usage text.
    for (
      const words of [
        ["version"],
        ["--help"],
        ["driver", "--help"],
        ["mcp", "--help"],
        ["hook", "--help"],
        ["bootstrap", "--help"],
        ["conform", "--help"],
        ["status", "--home", `${dir}/none`],
      ]
    ) {
      const ts = await run(["run", "-A", "--unstable-kv", "cli.ts", ...words]);
      const js = await run(["run", ...BUNDLE_RUN_FLAGS, cli, ...words]);
      assert.deepEqual(js, ts, words.join(" "));
    }
    // Each module loaded on demand has its own entry in the bundle.
    for (const entry of BUNDLE_ENTRIES) {
      const js = entry.replace(/\.ts$/, ".js");
      await Deno.stat(new URL(js, out));
    }

    for (let i = 0; i < 2; i++) states.push(await Deno.makeTempDir());
    a = new DriverProcess(
      ["--state", states[0], "listen", "tcp:127.0.0.1:0"],
      cli,
      BUNDLE_RUN_FLAGS,
    );
    const listening = await a.waitFor(
      (e) => e.event === "listening",
      "bundle: listening",
    );
    b = new DriverProcess([
      "--state",
      states[1],
      "connect",
      String(listening.addr),
    ]);
    await b.waitFor((e) => e.event === "connected", "ts: connected");
    await b.command({ cmd: "send", th: "t1", text: "from TypeScript" });
    const sent = await b.waitFor((e) => e.event === "sent", "ts: sent");
    const recv = await a.waitFor((e) => e.event === "recv", "bundle: recv");
    assert.equal((recv.msg as { id: string }).id, sent.id);
    await b.waitFor((e) => e.event === "acked" && e.id === sent.id, "acked");
    await a.command({ cmd: "send", th: "t1", text: "from the bundle" });
    const back = await b.waitFor((e) => e.event === "recv", "ts: recv");
    assert.deepEqual((back.msg as { parts: unknown }).parts, [{
      k: "text",
      text: "from the bundle",
    }]);
    assert.equal(await a.quit(), 0);
    assert.equal(await b.quit(), 0);
  } finally {
    await a?.quit().catch(() => {});
    await b?.quit().catch(() => {});
    for (const s of [dir, ...states]) {
      await Deno.remove(s, { recursive: true }).catch(() => {});
    }
  }
});

Deno.test({
  name:
    "process bundle: awp up from mod.ts or from the bundle starts the daemon from the bundle",
  ignore: Deno.build.os !== "linux", // reads /proc/PID/cmdline
}, async () => {
  await ensureBundle();
  const cli = new URL("cli.js", bundleDir()).pathname;
  for (
    const main of [["-A", "mod.ts"], [...BUNDLE_RUN_FLAGS, cli]]
  ) {
    const home = await Deno.makeTempDir({ prefix: "awp-bundle-home-" });
    const awp = (...words: string[]) =>
      run(["run", ...main, ...words, "--home", home]);
    try {
      const up = await awp("up", "--listen", "tcp:127.0.0.1:0");
      assert.equal(up.code, 0, up.err);
      const status = await awp("status", "--json");
      assert.equal(status.code, 0, status.err);
      const { pid } = JSON.parse(status.out) as { pid: number };
      const argv = (await Deno.readTextFile(`/proc/${pid}/cmdline`)).split(
        "\0",
      );
      const entry = new URL("cli.js", bundleDir());
      assert.ok(
        argv.includes(entry.pathname) || argv.includes(entry.href),
        argv.join(" "),
      );
      for (const flag of BUNDLE_RUN_FLAGS) {
        assert.ok(argv.includes(flag), `${flag} in ${argv.join(" ")}`);
      }
    } finally {
      await awp("down");
      await Deno.remove(home, { recursive: true }).catch(() => {});
    }
  }
});
