/**
 * The peer under test as a process in listen mode (`awp conform --run
 * CMD`): its command line split as a shell would, started with its output
 * traced, driven over stdin under the driver contract, and stopped.
 *
 * @module
 */

import { LineReader } from "../wire/line_reader.ts";
import { type DriverHandle, ScenarioFailure } from "./scenarios.ts";
import { ConformError } from "./conform_error.ts";
import { TRACE_CHARS, truncate } from "./line_text.ts";
import { errorText } from "../wire/error_text.ts";

const encoder = new TextEncoder();

/**
 * Splits a command line the way a shell would for simple quoting: blanks
 * separate words, '…' is literal, "…" allows \" \\ \$ \`, and a backslash
 * outside quotes escapes the next character. No expansion of any kind.
 *
 * @example
 * ```ts
 * import { splitCommand } from "./spawn_peer.ts";
 * console.log(splitCommand(`deno run -A 'my peer.ts' connect {addr}`));
 * // ["deno", "run", "-A", "my peer.ts", "connect", "{addr}"]
 * ```
 */
export function splitCommand(text: string): string[] {
  const words: string[] = [];
  let word = "";
  let inWord = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === "'") {
      const end = text.indexOf("'", i + 1);
      if (end < 0) throw new ConformError("unterminated ' in --run command");
      word += text.slice(i + 1, end);
      inWord = true;
      i = end;
    } else if (c === '"') {
      inWord = true;
      let j = i + 1;
      for (; j < text.length && text[j] !== '"'; j++) {
        if (
          text[j] === "\\" && j + 1 < text.length &&
          '"\\$`'.includes(text[j + 1])
        ) j++;
        word += text[j];
      }
      if (j >= text.length) {
        throw new ConformError('unterminated " in --run command');
      }
      i = j;
    } else if (c === "\\") {
      if (i + 1 < text.length) word += text[++i];
      inWord = true;
    } else if (/\s/.test(c)) {
      if (inWord) words.push(word);
      word = "";
      inWord = false;
    } else {
      word += c;
      inWord = true;
    }
  }
  if (inWord) words.push(word);
  return words;
}

/** The peer under test, started by the runner. */
export interface SpawnedPeer {
  child: Deno.ChildProcess;
  command: string;
  driver: DriverHandle | undefined;
  /** The last lines the command wrote on stderr, for error messages. */
  stderrTail: string[];
  exited: Promise<Deno.CommandStatus>;
  stop(): Promise<void>;
}

function pump(
  stream: ReadableStream<Uint8Array>,
  onLine: (line: string) => void,
): Promise<void> {
  const reader = new LineReader({ maxLineBytes: 64 * 1024 });
  const decoder = new TextDecoder();
  return (async () => {
    try {
      for await (const chunk of stream) {
        for (const e of reader.push(chunk)) {
          if (e.kind === "line") onLine(decoder.decode(e.bytes));
        }
      }
    } catch { /* the process went away */ }
  })();
}

/**
 * Starts `argv` (`command` is its text, for messages); with `driver` its
 * stdin carries driver commands.
 *
 * @example
 * ```ts ignore
 * import { spawnPeer } from "./spawn_peer.ts";
 * const peer = spawnPeer(["deno", "run", "-A", "peer.ts"], "deno run -A peer.ts", false);
 * await peer.stop();
 * ```
 */
export function spawnPeer(
  argv: string[],
  command: string,
  driver: boolean,
  trace?: (line: string) => void,
): SpawnedPeer {
  if (argv.length === 0) throw new ConformError("--run: empty command");
  let child: Deno.ChildProcess;
  try {
    child = new Deno.Command(argv[0], {
      args: argv.slice(1),
      stdin: driver ? "piped" : "null",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
  } catch (e) {
    const why = e instanceof Deno.errors.NotFound
      ? "command not found"
      : errorText(e);
    throw new ConformError(`--run: cannot start ${argv[0]}: ${why}`);
  }
  const stderrTail: string[] = [];
  const pumps = [
    pump(
      child.stdout,
      (line) => trace?.(`peer stdout: ${truncate(line, TRACE_CHARS)}`),
    ),
    pump(child.stderr, (line) => {
      trace?.(`peer stderr: ${truncate(line, TRACE_CHARS)}`);
      stderrTail.push(line);
      if (stderrTail.length > 5) stderrTail.shift();
    }),
  ];
  const writer = driver ? child.stdin.getWriter() : undefined;
  const exited = child.status;
  let stopped = false;
  return {
    child,
    command,
    stderrTail,
    exited,
    driver: writer
      ? {
        async command(cmd: Record<string, unknown>): Promise<void> {
          const text = JSON.stringify(cmd);
          trace?.(`peer stdin: ${text}`);
          try {
            await writer.write(encoder.encode(text + "\n"));
          } catch (e) {
            throw new ScenarioFailure(
              `could not write a driver command to the peer's stdin: ${
                errorText(e)
              }`,
            );
          }
        },
      }
      : undefined,
    async stop(): Promise<void> {
      if (stopped) return;
      stopped = true;
      try {
        await writer?.close();
      } catch { /* already gone */ }
      let timer: ReturnType<typeof setTimeout> | undefined;
      const done = await Promise.race([
        exited.then(() => true),
        new Promise<false>((resolve) => {
          try {
            child.kill("SIGTERM");
          } catch { /* already exited */ }
          timer = setTimeout(() => resolve(false), 3000);
        }),
      ]);
      clearTimeout(timer);
      if (!done) {
        try {
          child.kill("SIGKILL");
        } catch { /* already exited */ }
      }
      await exited;
      await Promise.all(pumps);
    },
  };
}
