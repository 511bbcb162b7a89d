/**
 * A small agent in one file, meant to be compiled into one binary with
 * `deno compile` (see examples/README.md):
 *
 * ```sh
 * deno run -A examples/single_binary_agent.ts listen tcp:127.0.0.1:7800
 * deno run -A examples/single_binary_agent.ts ask tcp:127.0.0.1:7800 "what time is it?"
 * ```
 *
 * `listen` answers every message in its thread with a line naming itself
 * and the time; it prints `{"listening":ADDR,"key":KEY}` first and stops on
 * Ctrl-C or SIGTERM. `ask` connects, sends one message, prints the first
 * reply in that thread as `{"reply":TEXT,"from":KEY}`, says bye and exits
 * (1 if no reply came within 20 s). Both run with an in-memory store.
 *
 * @module
 */

import { Peer } from "../mod.ts";

const USAGE = "usage: single_binary_agent listen [ADDR] | ask ADDR TEXT";

async function listen(addr: string): Promise<number> {
  const peer = await Peer.open({ memory: true, name: "single-binary-agent" });
  console.log(
    JSON.stringify({ listening: await peer.listen(addr), key: peer.key }),
  );
  const stop = () => void peer.close();
  Deno.addSignalListener("SIGINT", stop);
  Deno.addSignalListener("SIGTERM", stop);
  for await (const event of peer.events()) {
    if (event.type !== "message") continue;
    await peer.send(
      event.peer,
      `single-binary-agent ${peer.key.slice(8, 16)} got "${event.text}" at ${
        new Date().toISOString()
      }`,
      { thread: event.th, re: event.id },
    );
  }
  return 0;
}

async function ask(addr: string, text: string): Promise<number> {
  const peer = await Peer.open({ memory: true, name: "single-binary-asker" });
  const events = peer.events();
  try {
    const key = await peer.connect(addr);
    const sent = await peer.send(key, text, { subject: text.slice(0, 60) });
    const timer = setTimeout(() => void peer.close(), 20_000);
    for await (const event of events) {
      if (event.type === "message" && event.th === sent.th) {
        clearTimeout(timer);
        console.log(JSON.stringify({ reply: event.text, from: event.peer }));
        await peer.bye(key, "done");
        return 0;
      }
    }
    console.error("single_binary_agent: no reply within 20 s");
    return 1;
  } finally {
    await peer.close();
  }
}

const [command, ...rest] = Deno.args;
if (command === "listen" && rest.length <= 1) {
  Deno.exit(await listen(rest[0] ?? "tcp:127.0.0.1:7800"));
} else if (command === "ask" && rest.length === 2) {
  Deno.exit(await ask(rest[0], rest[1]));
} else {
  console.error(USAGE);
  Deno.exit(2);
}
