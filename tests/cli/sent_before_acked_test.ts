import assert from "node:assert/strict";
import { SentBeforeAcked } from "../../cli/sent_before_acked.ts";

Deno.test("sent before acked: an ack waits for its line's sent while sends are in flight", () => {
  const out: string[] = [];
  const order = new SentBeforeAcked((id) => out.push(`acked ${id}`));
  // A line from before a restart, nothing in flight: at once.
  order.acked("00");
  const a = order.sending();
  const b = order.sending();
  order.acked("02"); // b's ack, taken before b resolved
  out.push("sent 01");
  a("01");
  order.acked("01");
  assert.deepEqual(out, ["acked 00", "sent 01", "acked 01"]);
  out.push("sent 02");
  b("02");
  assert.deepEqual(out.slice(3), ["sent 02", "acked 02"]);
  b("02"); // twice is once
  assert.equal(out.length, 5);
});

Deno.test("sent before acked: a failed send releases the acks it held", () => {
  const out: string[] = [];
  const order = new SentBeforeAcked((id) => out.push(id));
  const failed = order.sending();
  order.acked("old"); // not this run's, but a send is in flight
  assert.deepEqual(out, []);
  failed();
  assert.deepEqual(out, ["old"]);
});
