/**
 * What `awp send` sends besides its words: `--code FILE` and `--data JSON`
 * parts, `--file` blobs (checked readable here, read by the daemon) and
 * `-` words read from stdin.
 *
 * @module
 */

import { type Args, UsageError } from "./args.ts";
import { ControlError } from "./control.ts";
import { errorText } from "../wire/error_text.ts";

/** A code part's language, by the file's extension. */
const LANGS: Record<string, string> = {
  ts: "typescript",
  js: "javascript",
  py: "python",
  go: "go",
  rs: "rust",
  sh: "sh",
  md: "markdown",
  json: "json",
  diff: "diff",
  patch: "diff",
  c: "c",
  h: "c",
  cpp: "cpp",
  java: "java",
  rb: "ruby",
  yml: "yaml",
  yaml: "yaml",
  toml: "toml",
  html: "html",
  css: "css",
};

/** What a send carries, from its flags. */
export interface SendParts {
  /** `code` and `data` parts. */
  parts: Record<string, unknown>[];
  /** Absolute paths of the files to send as blobs. */
  files: string[];
}

/**
 * The `code` and `data` parts and the files of a send, from `--code`,
 * `--lang`, `--data`, `--mime` and `--file`. A file that cannot be read
 * and bad JSON are one-line errors, before anything is sent.
 *
 * @example
 * ```ts
 * import { sendParts } from "./send_parts.ts";
 * import { parseArgs } from "./args.ts";
 * const args = parseArgs(["--data", "[1]"], [{ name: "data", type: "list" }]);
 * console.log((await sendParts(args)).parts); // [ { k: "data", data: [ 1 ], mime: "application/json" } ]
 * ```
 */
export async function sendParts(a: Args): Promise<SendParts> {
  const parts: Record<string, unknown>[] = [];
  for (const path of a.list("code")) {
    const ext = path.split(".").pop()?.toLowerCase() ?? "";
    const lang = a.string("lang") ?? LANGS[ext];
    parts.push({
      k: "code",
      text: await readFileText(path),
      ...(lang ? { lang } : {}),
    });
  }
  for (const json of a.list("data")) {
    let data: unknown;
    try {
      data = JSON.parse(json);
    } catch (error) {
      throw new UsageError(`bad --data JSON: ${errorText(error)}`);
    }
    parts.push({
      k: "data",
      data,
      mime: a.string("mime") ?? "application/json",
    });
  }
  const files: string[] = [];
  for (const f of a.list("file")) files.push(await checkReadable(f));
  return { parts, files };
}

/**
 * Replaces each `-` among `words` with stdin (read once, without its last
 * newline).
 *
 * @example
 * ```ts
 * import { wordsWithStdin } from "./send_parts.ts";
 * console.log(await wordsWithStdin(["hello"])); // [ "hello" ]
 * ```
 */
export async function wordsWithStdin(words: string[]): Promise<string[]> {
  if (!words.includes("-")) return words;
  const stdin = (await new Response(Deno.stdin.readable).text())
    .replace(/\n$/, "");
  return words.map((w) => w === "-" ? stdin : w);
}

async function readFileText(path: string): Promise<string> {
  try {
    return await Deno.readTextFile(path);
  } catch (error) {
    throw new ControlError(fileError(path, error));
  }
}

function fileError(path: string, error: unknown): string {
  if (error instanceof Deno.errors.NotFound) return `no such file: ${path}`;
  if (error instanceof Deno.errors.PermissionDenied) {
    return `permission denied: ${path}`;
  }
  if (error instanceof Deno.errors.IsADirectory) return `not a file: ${path}`;
  return `cannot read ${path}: ${errorText(error)}`;
}

/** The absolute path of a file that exists and can be read. */
async function checkReadable(path: string): Promise<string> {
  const abs = path.startsWith("/") ? path : `${Deno.cwd()}/${path}`;
  try {
    const info = await Deno.stat(abs);
    if (!info.isFile) throw new ControlError(`not a file: ${path}`);
    const f = await Deno.open(abs, { read: true });
    f.close();
  } catch (error) {
    if (error instanceof ControlError) throw error;
    throw new ControlError(fileError(path, error));
  }
  return abs;
}
