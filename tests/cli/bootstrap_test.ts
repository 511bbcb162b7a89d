// `awp bootstrap` against fixture config files of Claude Code, Codex,
// Cursor and Gemini CLI in a throwaway HOME: the --dry-run diff (golden,
// AWP_UPDATE_GOLDEN=1 rewrites it), a real merge that keeps every foreign
// entry, idempotence, and an uninstall that gives back the exact files.

import assert from "node:assert/strict";
import { AWP_MOD } from "../helpers/awp_cli.ts";

const FIXTURE = new URL("../fixtures/bootstrap/home/", import.meta.url)
  .pathname;
const GOLDEN = new URL(
  "../fixtures/bootstrap/dry_run_all.txt",
  import.meta.url,
);
const REPO = new URL("../../", import.meta.url).pathname.replace(/\/$/, "");
/** The dependency cache, so a fake HOME does not move it. */
const DENO_DIR = Deno.env.get("DENO_DIR") ??
  `${Deno.env.get("HOME")}/.cache/deno`;

async function copyTree(from: string, to: string): Promise<void> {
  await Deno.mkdir(to, { recursive: true });
  for await (const e of Deno.readDir(from)) {
    if (e.isDirectory) await copyTree(`${from}/${e.name}`, `${to}/${e.name}`);
    else await Deno.copyFile(`${from}/${e.name}`, `${to}/${e.name}`);
  }
}

/** Every file under `dir` (relative path → text). */
async function snapshot(dir: string, base = dir): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for await (const e of Deno.readDir(dir)) {
    const path = `${dir}/${e.name}`;
    if (e.isDirectory) {
      for (const [k, v] of await snapshot(path, base)) out.set(k, v);
    } else out.set(path.slice(base.length + 1), await Deno.readTextFile(path));
  }
  return out;
}

async function bootstrap(
  home: string,
  args: string[],
): Promise<{ code: number; stdout: string; stderr: string }> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--unstable-kv", AWP_MOD, "bootstrap", ...args],
    env: { HOME: home, DENO_DIR, NO_COLOR: "1" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  return {
    code: out.code,
    stdout: new TextDecoder().decode(out.stdout),
    stderr: new TextDecoder().decode(out.stderr),
  };
}

async function ok(home: string, args: string[]): Promise<string> {
  const r = await bootstrap(home, args);
  assert.equal(r.code, 0, `bootstrap ${args.join(" ")}: ${r.stderr}`);
  return r.stdout;
}

/** Machine-specific paths out, so the diff can be compared. */
function normalize(text: string): string {
  return text.replaceAll(Deno.execPath(), "DENO").replaceAll(
    `file://${REPO}`,
    "file://REPO",
  ).replaceAll(REPO, "REPO");
}

async function withHome(fn: (home: string) => Promise<void>): Promise<void> {
  const home = await Deno.makeTempDir({ prefix: "awp-bootstrap-" });
  try {
    await copyTree(FIXTURE, home);
    await fn(home);
  } finally {
    await Deno.remove(home, { recursive: true });
  }
}

Deno.test("bootstrap: --dry-run --all prints the merge as a diff and writes nothing", async () => {
  await withHome(async (home) => {
    const before = await snapshot(home);
    const out = normalize(await ok(home, ["--dry-run", "--all"]));
    if (Deno.env.get("AWP_UPDATE_GOLDEN") === "1") {
      await Deno.writeTextFile(GOLDEN, out);
    }
    assert.equal(out, await Deno.readTextFile(GOLDEN));
    assert.deepEqual(await snapshot(home), before);
  });
});

Deno.test("bootstrap: merges, is idempotent, and --uninstall gives the files back", async () => {
  await withHome(async (home) => {
    const original = await snapshot(home);
    const installed = await ok(home, ["--all"]);
    assert.match(installed, /claude: ~\/\.claude\.json updated/);
    assert.match(installed, /cursor: ~\/\.cursor\/hooks\.json created/);

    // Foreign entries stay; ours are there once.
    const claude = JSON.parse(await Deno.readTextFile(`${home}/.claude.json`));
    assert.equal(claude.numStartups, 3);
    assert.equal(claude.mcpServers.github.command, "github-mcp");
    assert.deepEqual(claude.mcpServers.awp.args.slice(-1), ["mcp"]);
    const settings = JSON.parse(
      await Deno.readTextFile(`${home}/.claude/settings.json`),
    );
    assert.equal(settings.model, "opus");
    assert.equal(settings.hooks.Stop.length, 2);
    assert.equal(
      settings.hooks.Stop[0].hooks[0].command,
      "notify-send 'Claude is done'",
    );
    assert.match(
      settings.hooks.Stop[1].hooks[0].command,
      /hook --format claude stop$/,
    );
    const toml = await Deno.readTextFile(`${home}/.codex/config.toml`);
    assert.ok(toml.startsWith(original.get(".codex/config.toml")!));
    assert.match(
      toml,
      /\[mcp_servers\.awp\]\ncommand = ".+"\nargs = \[.*"mcp"\]\ntool_timeout_sec = 660\n$/,
    );
    const cursor = JSON.parse(
      await Deno.readTextFile(`${home}/.cursor/hooks.json`),
    );
    assert.equal(cursor.version, 1);
    assert.match(cursor.hooks.stop[0].command, /hook --format cursor stop$/);
    assert.ok(
      (await Deno.readTextFile(`${home}/.cursor/mcp.json`)).startsWith(
        '{\n\t"mcpServers"',
      ),
      "the file's own indentation is kept",
    );
    const gemini = JSON.parse(
      await Deno.readTextFile(`${home}/.gemini/settings.json`),
    );
    assert.equal(gemini.theme, "Dracula");
    assert.equal(gemini.mcpServers.maps.command, "maps-mcp");
    // The old awp hook from another place was replaced, not doubled.
    assert.equal(gemini.hooks.AfterAgent.length, 1);
    assert.equal(gemini.hooks.AfterAgent[0].hooks.length, 1);
    assert.doesNotMatch(gemini.hooks.AfterAgent[0].hooks[0].command, /\/old\//);
    // Backups hold the files as they were.
    for (const [path, text] of original) {
      assert.equal(await Deno.readTextFile(`${home}/${path}.awp-backup`), text);
    }

    // The written hook command runs: no daemon in this HOME, so it prints nothing.
    const sessionStart = settings.hooks.SessionStart[0].hooks[0].command;
    const ran = await new Deno.Command("sh", {
      args: ["-c", sessionStart],
      env: { HOME: home, DENO_DIR },
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert.equal(ran.code, 0, new TextDecoder().decode(ran.stderr));
    assert.equal(new TextDecoder().decode(ran.stdout), "");

    // Again: nothing changes.
    const after = await snapshot(home);
    const again = await ok(home, ["--all"]);
    assert.doesNotMatch(again, /updated|created/);
    assert.equal(again.match(/unchanged/g)?.length, 7);
    assert.deepEqual(await snapshot(home), after);

    // Uninstall: byte for byte what was there; no backups, no files of ours.
    const removed = await ok(home, ["--all", "--uninstall"]);
    assert.match(removed, /restored/);
    assert.deepEqual(await snapshot(home), original);
  });
});

Deno.test("bootstrap: uninstall after the user edited a file removes only awp; bad input is refused", async () => {
  await withHome(async (home) => {
    await ok(home, ["--harness", "claude"]);
    const path = `${home}/.claude.json`;
    const edited = JSON.parse(await Deno.readTextFile(path));
    edited.theme = "light";
    await Deno.writeTextFile(path, JSON.stringify(edited, null, 2) + "\n");
    const out = await ok(home, ["--harness", "claude", "--uninstall"]);
    assert.match(out, /awp removed; the file changed since/);
    const now = JSON.parse(await Deno.readTextFile(path));
    assert.equal(now.theme, "light");
    assert.equal(now.mcpServers.awp, undefined);
    assert.equal(now.mcpServers.github.command, "github-mcp");
    // settings.json was not touched by the user: restored exactly.
    assert.equal(
      await Deno.readTextFile(`${home}/.claude/settings.json`),
      await Deno.readTextFile(`${FIXTURE}/.claude/settings.json`),
    );

    const list = await ok(home, ["--list"]);
    assert.match(list, /^claude +Claude Code +installed/m);

    const unknown = await bootstrap(home, ["--harness", "vim"]);
    assert.equal(unknown.code, 2);
    assert.match(unknown.stderr, /unknown harness "vim"/);

    // A file that is not JSON is left alone; the other harnesses still go in.
    await Deno.writeTextFile(`${home}/.cursor/mcp.json`, "{ not json");
    const broken = await bootstrap(home, ["--all"]);
    assert.equal(broken.code, 1);
    assert.match(broken.stderr, /cursor: .*mcp\.json is not valid JSON/);
    assert.equal(
      await Deno.readTextFile(`${home}/.cursor/mcp.json`),
      "{ not json",
    );
    assert.match(broken.stdout, /gemini: ~\/\.gemini\/settings\.json updated/);
  });
});
