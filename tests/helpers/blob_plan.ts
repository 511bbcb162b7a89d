/**
 * A crash test's plan of one message carrying one big random file: writes
 * the file and `plan.json` (for `tests/fixtures/crash_peer.ts --plan`) into
 * a folder and says what the received bytes must hash to.
 *
 * @module
 */

import { randomBytes } from "./random_bytes.ts";
import { sha256Hex } from "./sha256_hex.ts";

/**
 * Writes `${dir}/big.bin` (`size` random bytes) and `${dir}/plan.json` (one
 * msg, tag "big", thread "thr_big", text `text`, with that file); resolves
 * with the file's SHA-256 in hex.
 *
 * @example
 * ```ts
 * import { writeBlobPlan } from "./blob_plan.ts";
 * const dir = await Deno.makeTempDir();
 * const want = await writeBlobPlan(dir, 10, "ten bytes");
 * console.log(want.length); // 64
 * await Deno.remove(dir, { recursive: true });
 * ```
 */
export async function writeBlobPlan(
  dir: string,
  size: number,
  text: string,
): Promise<string> {
  const bytes = randomBytes(size);
  await Deno.writeFile(`${dir}/big.bin`, bytes);
  await Deno.writeTextFile(
    `${dir}/plan.json`,
    JSON.stringify([{
      tag: "big",
      th: "thr_big",
      text,
      files: [`${dir}/big.bin`],
    }]),
  );
  return sha256Hex(bytes);
}
