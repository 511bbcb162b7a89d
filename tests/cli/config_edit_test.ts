// The config edits behind `awp bootstrap`: TOML tables replaced and removed
// as text (comments and other tables untouched), hooks merged into both
// layouts and taken out again.

import assert from "node:assert/strict";
import {
  addHooks,
  formatJson,
  isOurHook,
  type JsonObject,
  parseJsonObject,
  removeHooks,
  removeTomlTable,
  setTomlTable,
} from "../../cli/config_edit.ts";

const TOML = `# top comment
model = "o3"

[mcp_servers."awp"]
command = "/old/awp"
args = ["mcp"]

[mcp_servers.awp.env]
X = "1"

# keep me
[mcp_servers.other]
command = "other" # inline comment
`;

Deno.test("config_edit: a TOML table is replaced and removed, sub-tables and quoted names included", () => {
  const set = setTomlTable(TOML, "mcp_servers.awp", {
    command: "/new/awp",
    args: ["mcp", "--home", "/h"],
    tool_timeout_sec: 660,
  });
  assert.equal(
    set,
    `# top comment
model = "o3"

# keep me
[mcp_servers.other]
command = "other" # inline comment

[mcp_servers.awp]
command = "/new/awp"
args = ["mcp", "--home", "/h"]
tool_timeout_sec = 660
`,
  );
  // Idempotent.
  assert.equal(
    setTomlTable(set, "mcp_servers.awp", {
      command: "/new/awp",
      args: ["mcp", "--home", "/h"],
      tool_timeout_sec: 660,
    }),
    set,
  );
  // A table that only starts with the same name is someone else's.
  const similar = '[mcp_servers.awpx]\ncommand = "x"\n';
  assert.equal(removeTomlTable(similar, "mcp_servers.awp"), similar);
  // Removing the only table leaves an empty file.
  assert.equal(removeTomlTable(setTomlTable("", "a.b", { k: "v" }), "a.b"), "");
  // Strings are escaped for TOML.
  assert.match(
    setTomlTable("", "t", { command: 'C:\\awp "x"' }),
    /command = "C:\\\\awp \\"x\\""/,
  );
});

Deno.test("config_edit: hooks merge in both layouts, replace our older copy, and come out again", () => {
  const ours = (kind: string) => ({
    type: "command",
    command: `/bin/awp hook --format claude ${kind}`,
  });
  const cfg: JsonObject = {
    hooks: {
      Stop: [
        { hooks: [{ type: "command", command: "notify-send done" }] },
        {
          hooks: [{
            type: "command",
            command: "/old/awp hook --format claude stop",
          }],
        },
      ],
    },
  };
  addHooks(cfg, [
    { event: "Stop", entry: ours("stop") },
    { event: "SessionStart", entry: ours("session-start") },
  ], true);
  const hooks = cfg.hooks as Record<string, Array<{ hooks: JsonObject[] }>>;
  assert.equal(hooks.Stop.length, 2);
  assert.equal(hooks.Stop[1].hooks[0].command, ours("stop").command);
  assert.equal(
    hooks.SessionStart[0].hooks[0].command,
    ours("session-start").command,
  );
  removeHooks(cfg);
  assert.deepEqual(cfg, {
    hooks: {
      Stop: [{ hooks: [{ type: "command", command: "notify-send done" }] }],
    },
  });

  const flat: JsonObject = { version: 1 };
  addHooks(flat, [{
    event: "stop",
    entry: { command: "awp hook --format cursor stop" },
  }], false);
  addHooks(flat, [{
    event: "stop",
    entry: { command: "awp2 hook --format cursor stop" },
  }], false);
  assert.deepEqual(flat, {
    version: 1,
    hooks: { stop: [{ command: "awp2 hook --format cursor stop" }] },
  });
  removeHooks(flat);
  assert.deepEqual(flat, { version: 1 });

  assert.equal(isOurHook({ command: "awp hook --format text inbox" }), true);
  assert.equal(isOurHook({ command: "git hook --format pretty" }), false);
});

Deno.test("config_edit: JSON keeps its indentation; what is not a JSON object is refused in one line", () => {
  assert.equal(formatJson({ a: 1 }, '{\n\t"a": 0\n}\n'), '{\n\t"a": 1\n}\n');
  assert.equal(formatJson({ a: 1 }), '{\n  "a": 1\n}\n');
  assert.deepEqual(parseJsonObject(undefined, "x.json"), {});
  assert.throws(
    () => parseJsonObject("{ nope", "/h/x.json"),
    /^Error: \/h\/x\.json is not valid JSON \(.*\); left unchanged$/,
  );
  assert.throws(
    () => parseJsonObject("[1]", "/h/x.json"),
    /does not hold a JSON object/,
  );
});
