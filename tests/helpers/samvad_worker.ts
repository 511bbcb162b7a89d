/**
 * The AWP side of the SAMVAD tests: skills and a worker peer that answers
 * the threads a bridge opens (subject = skill): "echo" says the text back
 * after a text chunk, "bad-output" replies outside the outputSchema, "fail"
 * sets the thread failed, "hold" says working and replies once released.
 */
import type { Peer } from "../../mod.ts";
import type { PeerEvent } from "../../peer/peer_events.ts";

export const ECHO = {
  id: "echo",
  name: "Echo",
  description: "Says the text back",
  inputSchema: {
    type: "object",
    properties: { text: { type: "string", maxLength: 100 } },
    required: ["text"],
  },
  outputSchema: {
    type: "object",
    properties: { text: { type: "string" } },
    required: ["text"],
  },
};

export const SKILLS = [
  ECHO,
  { ...ECHO, id: "bad-output", name: "Bad output" },
  { ...ECHO, id: "fail", name: "Fails" },
  { ...ECHO, id: "hold", name: "Holds", modes: ["async" as const] },
];

/** Answers threads the bridges open, by subject, until `events` ends. */
export async function runWorker(
  w: Peer,
  events: AsyncIterableIterator<PeerEvent>,
  /** "hold" says working, then replies once this resolves. */
  hold: Promise<void> = Promise.resolve(),
) {
  for await (const e of events) {
    if (e.type !== "message" || !e.th.startsWith("samvad_")) continue;
    const data = e.parts.find((p) => p.k === "data");
    if (!data || data.k !== "data" || data.mime !== "application/json") {
      continue;
    }
    const payload = data.data as { text: string };
    if (e.subject === "fail") {
      await w.setState(e.peer, e.th, "failed", "boom");
      continue;
    }
    if (e.subject === "hold") {
      await w.setState(e.peer, e.th, "working");
      void hold.then(() =>
        w.send(e.peer, "released", {
          thread: e.th,
          parts: [{ k: "data", mime: "application/json", data: payload }],
        })
      );
      continue;
    }
    await w.setState(e.peer, e.th, "working");
    await w.send(e.peer, `echoing ${payload.text}`, { thread: e.th });
    const reply = e.subject === "bad-output"
      ? { wrong: 1 }
      : { text: payload.text };
    await w.send(e.peer, "here", {
      thread: e.th,
      re: e.id,
      parts: [{ k: "data", mime: "application/json", data: reply }],
    });
    await w.setState(e.peer, e.th, "done");
  }
}
