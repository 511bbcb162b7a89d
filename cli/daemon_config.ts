/**
 * `${home}/config.json`, the file a person (or a harness installer) writes
 * to configure the daemon, read once at daemon start. Every field is
 * optional; an unknown field is ignored so newer files still load.
 *
 * @module
 */

import { isKey } from "../wire/keys.ts";
import { parseAddress } from "../wire/address.ts";
import { errorText } from "../wire/error_text.ts";

/** The fields of `${home}/config.json`. */
export interface DaemonFileConfig {
  name?: string;
  about?: string;
  listen?: string[];
  /** Publish a signed presence document. */
  presence?: boolean;
  /** Forward other agents' presence documents (default true). */
  relay?: boolean;
  trust?: string[];
  serve?: string[];
  root?: string;
}

/** `config.json` is not valid: the message is one line naming the field. */
export class DaemonConfigError extends Error {
  /**
   * @example
   * ```ts
   * import { DaemonConfigError } from "./daemon_config.ts";
   * console.log(new DaemonConfigError("x").name); // "DaemonConfigError"
   * ```
   */
  constructor(message: string) {
    super(message);
    this.name = "DaemonConfigError";
  }
}

function strings(
  path: string,
  field: string,
  value: unknown,
  check?: (s: string) => void,
): string[] {
  if (!Array.isArray(value) || value.some((v) => typeof v !== "string")) {
    throw new DaemonConfigError(
      `${path}: "${field}" must be a list of strings`,
    );
  }
  for (const v of value as string[]) check?.(v);
  return value as string[];
}

/**
 * Reads `${home}/config.json`; no file is an empty config. Throws
 * {@link DaemonConfigError} (one line) when it is not JSON or a field has
 * the wrong type.
 *
 * @example
 * ```ts
 * import { readDaemonConfig } from "./daemon_config.ts";
 * const home = await Deno.makeTempDir();
 * await Deno.writeTextFile(`${home}/config.json`, '{"presence": true}');
 * console.log(await readDaemonConfig(home)); // { presence: true }
 * await Deno.remove(home, { recursive: true });
 * ```
 */
export async function readDaemonConfig(
  home: string,
): Promise<DaemonFileConfig> {
  const path = `${home}/config.json`;
  let text: string;
  try {
    text = await Deno.readTextFile(path);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return {};
    throw new DaemonConfigError(
      `cannot read ${path}: ${errorText(error)}`,
    );
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    throw new DaemonConfigError(
      `${path} is not JSON: ${errorText(error)}`,
    );
  }
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
    throw new DaemonConfigError(`${path} must hold a JSON object`);
  }
  const r = raw as Record<string, unknown>;
  const out: DaemonFileConfig = {};
  for (const f of ["name", "about", "root"] as const) {
    if (r[f] === undefined) continue;
    if (typeof r[f] !== "string") {
      throw new DaemonConfigError(`${path}: "${f}" must be a string`);
    }
    out[f] = r[f] as string;
  }
  for (const f of ["presence", "relay"] as const) {
    if (r[f] === undefined) continue;
    if (typeof r[f] !== "boolean") {
      throw new DaemonConfigError(`${path}: "${f}" must be true or false`);
    }
    out[f] = r[f] as boolean;
  }
  if (r.listen !== undefined) {
    out.listen = strings(path, "listen", r.listen, (a) => {
      try {
        parseAddress(a);
      } catch (error) {
        throw new DaemonConfigError(
          `${path}: "listen": ${errorText(error)}`,
        );
      }
    });
  }
  if (r.trust !== undefined) {
    out.trust = strings(path, "trust", r.trust, (k) => {
      if (!isKey(k)) {
        throw new DaemonConfigError(
          `${path}: "trust": "${k}" is not an ed25519 key`,
        );
      }
    });
  }
  if (r.serve !== undefined) {
    // "exec,fs:read" as on the command line, or a list.
    const list = typeof r.serve === "string"
      ? r.serve.split(",").map((s) => s.trim()).filter(Boolean)
      : strings(path, "serve", r.serve);
    for (const c of list) {
      if (!["exec", "fs:read", "fs:write"].includes(c)) {
        throw new DaemonConfigError(
          `${path}: "serve": "${c}" is not exec, fs:read or fs:write`,
        );
      }
    }
    out.serve = list;
  }
  return out;
}

/**
 * `AWP_PRESENCE` from the environment: true for "1"/"true"/"yes", false for
 * "0"/"false"/"no", undefined when unset or empty.
 *
 * @example
 * ```ts
 * import { presenceFromEnv } from "./daemon_config.ts";
 * console.log(presenceFromEnv({ get: () => "1" })); // true
 * ```
 */
export function presenceFromEnv(
  env: { get(name: string): string | undefined } = Deno.env,
): boolean | undefined {
  const v = env.get("AWP_PRESENCE")?.trim().toLowerCase();
  if (v === undefined || v === "") return undefined;
  return !["0", "false", "no", "off"].includes(v);
}
