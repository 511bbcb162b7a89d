/**
 * Runs the package the way a user of the published package does: `deno run
 * -A jsr:@awp/peer ...` and `import { Peer } from "jsr:@awp/peer"`, from a
 * temporary directory with no deno.json.
 *
 * JSR cannot be reached here, so the test serves the package from a local
 * registry speaking JSR's file layout (`meta.json`, `<version>_meta.json`
 * with a sha256 manifest, the files) and points Deno at it with `JSR_URL`.
 * Like `deno publish`, the registry serves modules with the bare specifiers
 * of deno.json `imports` (`xstate`, `ajv`, ...) replaced by their `npm:`
 * targets, so nothing of our deno.json is in effect for the user: in
 * particular `"unstable": ["kv"]` is not, and the CLI's one-time
 * re-execution with `--unstable-kv` is what makes Deno KV available.
 *
 * The files served are the package's, minus what `deno.json` `publish.exclude`
 * and `.gitignore` leave out. A throwaway DENO_DIR keeps the served modules
 * out of the user's cache; its `npm` folder links to the real npm cache so
 * npm packages are not fetched again.
 */

import assert from "node:assert/strict";

const ROOT = new URL("../..", import.meta.url).pathname;
const DENO = Deno.execPath();
const config = JSON.parse(await Deno.readTextFile(`${ROOT}deno.json`)) as {
  name: string;
  version: string;
  imports?: Record<string, string>;
  publish?: { exclude?: string[] };
};
const [scope, name] = config.name.slice(1).split("/");

/** Paths (relative, "/"-separated) left out of the package. */
function excluded(path: string): boolean {
  const patterns = [
    ...(config.publish?.exclude ?? []),
    // From .gitignore (JSR honours it too).
    "dist/",
    "tests/output/",
    "node_modules/",
    ".deno/",
  ];
  if (path.split("/").some((part) => part.startsWith("."))) return true;
  return patterns.some((p) =>
    p.endsWith("/") ? path.startsWith(p) : path === p
  );
}

async function packageFiles(dir = "", out: string[] = []): Promise<string[]> {
  for await (const entry of Deno.readDir(`${ROOT}${dir}`)) {
    const path = `${dir}${entry.name}`;
    if (entry.isDirectory) {
      if (!excluded(`${path}/`)) await packageFiles(`${path}/`, out);
    } else if (entry.isFile && !excluded(path)) {
      out.push(path);
    }
  }
  return out;
}

async function sha256(bytes: Uint8Array<ArrayBuffer>): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", bytes);
  return Array.from(
    new Uint8Array(digest),
    (b) => b.toString(16).padStart(2, "0"),
  ).join("");
}

/**
 * What `deno publish` does to each module before upload: bare specifiers
 * from deno.json `imports` are replaced by their targets, so the published
 * code needs no import map (a user's config never sees ours).
 */
function unfurl(source: string): string {
  const imports = config.imports ?? {};
  return source.replace(
    /(\bfrom\s*|\bimport\s*\(\s*|\bimport\s+)(["'])([^"'\n]+)\2/g,
    (whole, lead: string, quote: string, specifier: string) => {
      const target = imports[specifier];
      return target === undefined ? whole : `${lead}${quote}${target}${quote}`;
    },
  );
}

interface Registry {
  url: string;
  denoDir: string;
  close(): Promise<void>;
}

/** Serves the package as a JSR registry on 127.0.0.1 and makes a DENO_DIR. */
async function startRegistry(): Promise<Registry> {
  const files = new Map<string, Uint8Array<ArrayBuffer>>();
  const manifest: Record<string, { size: number; checksum: string }> = {};
  for (const path of await packageFiles()) {
    const bytes = /\.[cm]?[jt]sx?$/.test(path)
      ? new TextEncoder().encode(
        unfurl(await Deno.readTextFile(`${ROOT}${path}`)),
      )
      : await Deno.readFile(`${ROOT}${path}`);
    files.set(`/${path}`, bytes);
    manifest[`/${path}`] = {
      size: bytes.length,
      checksum: `sha256-${await sha256(bytes)}`,
    };
  }
  assert.ok(files.has("/mod.ts") && files.has("/deno.json"));
  const base = `/@${scope}/${name}`;
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    (req) => {
      const path = new URL(req.url).pathname;
      if (path === `${base}/meta.json`) {
        return Response.json({
          scope,
          name,
          latest: config.version,
          versions: { [config.version]: {} },
        });
      }
      if (path === `${base}/${config.version}_meta.json`) {
        return Response.json({ manifest, exports: { ".": "./mod.ts" } });
      }
      const prefix = `${base}/${config.version}`;
      const bytes = path.startsWith(prefix)
        ? files.get(path.slice(prefix.length))
        : undefined;
      return bytes
        ? new Response(bytes)
        : new Response("not found", { status: 404 });
    },
  );
  const denoDir = await Deno.makeTempDir({ prefix: "awp_published_denodir_" });
  const info = await new Deno.Command(DENO, {
    args: ["info", "--json"],
    stdout: "piped",
    stderr: "null",
  }).output();
  const realDir = JSON.parse(new TextDecoder().decode(info.stdout)).denoDir;
  await Deno.symlink(`${realDir}/npm`, `${denoDir}/npm`);
  return {
    url: `http://127.0.0.1:${server.addr.port}/`,
    denoDir,
    async close() {
      await server.shutdown();
      await Deno.remove(denoDir, { recursive: true });
    },
  };
}

/** A user's directory: temporary, no deno.json anywhere above it. */
async function userDir(): Promise<string> {
  const dir = await Deno.makeTempDir({ prefix: "awp_published_user_" });
  for (let d = dir; d !== "/"; d = d.slice(0, d.lastIndexOf("/")) || "/") {
    for (const file of ["deno.json", "deno.jsonc"]) {
      const found = await Deno.stat(`${d}/${file}`).then(
        () => true,
        () => false,
      );
      assert.ok(!found, `${d}/${file} would configure the user's run`);
    }
  }
  return dir;
}

function userEnv(registry: Registry): Record<string, string> {
  return { JSR_URL: registry.url, DENO_DIR: registry.denoDir, NO_COLOR: "1" };
}

Deno.test("jsr:@awp/peer version runs with no deno.json", async () => {
  const registry = await startRegistry();
  const cwd = await userDir();
  try {
    const out = await new Deno.Command(DENO, {
      args: ["run", "-A", `jsr:${config.name}`, "version"],
      cwd,
      env: userEnv(registry),
      stdout: "piped",
      stderr: "piped",
    }).output();
    const stderr = new TextDecoder().decode(out.stderr);
    assert.ok(out.success, stderr);
    assert.equal(
      new TextDecoder().decode(out.stdout).trim(),
      `awp ${config.version} (protocol v0)`,
    );
    // It really came from the registry, not from this checkout.
    assert.match(stderr, new RegExp(`Download ${registry.url}@${scope}`));
  } finally {
    await Deno.remove(cwd, { recursive: true });
    await registry.close();
  }
});

Deno.test("a script importing Peer from jsr:@awp/peer exchanges a message", async () => {
  const registry = await startRegistry();
  const cwd = await userDir();
  try {
    await Deno.writeTextFile(
      `${cwd}/user.ts`,
      `import { Peer } from "jsr:${config.name}";
const a = await Peer.open({ memory: true });
const b = await Peer.open({ memory: true });
await b.connect(await a.listen("tcp:127.0.0.1:0"));
const { id } = await b.send(a.key, "hello from a user");
await b.waitAck(id, { timeoutMs: 10000 });
await b.close();
await a.close();
console.log("acked " + id);
`,
    );
    const out = await new Deno.Command(DENO, {
      args: ["run", "-A", "user.ts"],
      cwd,
      env: userEnv(registry),
      stdout: "piped",
      stderr: "piped",
    }).output();
    const stdout = new TextDecoder().decode(out.stdout);
    assert.ok(out.success, new TextDecoder().decode(out.stderr));
    assert.match(stdout.trim(), /^acked [0-9A-HJKMNP-TV-Z]{26}$/);
  } finally {
    await Deno.remove(cwd, { recursive: true });
    await registry.close();
  }
});

Deno.test("without our deno.json the CLI re-executes itself with --unstable-kv", async () => {
  const registry = await startRegistry();
  const cwd = await userDir();
  try {
    const child = new Deno.Command(DENO, {
      args: [
        "run",
        "-A",
        `jsr:${config.name}`,
        "driver",
        "--state",
        `${cwd}/state`,
        "listen",
        "tcp:127.0.0.1:0",
      ],
      cwd,
      env: userEnv(registry),
      stdin: "piped",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    const stdin = child.stdin.getWriter();
    const lines = child.stdout.pipeThrough(new TextDecoderStream())
      .getReader();
    const stderr = new Response(child.stderr).text();
    let text = "";
    try {
      const deadline = setTimeout(() => child.kill("SIGKILL"), 60_000);
      while (!text.includes('"event":"listening"')) {
        const { value, done } = await lines.read();
        if (done) break;
        text += value;
      }
      clearTimeout(deadline);
    } finally {
      await stdin.write(new TextEncoder().encode('{"cmd":"quit"}\n'))
        .catch(() => {});
      await stdin.close().catch(() => {});
      while (!(await lines.read()).done) { /* drain */ }
    }
    const status = await child.status;
    const errors = await stderr;
    assert.match(text, /"event":"listening","addr":"tcp:127\.0\.0\.1:\d+"/);
    assert.equal(status.code, 0, errors);
    // The store is a Deno KV file: KV was available, so the re-execution
    // with --unstable-kv happened (this process had no way to enable it).
    assert.ok((await Deno.stat(`${cwd}/state/awp.kv`)).isFile);
  } finally {
    await Deno.remove(cwd, { recursive: true });
    await registry.close();
  }
});

Deno.test("mod.ts by absolute file URL, from a directory with no deno.json", async () => {
  // Dependencies are npm: specifiers in the source, so the package needs no
  // import map: a file or https URL works as well as jsr:.
  const cwd = await userDir();
  const mod = new URL("../../mod.ts", import.meta.url).href;
  try {
    const version = await new Deno.Command(DENO, {
      args: ["run", "-A", "--no-config", mod, "version"],
      cwd,
      env: { NO_COLOR: "1" },
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert.ok(version.success, new TextDecoder().decode(version.stderr));
    assert.equal(
      new TextDecoder().decode(version.stdout).trim(),
      `awp ${config.version} (protocol v0)`,
    );
    await Deno.writeTextFile(
      `${cwd}/user.ts`,
      `import { Peer } from ${JSON.stringify(mod)};
const a = await Peer.open({ memory: true });
const b = await Peer.open({ memory: true });
await b.connect(await a.listen("unix:${cwd}/a.sock"));
const { id } = await b.send(a.key, "hello by file URL");
await b.waitAck(id, { timeoutMs: 10000 });
await b.close();
await a.close();
console.log("acked " + id);
`,
    );
    const out = await new Deno.Command(DENO, {
      args: ["run", "-A", "--no-config", "user.ts"],
      cwd,
      env: { NO_COLOR: "1" },
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert.ok(out.success, new TextDecoder().decode(out.stderr));
    assert.match(
      new TextDecoder().decode(out.stdout).trim(),
      /^acked [0-9A-HJKMNP-TV-Z]{26}$/,
    );
  } finally {
    await Deno.remove(cwd, { recursive: true });
  }
});
