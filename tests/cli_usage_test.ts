// The CLI as people use it (issue 15): flags in either place, keys that
// begin with "-", addresses in the forms people type, names that stay
// unique, and listen addresses remembered only once they work. Real
// daemons over loopback.

import assert from "node:assert/strict";
import { awp, down, fails, ok, okJson, type Status } from "./helpers/cli.ts";

Deno.test("cli: a listen address that cannot be bound is not remembered", async () => {
  const home = await Deno.makeTempDir({ prefix: "awp-cli-listen-" });
  const busy = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (busy.addr as Deno.NetAddr).port;
  try {
    const r = await awp(home, ["up", "--listen", `tcp:127.0.0.1:${port}`]);
    assert.equal(r.code, 1, r.stderr);
    assert.match(r.stderr, /in use/i);
    // A plain `up` afterwards uses the defaults, not the failed address.
    const s = await okJson<Status>(home, ["up"]);
    assert.ok(!s.addrs.includes(`tcp:127.0.0.1:${port}`), s.addrs.join(" "));
    await ok(home, ["down"]);
    // One that binds is remembered for the next plain `up`.
    busy.close();
    await ok(home, ["up", "--listen", `tcp:127.0.0.1:${port}`]);
    await ok(home, ["down"]);
    const again = await okJson<Status>(home, ["up"]);
    assert.deepEqual(again.addrs, [`tcp:127.0.0.1:${port}`]);
  } finally {
    try {
      busy.close();
    } catch { /* closed */ }
    await down(home);
    await Deno.remove(home, { recursive: true });
  }
});
