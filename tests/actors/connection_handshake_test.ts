/**
 * The handshake's own timing, over real TCP: the accepting side reads its
 * `seen` while their auth verifies (not after admission), and the resume it
 * sends still carries what its store had durably received; their auth, read
 * before ours is out, waits for ours.
 */

import assert from "node:assert/strict";
import { Connection, type ConnectionOptions } from "../../actors/connection.ts";
import { MemoryStore } from "../../storage/memory_store.ts";
import { Signer } from "../../wire/keys.ts";
import { transportPair } from "../helpers/transport_pair.ts";

/** A store that counts its `seen` reads. */
class CountingStore extends MemoryStore {
  seenReads = 0;
  override seen(peer: string): Promise<Record<string, string>> {
    this.seenReads++;
    return super.seen(peer);
  }
}

/** What each side of {@link handshakeOverTcp} is given beyond the defaults. */
type SideOptions = Omit<ConnectionOptions, "transport" | "dialed" | "store">;

/**
 * Runs one handshake over real TCP between an accepting and a dialing
 * Connection, calls `check` once both are open, and always closes both
 * sides, the listener and the stores.
 */
async function handshakeOverTcp(
  sides: {
    accepted: SideOptions;
    dialed: SideOptions;
    store?: MemoryStore;
  },
  check: (accepted: Connection, dialed: Connection) => void,
): Promise<void> {
  const store = sides.store ?? new MemoryStore();
  const dialerStore = new MemoryStore();
  const { listener, client, server } = await transportPair("tcp:127.0.0.1:0");
  const accepted = new Connection({
    ...sides.accepted,
    transport: server,
    dialed: false,
    store,
  });
  const dialed = new Connection({
    ...sides.dialed,
    transport: client,
    dialed: true,
    store: dialerStore,
  });
  accepted.start();
  dialed.start();
  try {
    await Promise.all([accepted.established, dialed.established]);
    check(accepted, dialed);
  } finally {
    accepted.close("done");
    dialed.close("done");
    await Promise.all([accepted.closed, dialed.closed]);
    listener.close();
    await listener.done;
    store.close();
    dialerStore.close();
  }
}

Deno.test("handshake: seen is read while their auth verifies, and goes out in the resume", async () => {
  const [dialer, acceptor] = await Promise.all([
    Signer.generate(),
    Signer.generate(),
  ]);
  const store = new CountingStore();
  const id = "01JAAAAAAAAAAAAAAAAAAAAAAA";
  await store.receive(dialer.key, [{
    id,
    t: "msg",
    th: "t1",
    message: { t: "msg", id, th: "t1" },
    raw: "{}",
  }]);
  let readsAtAdmission = -1;
  const resumes: string[] = [];
  await handshakeOverTcp({
    store,
    accepted: {
      signer: acceptor,
      admit: () => {
        readsAtAdmission = store.seenReads;
        return undefined;
      },
    },
    dialed: {
      signer: dialer,
      onLine: (_key, dir, raw) => {
        if (dir === "in" && raw.includes('"t":"resume"')) resumes.push(raw);
      },
    },
  }, () => {
    assert.equal(readsAtAdmission, 1, "seen read before the admission");
    assert.equal(store.seenReads, 1, "and only once");
    assert.equal(resumes.length, 1);
    assert.deepEqual(JSON.parse(resumes[0]).seen, { t1: id });
  });
});

Deno.test("handshake: their auth waits until ours is out (ours signs slowly)", async () => {
  const [dialer, acceptor] = await Promise.all([
    Signer.generate(),
    Signer.generate(),
  ]);
  // Ours takes 50 ms to sign: their auth arrives meanwhile.
  const slow = {
    key: acceptor.key,
    sign: async (bytes: Uint8Array) => {
      await new Promise((r) => setTimeout(r, 50));
      return await acceptor.sign(bytes);
    },
  } as unknown as Signer;
  let oursOut = false;
  let oursOutAtAdmission: boolean | undefined;
  await handshakeOverTcp({
    accepted: {
      signer: slow,
      onLine: (_key, dir, raw) => {
        if (dir === "out" && raw.includes('"t":"auth"')) oursOut = true;
      },
      admit: () => {
        oursOutAtAdmission = oursOut;
        return undefined;
      },
    },
    dialed: { signer: dialer },
  }, () => {
    assert.equal(oursOutAtAdmission, true, "our auth went out first");
  });
});

Deno.test("handshake: their resume, arriving while their auth is verified and admitted, waits for the verdict", async () => {
  const [dialer, acceptor] = await Promise.all([
    Signer.generate(),
    Signer.generate(),
  ]);
  let admitted = false;
  let resumeOutBeforeVerdict = false;
  await handshakeOverTcp({
    accepted: {
      signer: acceptor,
      // A slow admission: the dialer has verified ours and sent its resume
      // long before this answers.
      admit: async () => {
        await new Promise((r) => setTimeout(r, 100));
        admitted = true;
        return undefined;
      },
    },
    dialed: {
      signer: dialer,
      onLine: (_key, dir, raw) => {
        if (dir === "out" && raw.includes('"t":"resume"') && !admitted) {
          resumeOutBeforeVerdict = true;
        }
      },
    },
  }, (accepted, dialed) => {
    assert.equal(resumeOutBeforeVerdict, true, "their resume came early");
    assert.equal(accepted.state, "open");
    assert.equal(dialed.state, "open");
  });
});
