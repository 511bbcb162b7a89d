/**
 * A runnable demo of the inspector: a small stand-in actor system (a
 * supervisor, connection-like actors going hello → auth → resume → open,
 * thread-like and blob-like children) served with the inspector.
 *
 * Run it with `deno run -A inspector/demo.ts [port]` and open the URL it
 * prints. The machines here are stand-ins for the demo and tests only; the
 * runtime's real actors are inspected the same way.
 *
 * @module
 */

import {
  type AnyActorRef,
  assign,
  createActor,
  emit,
  sendTo,
  setup,
  spawnChild,
} from "npm:xstate@^5.33.3";
import { InspectionHub } from "./inspection_hub.ts";
import { type InspectorServer, serveInspector } from "./server.ts";

/** A running demo. */
export interface Demo {
  /** The hub every demo actor is registered with. */
  hub: InspectionHub;
  /** The inspector's web server. */
  server: InspectorServer;
  /** The page to open in a browser. */
  url: string;
  /** Session ids of the demo's actors, by role. */
  ids: { supervisor: string; connections: Record<string, string> };
  /** Stops every actor and the server. */
  stop(): Promise<void>;
}

/** Options for {@link startDemo}. */
export interface DemoOptions {
  /** Interface to listen on; 127.0.0.1 by default. */
  hostname?: string;
  /** Port to listen on; 0 (any free port) by default. */
  port?: number;
  /** Base delay in ms between demo steps. Default 150. */
  step?: number;
}

const blob = setup({
  types: {
    context: {} as { bytes: number; total: number; chunk: number },
    input: {} as { total: number; chunk: number },
    emitted: {} as { type: "progress"; bytes: number; total: number },
  },
  delays: { tick: ({ context }) => 80 + (context.chunk % 3) * 10 },
  guards: { finished: ({ context }) => context.bytes >= context.total },
  actions: {
    advance: assign({
      bytes: ({ context }) =>
        Math.min(context.total, context.bytes + context.chunk),
    }),
    report: emit(({ context }) => ({
      type: "progress" as const,
      bytes: context.bytes,
      total: context.total,
    })),
  },
}).createMachine({
  id: "blob",
  context: ({ input }) => ({
    bytes: 0,
    total: input.total,
    chunk: input.chunk,
  }),
  initial: "sending",
  states: {
    sending: {
      always: { guard: "finished", target: "done" },
      after: {
        tick: {
          target: "sending",
          reenter: true,
          actions: ["advance", "report"],
        },
      },
    },
    done: { type: "final" },
  },
});

const thread = setup({
  types: {
    context: {} as { th: string; received: number },
    input: {} as { th: string },
    events: {} as { type: "msg"; body: string } | {
      type: "state";
      state: string;
    },
  },
  delays: { ack: 120 },
  actions: {
    count: assign({ received: ({ context }) => context.received + 1 }),
  },
}).createMachine({
  id: "thread",
  context: ({ input }) => ({ th: input.th, received: 0 }),
  initial: "waiting",
  states: {
    waiting: { on: { msg: { target: "working", actions: "count" } } },
    working: {
      on: { msg: { actions: "count" }, state: "waiting" },
      after: { ack: "waiting" },
    },
  },
});

const connection = setup({
  types: {
    context: {} as {
      peer: string;
      sent: number;
      step: number;
      blobTotal: number;
    },
    input: {} as { peer: string; step: number; blobTotal: number },
    events: {} as { type: "bye" } | { type: "ping" } | { type: "pong" },
  },
  actors: { thread, blob },
  delays: {
    handshake: ({ context }) => context.step,
    chatter: ({ context }) => context.step * 3,
    linger: ({ context }) => context.step * 2,
  },
  actions: {
    startThreads: spawnChild("thread", {
      id: "thread-1",
      input: ({ context }) => ({ th: `th-${context.peer}-1` }),
    }),
    startBlob: spawnChild("blob", {
      id: "blob-1",
      input: ({ context }) => ({ total: context.blobTotal, chunk: 4096 }),
    }),
    sendMsg: sendTo("thread-1", ({ context }) => ({
      type: "msg" as const,
      body: `hello #${context.sent + 1} from ${context.peer}`,
    })),
    countSent: assign({ sent: ({ context }) => context.sent + 1 }),
  },
}).createMachine({
  id: "connection",
  context: ({ input }) => ({
    peer: input.peer,
    sent: 0,
    step: input.step,
    blobTotal: input.blobTotal,
  }),
  initial: "hello",
  on: { bye: ".closing" },
  states: {
    hello: { after: { handshake: "auth" } },
    auth: { after: { handshake: "resume" } },
    resume: { after: { handshake: "open" } },
    open: {
      entry: ["startThreads", "startBlob"],
      initial: "quiet",
      states: {
        quiet: { after: { chatter: "chatty" }, on: { ping: "chatty" } },
        chatty: {
          entry: ["sendMsg", "countSent"],
          after: { chatter: "quiet" },
          on: { pong: "quiet" },
        },
      },
    },
    closing: { after: { linger: "closed" } },
    closed: { type: "final" },
  },
});

const supervisor = setup({
  types: { events: {} as { type: "dial"; peer: string } },
}).createMachine({
  id: "supervisor",
  initial: "running",
  states: { running: { on: { dial: {} } }, stopped: { type: "final" } },
});

/**
 * Starts the demo system and its inspector server.
 *
 * @example
 * ```ts
 * import { startDemo } from "./demo.ts";
 * const demo = await startDemo();
 * console.log(demo.url);
 * await demo.stop();
 * ```
 */
export async function startDemo(options: DemoOptions = {}): Promise<Demo> {
  const step = options.step ?? 150;
  const hub = new InspectionHub();
  const actors: AnyActorRef[] = [];
  const timers: Array<ReturnType<typeof setTimeout>> = [];

  const sup = createActor(supervisor, { inspect: hub.observer });
  hub.register(sup, { kind: "supervisor", label: "supervisor" });
  sup.start();
  actors.push(sup);

  const connections: Record<string, string> = {};
  for (
    const [peer, blobTotal] of [["bob", 2048 * 1024], [
      "carol",
      64 * 1024,
    ]] as const
  ) {
    // Connections are separate actors (as in the runtime), so they are
    // registered under the supervisor by hand.
    const conn = createActor(connection, {
      inspect: hub.observer,
      input: { peer, step, blobTotal },
    });
    hub.register(conn, {
      kind: "connection",
      label: `peer ${peer}`,
      parentId: sup.sessionId,
    });
    conn.start();
    sup.send({ type: "dial", peer });
    actors.push(conn);
    connections[peer] = conn.sessionId;
  }
  // carol says bye after a while, so the tree also shows a closed connection.
  timers.push(setTimeout(() => {
    const carol = actors.find((a) => a.sessionId === connections.carol);
    carol?.send({ type: "bye" });
  }, step * 20));

  const server = await serveInspector(hub, {
    hostname: options.hostname,
    port: options.port,
  });
  return {
    hub,
    server,
    url: server.url,
    ids: { supervisor: sup.sessionId, connections },
    async stop() {
      for (const t of timers) clearTimeout(t);
      for (const a of actors) a.stop();
      await server.close();
    },
  };
}

if (import.meta.main) {
  const port = Deno.args[0] ? Number(Deno.args[0]) : 0;
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    console.error(`demo: port must be an integer 0-65535, got ${Deno.args[0]}`);
    Deno.exit(2);
  }
  const demo = await startDemo({ port });
  console.log(`AWP inspector demo: ${demo.url}`);
  console.log(`Stately view (needs internet): ${demo.url}stately`);
  Deno.addSignalListener("SIGINT", async () => {
    await demo.stop();
    Deno.exit(0);
  });
}
