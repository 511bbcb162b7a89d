/**
 * A peer kept connected that goes down is listed as unreachable (since
 * when, and why) while we keep dialing it, and no longer once it is back.
 */

import assert from "node:assert/strict";
import { Peer } from "../../peer/peer.ts";
import { until } from "../helpers/until.ts";

Deno.test("peers: unreachable since … while the dialer keeps failing", async () => {
  const dir = await Deno.makeTempDir();
  const address = `unix:${dir}/b.sock`;
  let b = await Peer.open({ home: `${dir}/b`, name: "b" });
  const a = await Peer.open({ memory: true, name: "a" });
  try {
    await b.listen(address);
    const key = await a.connect(address, { keep: true });
    await b.close();
    const down = await until("unreachable", async () => {
      const p = (await a.peers()).find((p) => p.key === key);
      return p?.unreachable?.error ? p : undefined;
    });
    assert.equal(down.connected, false);
    assert.ok(Date.parse(down.unreachable!.since) <= Date.now());
    assert.match(down.unreachable!.error!, /no such socket|refused/);
    // Back with the same identity: reached again, no longer unreachable.
    b = await Peer.open({ home: `${dir}/b`, name: "b" });
    await b.listen(address);
    const up = await until("reconnected", async () => {
      const p = (await a.peers()).find((p) => p.key === key);
      return p?.connected ? p : undefined;
    });
    assert.equal(up.unreachable, undefined);
  } finally {
    await a.close();
    await b.close();
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
});
