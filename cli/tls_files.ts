/**
 * `--ca`, `--cert` and `--key` of the WebSocket binding: PEM files read
 * into the `caCerts` and `tls` options of a Peer (daemon, driver, conform).
 *
 * @module
 */

import { errorText } from "../wire/error_text.ts";

/** The PEM texts, shaped as the Peer's options. */
export interface TlsTexts {
  /** Extra CA certificates trusted when dialing wss. */
  caCerts?: string[];
  /** Certificate chain and key of wss listeners. */
  tls?: { cert: string; key: string };
}

/**
 * Reads the files; throws an Error of one line naming the flag and the file
 * (`--ca /x.pem: No such file...`). `cert` and `key` go together.
 *
 * @example
 * ```ts
 * import { readTlsFiles } from "./tls_files.ts";
 * console.log(await readTlsFiles({})); // {}
 * ```
 */
export async function readTlsFiles(
  files: { ca?: string[]; cert?: string; key?: string },
): Promise<TlsTexts> {
  if (!files.cert !== !files.key) {
    throw new Error("--cert and --key go together (wss:// listeners)");
  }
  const read = async (flag: string, path: string) => {
    try {
      return await Deno.readTextFile(path);
    } catch (error) {
      throw new Error(`--${flag} ${path}: ${errorText(error)}`);
    }
  };
  const out: TlsTexts = {};
  if (files.ca?.length) {
    out.caCerts = await Promise.all(files.ca.map((f) => read("ca", f)));
  }
  if (files.cert && files.key) {
    out.tls = {
      cert: await read("cert", files.cert),
      key: await read("key", files.key),
    };
  }
  return out;
}
