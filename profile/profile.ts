/**
 * The coding-agent profile (PROFILE.md): finds capability requests in a
 * received msg, checks them against the sender's capabilities, and serves
 * the ones this peer is configured to serve (`--serve exec,fs:read,fs:write`,
 * off by default).
 *
 * Per request part:
 * - without the capability: `forbidden`. The msg is acked as usual; the
 *   Peer then sends `err forbidden` with `re` = the msg id. Nothing runs.
 * - with it, but not served here: `deliver`. The msg goes to the agent
 *   marked allowed (forbidden ones are delivered marked denied).
 * - with it and served: `result`, a reply msg body (`th`, `re`, `parts`)
 *   plus files to attach as blobs. A request that fails still gets a
 *   result, with `{"error": ...}`.
 *
 * @module
 */

import type { Part } from "../wire/types.ts";
import { runExec } from "./exec_runner.ts";
import { type Attachment, fsRead, fsWrite } from "./fs_access.ts";
import { type ProfileCap, REQUEST_MIMES, RESULT_MIMES } from "./mimes.ts";
import { errorText } from "../wire/error_text.ts";

export type { Attachment, ProfileCap };
export { REQUEST_MIMES };

/** Capabilities this implementation can serve by itself.
 *
 * @example
 * ```ts
 * import { SERVABLE_CAPS } from "./profile.ts";
 * console.log(SERVABLE_CAPS.includes("exec")); // true
 * ```
 */
export const SERVABLE_CAPS: readonly ProfileCap[] = [
  "exec",
  "fs:read",
  "fs:write",
];

/**
 * Parses a `--serve` value ("exec,fs:read"); empty means nothing. Throws a
 * TypeError with one line on an unknown capability.
 *
 * @example
 * ```ts
 * import { parseServe } from "./profile.ts";
 * console.log([...parseServe("exec, fs:read")]); // ["exec", "fs:read"]
 * ```
 */
export function parseServe(text: string | undefined): Set<ProfileCap> {
  const out = new Set<ProfileCap>();
  for (const item of (text ?? "").split(",")) {
    const cap = item.trim();
    if (cap === "") continue;
    if (!(SERVABLE_CAPS as readonly string[]).includes(cap)) {
      throw new TypeError(
        `--serve: unknown capability ${JSON.stringify(cap)} (use ${
          SERVABLE_CAPS.join(", ")
        })`,
      );
    }
    out.add(cap as ProfileCap);
  }
  return out;
}

/** A request part found in a msg, classified against the sender's caps. */
export interface ProfileRequest {
  /** Index of the data part in `parts`. */
  part: number;
  mime: string;
  cap: ProfileCap;
  /** The part's `data`. */
  data: unknown;
  /** The sender holds the capability. */
  allowed: boolean;
  /** Allowed, and this peer serves the capability itself. */
  served: boolean;
}

/** What the Peer needs of a received msg. */
export interface RequestMsg {
  id: string;
  th: string;
  parts: unknown;
}

/** The err line to send (after the ack) for a forbidden request. */
export interface ForbiddenErr {
  code: "forbidden";
  re: string;
  detail: string;
}

/** A reply to send in the request's thread. */
export interface ResultReply {
  th: string;
  /** The request msg's id. */
  re: string;
  parts: Part[];
}

/** One served request, for the log. */
export interface ServeRecord {
  /** ms since the epoch, when serving started. */
  at: number;
  /** The requester, when the caller says. */
  peer?: string;
  /** The request msg id. */
  re: string;
  /** The capability the request used. */
  cap: ProfileCap;
  /** The request data, abbreviated to 200 characters of JSON. */
  request: string;
  /** True when it succeeded. */
  ok: boolean;
  /** Why it failed. */
  error?: string;
  /** How long it took, in ms. */
  duration_ms: number;
}

/** The outcome for one request part. */
export type RequestOutcome =
  | { kind: "forbidden"; request: ProfileRequest; err: ForbiddenErr }
  | { kind: "deliver"; request: ProfileRequest; allowed: true }
  | {
    kind: "result";
    request: ProfileRequest;
    reply: ResultReply;
    /** Files to send as blobs with the reply (remove temporary ones after). */
    attachments: Attachment[];
    log: ServeRecord;
  };

/** Context of {@linkcode handleRequest} and {@linkcode serveRequest}. */
export interface ProfileContext {
  /** The sender's capabilities (from {@linkcode GrantPolicy.capsOf}). */
  caps: ReadonlySet<string>;
  /** Capabilities served here (`--serve`). */
  serve: ReadonlySet<string>;
  /** The served root (`--root`). */
  root: string;
  /** Directories never served, whatever the root (the awp home). */
  protect?: readonly string[];
  /** Environment variables exec passes on beyond the minimal set. */
  execEnvPass?: readonly string[];
  /** The requester's key, for the log. */
  peer?: string;
  /** Where output/range files go (a temp dir if unset). */
  spoolDir?: string;
  /** Exec timeout override in ms (tests). */
  execTimeoutMs?: number;
  /** Kills running commands when aborted (peer shutdown). */
  signal?: AbortSignal;
  /** Called for every served request. */
  log?(record: ServeRecord): void;
}

/**
 * True when `msg` has a part asking for a profile capability (no matter
 * whether the sender holds it or we serve it).
 *
 * @example
 * ```ts
 * import { hasRequests } from "./profile.ts";
 * const run = { k: "data", mime: "application/vnd.awp.exec+json", data: {} };
 * console.log(hasRequests({ parts: [run] }), hasRequests({ parts: [] })); // true false
 * ```
 */
export function hasRequests(msg: unknown): boolean {
  return isRecord(msg) && Array.isArray(msg.parts) &&
    msg.parts.some((p) => requestCap(p) !== undefined);
}

/** The capability a part asks for, if it is a request part. */
function requestCap(part: unknown): ProfileCap | undefined {
  if (!isRecord(part) || part.k !== "data" || typeof part.mime !== "string") {
    return undefined;
  }
  return REQUEST_MIMES[part.mime.trim().toLowerCase()];
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

/**
 * Finds the request parts of a msg and classifies them. A msg without any
 * gives `[]`. Mime types are compared case-insensitively. Never throws.
 *
 * @example
 * ```ts
 * import { findRequests } from "./profile.ts";
 * const msg = { id: "1", th: "t", parts: [{ k: "data", mime: "application/vnd.awp.exec+json", data: { cmd: "ls" } }] };
 * console.log(findRequests(msg, { caps: new Set(), serve: new Set() })[0].allowed); // false
 * ```
 */
export function findRequests(
  msg: unknown,
  context: Pick<ProfileContext, "caps" | "serve">,
): ProfileRequest[] {
  if (!isRecord(msg) || !Array.isArray(msg.parts)) return [];
  const out: ProfileRequest[] = [];
  msg.parts.forEach((p: unknown, i: number) => {
    const cap = requestCap(p);
    if (cap === undefined || !isRecord(p)) return;
    const mime = (p.mime as string).trim().toLowerCase();
    const allowed = context.caps.has(cap);
    out.push({
      part: i,
      mime,
      cap,
      data: p.data,
      allowed,
      served: allowed && context.serve.has(cap) &&
        (SERVABLE_CAPS as readonly string[]).includes(cap),
    });
  });
  return out;
}

function abbreviate(value: unknown): string {
  let text: string;
  try {
    text = JSON.stringify(value) ?? "null";
  } catch {
    text = String(value);
  }
  return text.length > 200 ? `${text.slice(0, 199)}…` : text;
}

/**
 * Serves one allowed request (the caller checked `served`). Never throws:
 * failures become a result with `{"error": ...}`. Calls `context.log`.
 *
 * @example
 * ```ts
 * import { findRequests, serveRequest } from "./profile.ts";
 * const root = await Deno.makeTempDir();
 * const msg = { id: "m1", th: "t1", parts: [{ k: "data", mime: "application/vnd.awp.fs-write+json", data: { path: "a.txt", content: "hi" } }] };
 * const ctx = { caps: new Set(["fs:write"]), serve: new Set(["fs:write"]), root };
 * const out = await serveRequest(msg, findRequests(msg, ctx)[0], ctx);
 * console.log(out.reply.parts[0]); // { k: "text", text: "wrote 2 bytes to a.txt" }
 * ```
 */
export async function serveRequest(
  msg: RequestMsg,
  request: ProfileRequest,
  context: ProfileContext,
): Promise<Extract<RequestOutcome, { kind: "result" }>> {
  const at = Date.now();
  const started = performance.now();
  let summary: string;
  let data: Record<string, unknown>;
  let attachments: Attachment[] = [];
  try {
    switch (request.cap) {
      case "exec": {
        const o = await runExec(request.data, {
          root: context.root,
          spoolDir: context.spoolDir,
          envPass: context.execEnvPass,
          timeoutMs: context.execTimeoutMs,
          signal: context.signal,
        });
        ({ summary, attachments } = o);
        data = { ...o.result };
        break;
      }
      case "fs:read": {
        const o = await fsRead(context.root, request.data, {
          spoolDir: context.spoolDir,
          protect: context.protect,
        });
        ({ summary, attachments } = o);
        data = o.result;
        break;
      }
      case "fs:write": {
        const o = await fsWrite(context.root, request.data, {
          protect: context.protect,
        });
        ({ summary, attachments } = o);
        data = o.result;
        break;
      }
      default:
        summary = `${request.cap} failed: not served here`;
        data = { error: "not served here" };
    }
  } catch (e) {
    // The handlers do not throw; this guards the one-result-per-request rule.
    const message = errorText(e);
    summary = `${request.cap} failed: ${message}`;
    data = { error: message };
  }
  const error = typeof data.error === "string" ? data.error : undefined;
  const log: ServeRecord = {
    at,
    ...(context.peer !== undefined ? { peer: context.peer } : {}),
    re: msg.id,
    cap: request.cap,
    request: abbreviate(request.data),
    ok: error === undefined,
    ...(error !== undefined ? { error } : {}),
    duration_ms: Math.round(performance.now() - started),
  };
  try {
    context.log?.(log);
  } catch { /* logging must not lose the reply */ }
  return {
    kind: "result",
    request,
    reply: {
      th: msg.th,
      re: msg.id,
      parts: [
        { k: "text", text: summary },
        {
          k: "data",
          mime: RESULT_MIMES[request.cap] ?? "application/json",
          data,
        },
      ],
    },
    attachments,
    log,
  };
}

/**
 * The result of a served request that was running when the serving process
 * died (it is not run again: it may have half happened). Its `error` says
 * so; the requester gets it exactly once.
 *
 * @example
 * ```ts
 * import { interruptedReply } from "./profile.ts";
 * const reply = interruptedReply({ th: "t1", re: "m1", cap: "exec" });
 * console.log((reply.parts[1] as { data: { error: string } }).data.error.startsWith("interrupted")); // true
 * ```
 */
export function interruptedReply(
  request: { th: string; re: string; cap: string },
): ResultReply {
  const error =
    "interrupted: the serving peer stopped while it ran (it was not run again; it may have partly happened)";
  return {
    th: request.th,
    re: request.re,
    parts: [
      { k: "text", text: `${request.cap} failed: ${error}` },
      {
        k: "data",
        mime: RESULT_MIMES[request.cap] ?? "application/json",
        data: { error },
      },
    ],
  };
}

/**
 * Handles the profile requests of a received msg: `[]` when it carries
 * none, else one outcome per request part, in part order (served requests
 * run concurrently). Never throws.
 *
 * @example
 * ```ts
 * import { handleRequest } from "./profile.ts";
 * const msg = { id: "m1", th: "t1", parts: [{ k: "data", mime: "application/vnd.awp.exec+json", data: { cmd: "ls" } }] };
 * const [out] = await handleRequest(msg, { caps: new Set(), serve: new Set(["exec"]), root: "." });
 * console.log(out.kind); // "forbidden"
 * ```
 */
export async function handleRequest(
  msg: RequestMsg,
  context: ProfileContext,
): Promise<RequestOutcome[]> {
  const requests = findRequests(msg, context);
  return await Promise.all(requests.map((request): Promise<RequestOutcome> => {
    if (!request.allowed) {
      return Promise.resolve({
        kind: "forbidden",
        request,
        err: {
          code: "forbidden",
          re: msg.id,
          detail:
            `${request.mime} requires a grant for capability "${request.cap}"`,
        },
      });
    }
    if (!request.served) {
      return Promise.resolve({ kind: "deliver", request, allowed: true });
    }
    return serveRequest(msg, request, context);
  }));
}
