/**
 * A stand-in for the CLI driver, used by the benchmarks when `cli/driver.ts`
 * is not there (or with `--peer child`): a {@link Peer} driven over stdin
 * and stdout with the subset of the driver contract the workloads use.
 *
 * Commands (stdin): `{"cmd":"send","th","text"[,"peer"]}`,
 * `{"cmd":"blob","th","path"[,"text","peer"]}`, `{"cmd":"quit"}`.
 * Events (stdout): `identity`, `listening`, `connected`, `sent`, `acked`,
 * `blob`, `disconnected`, `error`. Commands are not awaited one by one:
 * sends run concurrently so the store can group-commit them, as a driver
 * fed "as fast as accepted" would.
 *
 * @example
 * ```sh
 * deno run -A --unstable-kv bench/peer_child.ts --state /tmp/a listen tcp:127.0.0.1:0
 * ```
 *
 * @module
 */

import { Peer } from "../peer/peer.ts";
import { LineReader } from "../wire/line_reader.ts";

function out(value: Record<string, unknown>): void {
  console.log(JSON.stringify(value));
}

function flag(name: string): string | undefined {
  const i = Deno.args.indexOf(`--${name}`);
  return i >= 0 ? Deno.args[i + 1] : undefined;
}

const state = flag("state");
const [mode, addr] = Deno.args.slice(-2);
if (!state || (mode !== "listen" && mode !== "connect") || !addr) {
  console.error(
    "usage: peer_child.ts --state DIR [--max-blob BYTES] listen|connect ADDR",
  );
  Deno.exit(2);
}
const maxBlob = flag("max-blob");
const peer = await Peer.open({
  home: state,
  maxBlobBytes: maxBlob ? Number(maxBlob) : undefined,
});
out({ event: "identity", key: peer.key });
let last: string | undefined;

void (async () => {
  for await (const e of peer.events()) {
    if (e.type === "connected") {
      last = e.peer;
      out({ event: "connected", key: e.peer, name: e.name });
    } else if (e.type === "acked") out({ event: "acked", id: e.id });
    else if (e.type === "blob" && e.dir === "in") {
      out({
        event: "blob",
        ref: e.ref,
        path: e.path,
        size: e.size,
        sha256: e.sha256,
        status: e.status,
      });
    } else if (e.type === "disconnected") {
      out({ event: "disconnected", key: e.peer, reason: e.reason });
    } else if (e.type === "error") {
      out({ event: "error", detail: JSON.stringify(e) });
    }
  }
})();

if (mode === "listen") {
  out({ event: "listening", addr: await peer.listen(addr), key: peer.key });
} else {
  last = await peer.connect(addr);
}

async function run(cmd: Record<string, unknown>): Promise<void> {
  const to = typeof cmd.peer === "string" ? cmd.peer : last;
  if (cmd.cmd === "quit") Deno.exit(0);
  if (!to) throw new Error("no peer connected yet");
  const th = String(cmd.th ?? "t1");
  if (cmd.cmd === "send") {
    const sent = await peer.send(to, String(cmd.text ?? ""), { thread: th });
    out({ event: "sent", id: sent.id, t: "msg" });
  } else if (cmd.cmd === "blob") {
    const sent = await peer.send(to, String(cmd.text ?? ""), {
      thread: th,
      files: [String(cmd.path)],
    });
    out({ event: "sent", id: sent.id, t: "msg" });
  } else throw new Error(`unknown command ${JSON.stringify(cmd.cmd)}`);
}

const reader = new LineReader();
const decoder = new TextDecoder();
for await (const chunk of Deno.stdin.readable) {
  for (const ev of reader.push(chunk)) {
    if (ev.kind !== "line") continue;
    let cmd: Record<string, unknown>;
    try {
      cmd = JSON.parse(decoder.decode(ev.bytes));
    } catch {
      out({ event: "error", detail: "bad command line: not JSON" });
      continue;
    }
    run(cmd).catch((e) =>
      out({
        event: "error",
        detail: e instanceof Error ? e.message : String(e),
      })
    );
  }
}
// Closing stdin does not stop the peer (driver contract); quit or a signal does.
await new Promise(() => {});
