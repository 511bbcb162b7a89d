import assert from "node:assert/strict";
import { ReadCache } from "../../storage/read_cache.ts";

Deno.test("ReadCache: loads once, returns copies, reloads after a write", async () => {
  const cache = new ReadCache<string, { n: number }>();
  let loads = 0;
  const load = () => Promise.resolve({ n: ++loads });
  const first = await cache.read("a", load);
  first.n = 99;
  assert.deepEqual(await cache.read("a", load), { n: 1 });
  assert.equal(loads, 1);
  await cache.write("a", () => Promise.resolve());
  assert.deepEqual(await cache.read("a", load), { n: 2 });
});

Deno.test("ReadCache: a load that overlaps a write is returned but not kept", async () => {
  const cache = new ReadCache<string, number>();
  let release!: (n: number) => void;
  const slow = cache.read("a", () => new Promise((r) => release = r));
  await cache.write("a", () => Promise.resolve());
  release(1); // read before the write landed
  assert.equal(await slow, 1);
  assert.equal(await cache.read("a", () => Promise.resolve(2)), 2);
});

Deno.test("ReadCache: keeps at most maxEntries, dropping the oldest", async () => {
  const cache = new ReadCache<number, number>(2);
  let loads = 0;
  const load = (n: number) => () => (loads++, Promise.resolve(n));
  await cache.read(1, load(1));
  await cache.read(2, load(2));
  await cache.read(3, load(3)); // drops 1
  assert.equal(loads, 3);
  await cache.read(3, load(3));
  await cache.read(2, load(2));
  assert.equal(loads, 3);
  await cache.read(1, load(1));
  assert.equal(loads, 4);
});
