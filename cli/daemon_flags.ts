/**
 * The daemon's flags, shared by `awp daemon` (which runs it) and `awp up`
 * (which starts it in the background and passes them through), checked
 * the same way in both so a mistake is one line before anything starts.
 *
 * @module
 */

import {
  BOUND_FLAG_SPECS,
  boundFlagArgv,
  type BoundValues,
  parseBoundFlags,
} from "./bound_flags.ts";
import { type Args, type FlagSpec, UsageError } from "./args.ts";
import { isKey } from "../wire/key_text.ts";
import { addressArg } from "./address_arg.ts";
import { errorText } from "../wire/error_text.ts";

/**
 * Flags of the daemon. `up` takes all of them but `--log`.
 *
 * @example
 * ```ts
 * import { DAEMON_FLAGS } from "./daemon_flags.ts";
 * console.log(DAEMON_FLAGS.some((f) => f.name === "no-relay")); // true
 * ```
 */
export const DAEMON_FLAGS: readonly FlagSpec[] = [
  { name: "name", type: "string" },
  { name: "about", type: "string" },
  { name: "listen", type: "list" },
  { name: "max-blob", type: "string" },
  { name: "log", type: "string" },
  { name: "inspect", type: "optional" },
  { name: "allow-host", type: "list" },
  { name: "trust", type: "list" },
  { name: "accept", type: "string" },
  { name: "allow", type: "list" },
  { name: "serve", type: "string" },
  { name: "root", type: "string" },
  { name: "exec-env-pass", type: "string" },
  ...BOUND_FLAG_SPECS,
  { name: "presence", type: "boolean" },
  { name: "no-relay", type: "boolean" },
  { name: "store", type: "string" },
  { name: "samvad-listen", type: "string" },
  { name: "samvad-skills", type: "string" },
  { name: "samvad-to", type: "string" },
  { name: "samvad-http-loopback", type: "boolean" },
  { name: "web", type: "optional" },
  { name: "web-write", type: "boolean" },
  { name: "ca", type: "list" },
  { name: "advertise", type: "string" },
  { name: "cert", type: "string" },
  { name: "key", type: "string" },
];

/**
 * What the flags, the environment and `${home}/config.json` can set, as the
 * `--help` of `daemon` and `up` explains it.
 *
 * @example
 * ```ts
 * import { DAEMON_CONFIG_HELP } from "./daemon_flags.ts";
 * console.log(DAEMON_CONFIG_HELP.includes("config.json")); // true
 * ```
 */
export const DAEMON_CONFIG_HELP = [
  "",
  "--presence         publish a signed presence document (also AWP_PRESENCE=1, or",
  '                   "presence": true in config.json); --no-relay stops forwarding',
  "                   other agents' documents",
  "--store URL        keep the state in a remote Deno KV through KV Connect",
  "                   (https://...; the token is DENO_KV_ACCESS_TOKEN); spool and",
  "                   received blobs stay in the home",
  "--trust/--allow    ed25519 keys; --accept any|allowlist; --serve exec,fs:read,fs:write",
  "--root DIR         what fs requests are confined to (required for fs:*; the home",
  "                   is never served); exec gets PATH, HOME, LANG, TERM only, plus",
  "                   --exec-env-pass NAME,... (exec is not a sandbox)",
  'bounds (README "Limits"): --max-connections N, --max-unauthenticated N,',
  "  --max-unauthenticated-per-host N, --handshake-timeout S, --max-log-bytes B,",
  "  --max-unfinished-blob-bytes B, --max-unfinished-blob-total B,",
  "  --unfinished-blob-ttl S, --max-unsent B (unwritten bytes per connection,",
  "  default 8 MiB), --max-serving N (profile requests served at once, default 8)",
  "--web[=HOST:PORT]  serve the dashboard (default 127.0.0.1:7788); --web-write lets",
  "                   the page send, set states and grant",
  "--cert/--key FILE  TLS certificate chain and key (PEM) for wss:// listeners;",
  "--ca FILE          a CA certificate (PEM) trusted when dialing wss:// besides",
  "                   the system store (repeatable)",
  "--advertise ADDR   the address peers should dial back (hello.addr), e.g. the",
  "                   public wss:// URL of a proxy in front of a ws:// listener",
  "",
  "config.json in the home (HOME_DIR/config.json, where HOME_DIR is --home, $AWP_HOME",
  "or ~/.awp; read at daemon start; flags and the environment win over it, and it",
  "wins over what earlier flags remembered):",
  '  {"name": "builder", "about": "ports the middleware",',
  '   "listen": ["tcp:127.0.0.1:7000"], "presence": true, "relay": true,',
  '   "trust": ["ed25519:..."], "serve": ["fs:read"], "root": "/srv/work"}',
  "--name, --about and --listen are remembered for later starts.",
  "--samvad-listen HOST:PORT --samvad-skills FILE [--samvad-to PEER] [--samvad-http-loopback]",
  "                   also serve the SAMVAD bridge (see awp help samvad)",
].join("\n");

/** The daemon flags, checked. */
export interface DaemonFlagValues {
  name?: string;
  about?: string;
  listen: string[];
  maxBlobBytes?: number;
  log?: string;
  /** "" for 127.0.0.1 on a free port, `HOST:PORT`; absent: off. */
  inspect?: string;
  allowHosts: string[];
  trust: string[];
  accept?: "any" | "allowlist";
  allow: string[];
  serve: string[];
  /** Absolute. */
  root?: string;
  /** Environment variable names exec passes on (`--exec-env-pass`). */
  execEnvPass?: string[];
  /** Bounds on what remotes can make us hold (`--max-connections` ...). */
  bounds?: BoundValues;
  presence: boolean;
  /** False under `--no-relay`. */
  relay?: false;
  store?: string;
  /** Serve the SAMVAD bridge too (`--samvad-listen`, `--samvad-skills`). */
  samvad?: SamvadFlagValues;
  /** The dashboard: "" for 127.0.0.1:7788 (or the next free port), `HOST:PORT`; absent: off. */
  web?: string;
  /** The dashboard may write. */
  webWrite?: true;
  /** WebSocket binding: CA files trusted for wss (absolute). */
  ca?: string[];
  /** hello.addr instead of the first listener's address. */
  advertise?: string;
  /** WebSocket binding: TLS certificate and key files for wss (absolute). */
  cert?: string;
  key?: string;
}

/** The `--samvad-*` flags: the bridge the daemon serves from its start. */
export interface SamvadFlagValues {
  listen: string;
  /** Absolute. */
  skills: string;
  to?: string;
  httpLoopback?: boolean;
}

function samvadFlags(args: Args): SamvadFlagValues | undefined {
  const listen = args.string("samvad-listen");
  const skills = args.string("samvad-skills");
  if (listen === undefined && skills === undefined) return undefined;
  if (!listen || !skills) {
    throw new UsageError("--samvad-listen and --samvad-skills go together");
  }
  const to = args.string("samvad-to");
  return {
    listen,
    skills: absolute(skills),
    ...(to ? { to } : {}),
    ...(args.bool("samvad-http-loopback") ? { httpLoopback: true } : {}),
  };
}

/**
 * Checks a KV Connect URL: http(s) with a host. Throws {@link UsageError}.
 *
 * @example
 * ```ts
 * import { checkStoreUrl } from "./daemon_flags.ts";
 * console.log(checkStoreUrl("https://api.deno.com/databases/x/connect")); // the same URL
 * ```
 */
export function checkStoreUrl(text: string): string {
  let url: URL | undefined;
  try {
    url = new URL(text);
  } catch { /* reported below */ }
  if (!url || !/^https?:$/.test(url.protocol) || url.hostname === "") {
    throw new UsageError(
      `bad --store "${text}": give a KV Connect URL (https://HOST/...)`,
    );
  }
  return text;
}

/**
 * Capabilities `--serve` takes, from "exec,fs:read" (spaces allowed).
 *
 * @example
 * ```ts
 * import { parseServeList } from "./daemon_flags.ts";
 * console.log(parseServeList("exec, fs:read")); // [ "exec", "fs:read" ]
 * ```
 */
export function parseServeList(text: string): string[] {
  const caps = text.split(",").map((s) => s.trim()).filter(Boolean);
  for (const cap of caps) {
    if (!["exec", "fs:read", "fs:write"].includes(cap)) {
      throw new UsageError(`bad --serve "${cap}": use exec, fs:read, fs:write`);
    }
  }
  return caps;
}

function keys(flag: string, values: string[]): string[] {
  for (const k of values) {
    if (!isKey(k)) {
      throw new UsageError(`bad --${flag} "${k}": give an ed25519:... key`);
    }
  }
  return values;
}

function absolute(path: string): string {
  return path.startsWith("/") ? path : `${Deno.cwd()}/${path}`;
}

/**
 * Reads and checks the daemon flags in `args`; throws {@link UsageError}
 * with one line on the first bad one.
 *
 * @example
 * ```ts
 * import { parseArgs } from "./args.ts";
 * import { DAEMON_FLAGS, daemonFlagValues } from "./daemon_flags.ts";
 * const v = daemonFlagValues(parseArgs(["--presence", "--no-relay"], DAEMON_FLAGS));
 * console.log(v.presence, v.relay); // true false
 * ```
 */
export function daemonFlagValues(args: Args): DaemonFlagValues {
  let maxBlobBytes: number | undefined;
  const mb = args.string("max-blob");
  if (mb !== undefined) {
    maxBlobBytes = Number(mb);
    if (!Number.isSafeInteger(maxBlobBytes) || maxBlobBytes < 0) {
      throw new UsageError(`bad --max-blob "${mb}": give bytes`);
    }
  }
  const accept = args.string("accept");
  if (accept !== undefined && accept !== "any" && accept !== "allowlist") {
    throw new UsageError(`bad --accept "${accept}": use any or allowlist`);
  }
  const checked = (flag: string, addr: string): string => {
    try {
      return addressArg(addr, true);
    } catch (error) {
      throw new UsageError(
        `bad --${flag}: ${errorText(error)}`,
      );
    }
  };
  const listen = args.list("listen").map((addr) => checked("listen", addr));
  const given = args.string("advertise");
  const advertise = given === undefined
    ? undefined
    : checked("advertise", given);
  const store = args.string("store");
  if (store !== undefined) checkStoreUrl(store);
  const root = args.string("root");
  if (root === "") throw new UsageError("--root needs a directory");
  const cert = args.string("cert");
  const key = args.string("key");
  if (!cert !== !key) {
    throw new UsageError("--cert and --key go together (wss:// listeners)");
  }
  const bounds = parseBoundFlags(args);
  const envPass = (args.string("exec-env-pass") ?? "").split(",")
    .map((n) => n.trim()).filter(Boolean);
  for (const name of envPass) {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) {
      throw new UsageError(
        `bad --exec-env-pass "${name}": give variable names, comma-separated`,
      );
    }
  }
  return {
    ...(args.string("name") !== undefined ? { name: args.string("name") } : {}),
    ...(args.string("about") !== undefined
      ? { about: args.string("about") }
      : {}),
    listen,
    ...(maxBlobBytes !== undefined ? { maxBlobBytes } : {}),
    ...(args.string("log") ? { log: args.string("log") } : {}),
    ...(args.has("inspect") ? { inspect: args.string("inspect") ?? "" } : {}),
    allowHosts: args.list("allow-host"),
    trust: keys("trust", args.list("trust")),
    ...(accept ? { accept } : {}),
    allow: keys("allow", args.list("allow")),
    serve: parseServeList(args.string("serve") ?? ""),
    ...(root ? { root: absolute(root) } : {}),
    ...(envPass.length ? { execEnvPass: envPass } : {}),
    ...(Object.keys(bounds).length ? { bounds } : {}),
    presence: args.bool("presence"),
    ...(args.bool("no-relay") ? { relay: false as const } : {}),
    ...(store ? { store } : {}),
    ...(samvadFlags(args) ? { samvad: samvadFlags(args) } : {}),
    ...(args.has("web") ? { web: args.string("web") ?? "" } : {}),
    ...(args.bool("web-write") ? { webWrite: true as const } : {}),
    ca: args.list("ca").map(absolute),
    ...(advertise ? { advertise } : {}),
    ...(cert && key ? { cert: absolute(cert), key: absolute(key) } : {}),
  };
}

/**
 * The checked values as daemon arguments again (what `up` passes on).
 *
 * @example
 * ```ts
 * import { daemonFlagArgv } from "./daemon_flags.ts";
 * console.log(daemonFlagArgv({ listen: [], allowHosts: [], trust: [], allow: [], serve: ["exec"], presence: true }));
 * // [ "--serve", "exec", "--presence" ]
 * ```
 */
export function daemonFlagArgv(v: DaemonFlagValues): string[] {
  const out: string[] = [];
  if (v.name !== undefined) out.push("--name", v.name);
  if (v.about !== undefined) out.push("--about", v.about);
  for (const l of v.listen) out.push("--listen", l);
  if (v.maxBlobBytes !== undefined) {
    out.push("--max-blob", String(v.maxBlobBytes));
  }
  if (v.inspect !== undefined) {
    out.push(v.inspect ? `--inspect=${v.inspect}` : "--inspect");
  }
  for (const h of v.allowHosts) out.push("--allow-host", h);
  for (const k of v.trust) out.push("--trust", k);
  if (v.accept) out.push("--accept", v.accept);
  for (const k of v.allow) out.push("--allow", k);
  if (v.serve.length) out.push("--serve", v.serve.join(","));
  if (v.root) out.push("--root", v.root);
  if (v.execEnvPass?.length) {
    out.push("--exec-env-pass", v.execEnvPass.join(","));
  }
  out.push(...boundFlagArgv(v.bounds));
  if (v.presence) out.push("--presence");
  if (v.relay === false) out.push("--no-relay");
  if (v.store) out.push("--store", v.store);
  if (v.samvad) {
    out.push("--samvad-listen", v.samvad.listen);
    out.push("--samvad-skills", v.samvad.skills);
    if (v.samvad.to) out.push("--samvad-to", v.samvad.to);
    if (v.samvad.httpLoopback) out.push("--samvad-http-loopback");
  }
  if (v.web !== undefined) out.push(v.web ? `--web=${v.web}` : "--web");
  if (v.webWrite) out.push("--web-write");
  for (const f of v.ca ?? []) out.push("--ca", f);
  if (v.advertise) out.push("--advertise", v.advertise);
  if (v.cert && v.key) out.push("--cert", v.cert, "--key", v.key);
  return out;
}
