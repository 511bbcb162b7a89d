/**
 * RFC 9421 HTTP Message Signatures as SAMVAD v1.2 uses them: Ed25519 over
 * `@method`, `@path` and `content-digest` (RFC 9530 sha-256).
 *
 * Written here rather than taken from a library because SAMVAD's signature
 * base differs from RFC 9421 section 2.5: every line ends with `\n`,
 * including the final `"@signature-params"` line. SAMVAD's published test
 * vectors verify only that way (see tests/samvad/samvad_vectors_test.ts).
 *
 * @module
 */

import { decodeBase64, encodeBase64 } from "../wire/base64.ts";
import { verify } from "../wire/keys.ts";

/** The three headers that carry a SAMVAD request signature. */
export interface SignatureHeaders {
  "content-digest": string;
  "signature-input": string;
  signature: string;
}

/** Signs bytes with an Ed25519 private key (the peer's identity). */
export type SignBytes = (data: Uint8Array) => Promise<Uint8Array>;

/** The components SAMVAD signs, as Signature-Input lists them. */
export const COVERED_COMPONENTS = '("@method" "@path" "content-digest")';

const encoder = new TextEncoder();

/**
 * The `Content-Digest` value of a body: `sha-256=:BASE64:`.
 *
 * @example
 * ```ts
 * import { contentDigest } from "./http_signature.ts";
 * console.log(await contentDigest(new Uint8Array())); // sha-256=:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=:
 * ```
 */
export async function contentDigest(body: Uint8Array): Promise<string> {
  const hash = await crypto.subtle.digest("SHA-256", new Uint8Array(body));
  return `sha-256=:${encodeBase64(new Uint8Array(hash))}:`;
}

/**
 * The `@signature-params` value (what follows `sig1=` in Signature-Input).
 *
 * @example
 * ```ts
 * import { signatureParams } from "./http_signature.ts";
 * console.log(signatureParams("k1", 1)); // ("@method" "@path" "content-digest");keyid="k1";alg="ed25519";created=1
 * ```
 */
export function signatureParams(keyid: string, created: number): string {
  if (/["\\]/.test(keyid)) throw new TypeError(`bad keyid ${keyid}`);
  return `${COVERED_COMPONENTS};keyid="${keyid}";alg="ed25519";created=${created}`;
}

/**
 * The signature base SAMVAD signs: one `"name": value` line per component
 * and the `"@signature-params"` line, each ending with a newline (the last
 * one too, as SAMVAD's vectors require; RFC 9421 has none there).
 *
 * @example
 * ```ts
 * import { signatureBase } from "./http_signature.ts";
 * const base = signatureBase("post", "/agent/message", "sha-256=:x:", "()");
 * console.log(base.endsWith('"@signature-params": ()\n')); // true
 * ```
 */
export function signatureBase(
  method: string,
  path: string,
  digest: string,
  params: string,
): string {
  return `"@method": ${method.toUpperCase()}\n` +
    `"@path": ${path}\n` +
    `"content-digest": ${digest}\n` +
    `"@signature-params": ${params}\n`;
}

/** The parsed `sig1` member of a Signature-Input header. */
export interface ParsedSignatureInput {
  /** Everything after `sig1=`, signed verbatim. */
  params: string;
  keyid: string;
  created?: number;
  alg?: string;
}

/**
 * Parses `sig1=("@method" "@path" "content-digest");keyid="…";…`; undefined
 * when it is not that shape (other components or labels are not SAMVAD's).
 *
 * @example
 * ```ts
 * import { parseSignatureInput } from "./http_signature.ts";
 * const p = parseSignatureInput('sig1=("@method" "@path" "content-digest");keyid="k";alg="ed25519";created=5');
 * console.log(p?.keyid, p?.created); // k 5
 * ```
 */
export function parseSignatureInput(
  header: string,
): ParsedSignatureInput | undefined {
  const m = /^sig1=(.+)$/.exec(header.trim());
  if (!m || !m[1].startsWith(COVERED_COMPONENTS)) return undefined;
  const params = m[1];
  const fields = new Map<string, string>();
  for (const piece of params.slice(COVERED_COMPONENTS.length).split(";")) {
    if (piece === "") continue;
    const eq = piece.indexOf("=");
    if (eq <= 0) return undefined;
    fields.set(piece.slice(0, eq), piece.slice(eq + 1).replace(/^"|"$/g, ""));
  }
  const keyid = fields.get("keyid");
  if (!keyid) return undefined;
  const created = fields.has("created")
    ? Number(fields.get("created"))
    : undefined;
  if (created !== undefined && !Number.isInteger(created)) return undefined;
  return {
    params,
    keyid,
    ...(created !== undefined ? { created } : {}),
    ...(fields.has("alg") ? { alg: fields.get("alg") } : {}),
  };
}

/**
 * Signs a request: the three headers to send with `body` to `path`.
 *
 * @example
 * ```ts
 * import { signRequest, verifyRequest } from "./http_signature.ts";
 * import { Signer } from "../wire/keys.ts";
 * const s = await Signer.generate();
 * const body = new TextEncoder().encode("{}");
 * const headers = await signRequest((d) => s.sign(d), "k1", "POST", "/agent/message", body);
 * console.log(await verifyRequest("POST", "/agent/message", body, headers, s.publicKey)); // true
 * ```
 */
export async function signRequest(
  sign: SignBytes,
  keyid: string,
  method: string,
  path: string,
  body: Uint8Array,
  created: number = Math.floor(Date.now() / 1000),
): Promise<SignatureHeaders> {
  const digest = await contentDigest(body);
  const params = signatureParams(keyid, created);
  const signature = await sign(
    encoder.encode(signatureBase(method, path, digest, params)),
  );
  return {
    "content-digest": digest,
    "signature-input": `sig1=${params}`,
    signature: `sig1=:${encodeBase64(signature)}:`,
  };
}

/**
 * Verifies the headers against the raw body and an Ed25519 public key: the
 * digest must match the body and the signature the rebuilt base. Never
 * throws; anything malformed is false.
 *
 * @example
 * ```ts
 * import { verifyRequest } from "./http_signature.ts";
 * const h = { "content-digest": "x", "signature-input": "y", signature: "z" };
 * console.log(await verifyRequest("POST", "/", new Uint8Array(), h, new Uint8Array(32))); // false
 * ```
 */
export async function verifyRequest(
  method: string,
  path: string,
  body: Uint8Array,
  headers: SignatureHeaders,
  publicKey: Uint8Array,
): Promise<boolean> {
  try {
    if (headers["content-digest"] !== await contentDigest(body)) return false;
    const input = parseSignatureInput(headers["signature-input"]);
    if (!input || (input.alg !== undefined && input.alg !== "ed25519")) {
      return false;
    }
    const sig = /^sig1=:([^:]+):$/.exec(headers.signature.trim());
    if (!sig) return false;
    const base = signatureBase(
      method,
      path,
      headers["content-digest"],
      input.params,
    );
    return await verify(publicKey, encoder.encode(base), decodeBase64(sig[1]));
  } catch {
    return false;
  }
}

/**
 * Reads the three signature headers from a `Headers`; undefined when one
 * is missing.
 *
 * @example
 * ```ts
 * import { signatureHeadersOf } from "./http_signature.ts";
 * console.log(signatureHeadersOf(new Headers())); // undefined
 * ```
 */
export function signatureHeadersOf(
  headers: Headers,
): SignatureHeaders | undefined {
  const digest = headers.get("content-digest");
  const input = headers.get("signature-input");
  const signature = headers.get("signature");
  if (!digest || !input || !signature) return undefined;
  return {
    "content-digest": digest,
    "signature-input": input,
    signature,
  };
}
