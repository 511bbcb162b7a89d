/**
 * How `read`, `tail` and `wait` show a msg's code and data parts to a
 * person: profile requests and their results in words (an exec result's
 * exit code, stdout and stderr), other data by its type.
 *
 * @module
 */

import {
  EXEC_RESULT_MIME,
  FS_READ_RESULT_MIME,
  FS_WRITE_RESULT_MIME,
  REQUEST_MIMES,
} from "../profile/mimes.ts";

/** A part as it comes from the log: only what is shown is read. */
export interface ShownPart {
  k: string;
  lang?: string;
  mime?: string;
  data?: unknown;
}

/** Most lines of one output stream shown inline (the rest: `--json`). */
const MAX_LINES = 40;

function record(data: unknown): Record<string, unknown> {
  return typeof data === "object" && data !== null && !Array.isArray(data)
    ? data as Record<string, unknown>
    : {};
}

function indented(text: string, mark: string): string {
  const lines = text.replace(/\n$/, "").split("\n");
  const shown = lines.slice(0, MAX_LINES).map((l) => `\n    ${mark}${l}`);
  if (lines.length > MAX_LINES) {
    shown.push(
      `\n    ${mark}… ${lines.length - MAX_LINES} more lines (--json)`,
    );
  }
  return shown.join("");
}

/**
 * The lines (each starting with a newline) that show `part` under its msg,
 * or "" for parts shown elsewhere (text, blobs).
 *
 * @example
 * ```ts
 * import { renderPart } from "./render_part.ts";
 * const part = {
 *   k: "data",
 *   mime: "application/vnd.awp.exec-result+json",
 *   data: { exit: 0, duration_ms: 12, stdout: "hi\n", stderr: "" },
 * };
 * console.log(renderPart(part)); // "\n  exit 0 in 12 ms\n    hi"
 * ```
 */
export function renderPart(part: ShownPart): string {
  if (part.k === "code") return `\n  code${part.lang ? ` (${part.lang})` : ""}`;
  if (part.k !== "data") return "";
  const d = record(part.data);
  const mime = part.mime ?? "";
  if (mime === EXEC_RESULT_MIME) {
    if (typeof d.error === "string" && typeof d.exit !== "number") {
      return `\n  exec failed: ${d.error}`;
    }
    const head = `\n  exit ${String(d.exit)}${
      typeof d.duration_ms === "number" ? ` in ${d.duration_ms} ms` : ""
    }${d.timed_out === true ? " (timed out)" : ""}`;
    const out = typeof d.stdout === "string" && d.stdout !== ""
      ? indented(d.stdout, "")
      : "";
    const err = typeof d.stderr === "string" && d.stderr !== ""
      ? indented(d.stderr, "stderr: ")
      : "";
    return head + out + err;
  }
  if (mime === FS_READ_RESULT_MIME || mime === FS_WRITE_RESULT_MIME) {
    if (typeof d.error === "string") return `\n  failed: ${d.error}`;
    if (Array.isArray(d.entries)) {
      return `\n  ${String(d.path)}: ${d.entries.join("  ")}`;
    }
    if (typeof d.written === "number") {
      return `\n  wrote ${d.written} bytes to ${String(d.path)}`;
    }
    return `\n  ${String(d.path)} (${String(d.length ?? d.size)} bytes)`;
  }
  const cap = REQUEST_MIMES[mime];
  if (cap === "exec") {
    const cmd = Array.isArray(d.cmd) ? d.cmd.join(" ") : String(d.cmd);
    return `\n  exec: ${cmd}${d.cwd ? ` (in ${String(d.cwd)})` : ""}`;
  }
  if (cap) return `\n  ${cap}: ${String(d.path ?? "")}`;
  return `\n  data${mime ? ` (${mime})` : ""}`;
}
