/**
 * Edits a coding agent's configuration, keeping everything that is not
 * ours: an MCP server entry in a JSON object or a TOML table, and hook
 * commands in the event → groups → hooks layout (Claude Code, Codex,
 * Gemini CLI) or the event → hooks layout (Cursor). Our hooks are the
 * commands that run `hook --format NAME EVENT`.
 *
 * @module
 */

import { errorText } from "../wire/error_text.ts";

/** A JSON object as read from a config file. */
export type JsonObject = Record<string, unknown>;

/** One hook to install: the harness event it runs on and the command. */
export interface HookSpec {
  /** The harness's event name (SessionStart, PostToolUse, stop ...). */
  event: string;
  /** The hook entry itself (command, type, timeout ...). */
  entry: JsonObject;
  /** A matcher for the group (grouped layout only). */
  matcher?: string;
}

const OUR_HOOK =
  /\bhook --format (claude|codex|gemini|cursor|text) (session-start|inbox|stop)\b/;

/**
 * True when a hook entry is one of ours (whatever path it runs from).
 *
 * @example
 * ```ts
 * import { isOurHook } from "./config_edit.ts";
 * console.log(isOurHook({ command: "'/bin/awp' hook --format claude stop" })); // true
 * ```
 */
export function isOurHook(entry: unknown): boolean {
  return typeof entry === "object" && entry !== null &&
    typeof (entry as JsonObject).command === "string" &&
    OUR_HOOK.test((entry as JsonObject).command as string);
}

function ourKind(entry: unknown): string | undefined {
  if (!isOurHook(entry)) return undefined;
  return OUR_HOOK.exec((entry as JsonObject).command as string)![2];
}

function isObject(v: unknown): v is JsonObject {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** Parses a config file's JSON object; a one-line error names the file. */
export function parseJsonObject(
  text: string | undefined,
  path: string,
): JsonObject {
  if (text === undefined || text.trim() === "") return {};
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new Error(
      `${path} is not valid JSON (${errorText(error)}); left unchanged`,
    );
  }
  if (!isObject(value)) {
    throw new Error(`${path} does not hold a JSON object; left unchanged`);
  }
  return value;
}

/** Serializes like the file was: its indentation (two spaces by default), a final newline. */
export function formatJson(value: JsonObject, like?: string): string {
  const indent = like?.match(/^\{\s*\n([ \t]+)"/)?.[1] ?? "  ";
  return JSON.stringify(value, null, indent) + "\n";
}

/**
 * Sets `obj[section][name] = entry`, creating the section.
 *
 * @example
 * ```ts
 * import { setEntry } from "./config_edit.ts";
 * const cfg = { mcpServers: { other: {} } };
 * setEntry(cfg, "mcpServers", "awp", { command: "awp" });
 * console.log(Object.keys(cfg.mcpServers)); // ["other", "awp"]
 * ```
 */
export function setEntry(
  obj: JsonObject,
  section: string,
  name: string,
  entry: JsonObject,
): void {
  const table = isObject(obj[section]) ? obj[section] as JsonObject : {};
  table[name] = entry;
  obj[section] = table;
}

/** Removes `obj[section][name]`, and the section when that leaves it empty. */
export function removeEntry(
  obj: JsonObject,
  section: string,
  name: string,
): void {
  const table = obj[section];
  if (!isObject(table)) return;
  delete table[name];
  if (Object.keys(table).length === 0) delete obj[section];
}

/**
 * Adds our hooks to `obj.hooks` (or `obj[key]`), replacing an older copy of
 * each in place. `grouped`: events hold `[{matcher?, hooks: [entry]}]`
 * (Claude Code, Codex, Gemini CLI); otherwise `[entry]` (Cursor).
 *
 * @example
 * ```ts
 * import { addHooks } from "./config_edit.ts";
 * const cfg = {};
 * addHooks(cfg, [{ event: "Stop", entry: { type: "command", command: "awp hook --format claude stop" } }], true);
 * console.log(JSON.stringify(cfg)); // {"hooks":{"Stop":[{"hooks":[{"type":"command","command":"awp hook --format claude stop"}]}]}}
 * ```
 */
export function addHooks(
  obj: JsonObject,
  hooks: HookSpec[],
  grouped: boolean,
): void {
  const table = isObject(obj.hooks) ? obj.hooks : {};
  for (const spec of hooks) {
    const list = Array.isArray(table[spec.event])
      ? table[spec.event] as unknown[]
      : [];
    const kind = ourKind(spec.entry);
    let placed = false;
    for (const item of list) {
      if (grouped && isObject(item) && Array.isArray(item.hooks)) {
        const i = item.hooks.findIndex((h) => ourKind(h) === kind);
        if (i >= 0) {
          item.hooks[i] = spec.entry;
          placed = true;
          break;
        }
      }
    }
    if (!grouped) {
      const i = list.findIndex((h) => ourKind(h) === kind);
      if (i >= 0) {
        list[i] = spec.entry;
        placed = true;
      }
    }
    if (!placed) {
      list.push(
        grouped
          ? {
            ...(spec.matcher !== undefined ? { matcher: spec.matcher } : {}),
            hooks: [spec.entry],
          }
          : spec.entry,
      );
    }
    table[spec.event] = list;
  }
  obj.hooks = table;
}

/** Removes every hook of ours, and the groups, events and table it leaves empty. */
export function removeHooks(obj: JsonObject): void {
  const table = obj.hooks;
  if (!isObject(table)) return;
  for (const [event, list] of Object.entries(table)) {
    if (!Array.isArray(list)) continue;
    const kept = list.flatMap((item) => {
      if (isOurHook(item)) return [];
      if (isObject(item) && Array.isArray(item.hooks)) {
        const hooks = item.hooks.filter((h) => !isOurHook(h));
        if (hooks.length === 0 && item.hooks.length > 0) return [];
        return [{ ...item, hooks }];
      }
      return [item];
    });
    if (kept.length === 0) delete table[event];
    else table[event] = kept;
  }
  if (Object.keys(table).length === 0) delete obj.hooks;
}

/** A TOML basic string (JSON's escapes are TOML's, for the BMP). */
function tomlString(s: string): string {
  return JSON.stringify(s);
}

/** The header of table `name` or one of its sub-tables, e.g. `[mcp_servers.awp]`. */
function isTableHeader(line: string, table: string): boolean {
  const m = line.match(/^\s*\[([^\[\]]+)\]\s*(#.*)?$/);
  if (!m) return false;
  const name = m[1].replace(/\s+/g, "").replace(/"([^"]*)"/g, "$1");
  return name === table || name.startsWith(`${table}.`);
}

/**
 * Removes TOML table `table` (and its sub-tables) from `text`, keeping
 * every other line as it is.
 *
 * @example
 * ```ts
 * import { removeTomlTable } from "./config_edit.ts";
 * console.log(removeTomlTable('a = 1\n[mcp_servers.awp]\ncommand = "x"\n[other]\nb = 2\n', "mcp_servers.awp"));
 * // a = 1
 * // [other]
 * // b = 2
 * ```
 */
export function removeTomlTable(text: string, table: string): string {
  const out: string[] = [];
  let inside = false;
  let removed: string[] = [];
  // Comments just above the next table belong to it, not to ours.
  const keepTrailingComments = () => {
    let i = removed.length;
    while (i > 0 && /^\s*(#.*)?$/.test(removed[i - 1])) i--;
    while (i < removed.length && removed[i].trim() === "") i++;
    out.push(...removed.slice(i));
    removed = [];
  };
  for (const line of text.split("\n")) {
    if (/^\s*\[/.test(line)) {
      const ours = isTableHeader(line, table);
      if (inside && !ours) keepTrailingComments();
      inside = ours;
    }
    if (inside) removed.push(line);
    else out.push(line);
  }
  if (inside) keepTrailingComments();
  const result = out.join("\n");
  // Drop the blank lines our table leaves at the end.
  return result.trim() === "" ? "" : result.replace(/\n*$/, "\n");
}

/**
 * Sets TOML table `table` to `values` (strings, string arrays, numbers), in
 * place of any earlier copy, at the end of the file.
 *
 * @example
 * ```ts
 * import { setTomlTable } from "./config_edit.ts";
 * console.log(setTomlTable("", "mcp_servers.awp", { command: "awp", args: ["mcp"] }));
 * // [mcp_servers.awp]
 * // command = "awp"
 * // args = ["mcp"]
 * ```
 */
export function setTomlTable(
  text: string,
  table: string,
  values: Record<string, string | string[] | number>,
): string {
  const rest = removeTomlTable(text, table);
  const body = Object.entries(values).map(([k, v]) =>
    `${k} = ${
      Array.isArray(v)
        ? `[${v.map(tomlString).join(", ")}]`
        : typeof v === "number"
        ? String(v)
        : tomlString(v)
    }`
  );
  const block = [`[${table}]`, ...body].join("\n") + "\n";
  return rest === "" ? block : `${rest}\n${block}`;
}
