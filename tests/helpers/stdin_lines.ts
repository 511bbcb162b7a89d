/**
 * Command lines on a fixture program's stdin.
 *
 * @module
 */

/**
 * Yields each non-empty line of `readable` (default: stdin), trimmed, until
 * it closes. The next chunk is read only once the consumer asks again, so
 * commands run in order.
 *
 * @example
 * ```ts
 * import { stdinLines } from "./stdin_lines.ts";
 * const input = ReadableStream.from([new TextEncoder().encode(" a\n\nb\n")]);
 * const got: string[] = [];
 * for await (const line of stdinLines(input)) got.push(line);
 * if (got.join() !== "a,b") throw new Error(got.join());
 * ```
 */
export async function* stdinLines(
  readable: ReadableStream<Uint8Array> = Deno.stdin.readable,
): AsyncGenerator<string> {
  const decoder = new TextDecoder();
  let buffered = "";
  for await (const chunk of readable) {
    buffered += decoder.decode(chunk, { stream: true });
    let nl: number;
    while ((nl = buffered.indexOf("\n")) >= 0) {
      const line = buffered.slice(0, nl).trim();
      buffered = buffered.slice(nl + 1);
      if (!line) continue;
      yield line;
    }
  }
}
