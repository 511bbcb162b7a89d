import assert from "node:assert/strict";
import { SESSION_ROUTES } from "../../actors/frame_routes.ts";

Deno.test("SESSION_ROUTES: the session's one-action routes, derived from TRAFFIC", () => {
  assert.deepEqual(
    Object.fromEntries([...SESSION_ROUTES].sort(([a], [b]) => a < b ? -1 : 1)),
    {
      ack: "takeAck",
      chunk: "stage",
      grant: "control",
      introduce: "stage",
      mirror: "stage",
      msg: "stage",
      ping: "answerPing",
      pong: "notePong",
      presence: "control",
      private: "stage",
      state: "stage",
    },
  );
  // bye and err take more than one action: always a chart step.
  assert.equal(SESSION_ROUTES.has("bye"), false);
  assert.equal(SESSION_ROUTES.has("err"), false);
  assert.equal(SESSION_ROUTES.has("hello"), false);
});
