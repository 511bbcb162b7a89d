/**
 * The bytes an `auth` signature covers (SPEC section 7).
 *
 * @module
 */

const LABEL = new TextEncoder().encode("awp-auth-v0");

/**
 * Builds `"awp-auth-v0" || 0x00 || myHello || 0x00 || peerHello`, where the
 * hellos are the exact lines as sent and received, without the newline.
 * Signing exact bytes (not re-serialized JSON) is what makes both sides
 * agree.
 *
 * @example
 * ```ts
 * import { authTranscript } from "./transcript.ts";
 * const enc = new TextEncoder();
 * const bytes = authTranscript(enc.encode('{"t":"hello"}'), enc.encode('{"t":"hello"}'));
 * console.log(bytes.length); // 11 + 1 + 13 + 1 + 13
 * ```
 */
export function authTranscript(
  myHello: Uint8Array,
  peerHello: Uint8Array,
): Uint8Array {
  const out = new Uint8Array(
    LABEL.length + 1 + myHello.length + 1 + peerHello.length,
  );
  out.set(LABEL, 0);
  // Uint8Array starts zeroed, so the two 0x00 separators are already there.
  out.set(myHello, LABEL.length + 1);
  out.set(peerHello, LABEL.length + 1 + myHello.length + 1);
  return out;
}
