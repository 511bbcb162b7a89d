/**
 * An agent that replies to every message, in the message's own thread,
 * with `echo: <text>` (its `re` pointing at the message).
 *
 * ```sh
 * deno run -A examples/echo_agent.ts                  # listens on tcp:127.0.0.1:7700
 * deno run -A examples/echo_agent.ts tcp:127.0.0.1:0  # any free port
 * ```
 *
 * It prints one JSON line `{"listening":ADDR,"key":KEY}` and then one line
 * per echoed message; Ctrl-C (or SIGTERM) says bye and stops. The store is
 * in memory: nothing survives a restart.
 *
 * @module
 */

import { Peer } from "../mod.ts";

const addr = Deno.args[0] ?? "tcp:127.0.0.1:7700";
const peer = await Peer.open({ memory: true, name: "echo-agent" });
const listening = await peer.listen(addr);
console.log(JSON.stringify({ listening, key: peer.key }));

const stop = () => void peer.close();
Deno.addSignalListener("SIGINT", stop);
Deno.addSignalListener("SIGTERM", stop);

// The event stream ends when the peer closes.
for await (const event of peer.events()) {
  if (event.type !== "message") continue;
  const reply = await peer.send(event.peer, `echo: ${event.text}`, {
    thread: event.th,
    re: event.id,
  });
  console.log(JSON.stringify({ echoed: event.id, reply: reply.id }));
}
