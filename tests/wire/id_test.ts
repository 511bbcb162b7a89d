import assert from "node:assert/strict";
import { IdGenerator, idTime } from "../../wire/id.ts";

const ULID = /^[0-7][0-9A-HJKMNP-TV-Z]{25}$/;

Deno.test("ids: 100k in a tight loop strictly increase and are ULIDs", () => {
  const ids = new IdGenerator();
  let prev = ids.next();
  assert.match(prev, ULID);
  for (let i = 0; i < 100_000; i++) {
    const id = ids.next();
    if (!(id > prev)) assert.fail(`id ${i}: ${id} <= ${prev}`);
    prev = id;
  }
  assert.match(prev, ULID);
  assert.equal(ids.last, prev);
});

Deno.test("ids: within one millisecond, across a millisecond, and when the clock steps back", () => {
  let now = 1_800_000_000_000;
  const ids = new IdGenerator({ now: () => now });
  const a = ids.next();
  const b = ids.next();
  assert.ok(b > a);
  assert.equal(idTime(a), now);
  assert.equal(idTime(b), now);
  now += 1;
  const c = ids.next();
  assert.ok(c > b);
  assert.equal(idTime(c), now);
  now -= 60_000; // snapshot restore or NTP step
  const d = ids.next();
  const e = ids.next();
  assert.ok(d > c && e > d, `${c} ${d} ${e}`);
  assert.equal(
    idTime(d),
    now + 60_000,
    "keeps the last time rather than going back",
  );
});

Deno.test("ids: a restarted generator continues above last, even with an earlier clock", () => {
  const first = new IdGenerator({ now: () => 1_800_000_000_500 });
  for (let i = 0; i < 10; i++) first.next();
  const last = first.last!;
  const restarted = new IdGenerator({ last, now: () => 1_800_000_000_000 });
  assert.equal(restarted.last, last);
  const next = restarted.next();
  assert.ok(next > last, `${next} <= ${last}`);
  // The random part at its maximum carries into the time part.
  const top = new IdGenerator({
    last: "01ARZ3NDEKZZZZZZZZZZZZZZZZ",
    now: () => 0,
  });
  const bumped = top.next();
  assert.ok(bumped > "01ARZ3NDEKZZZZZZZZZZZZZZZZ");
  assert.equal(idTime(bumped), idTime("01ARZ3NDEKZZZZZZZZZZZZZZZZ")! + 1);
});

Deno.test("ids: skipMs restarts past ids handed out after last but never recorded", () => {
  const t = 1_800_000_000_000;
  const before = new IdGenerator({ now: () => t });
  const last = before.next(); // recorded
  // Issued (written to a socket) later, then lost with a crash.
  const unrecorded = new IdGenerator({ last, now: () => t + 4_999 }).next();
  const restarted = new IdGenerator({ last, skipMs: 5_000, now: () => t });
  const next = restarted.next();
  assert.ok(next > unrecorded, `${next} <= ${unrecorded}`);
  assert.equal(idTime(next), t + 5_000);
  // A clock already past the skip is used as it is.
  const later = new IdGenerator({ last, skipMs: 5_000, now: () => t + 9_000 });
  assert.equal(idTime(later.next()), t + 9_000);
});

Deno.test("ids: a bad last is refused with a clear error; idTime rejects non-ULIDs", () => {
  assert.throws(
    () => new IdGenerator({ last: "01arz3ndektsv4rrffq69g5fav" }),
    /not a canonical ULID/,
  );
  assert.throws(
    () => new IdGenerator({ last: "short" }),
    /not a canonical ULID/,
  );
  assert.throws(
    () => new IdGenerator({ last: "8ZZZZZZZZZZZZZZZZZZZZZZZZZ" }),
    /not a canonical ULID/,
  );
  assert.equal(idTime("01ARZ3NDEKTSV4RRFFQ69G5FAV"), 1469922850259);
  assert.equal(idTime("01ARZ3NDEKTSV4RRFFQ69G5FAU!"), undefined);
  assert.equal(idTime("01ARZ3NDEKTSV4RRFFQ69G5FAI"), undefined);
});

Deno.test("ids: a clock outside the ULID range is an error, not a bad id", () => {
  assert.throws(
    () => new IdGenerator({ now: () => -5 }).next(),
    /clock out of ULID range/,
  );
  assert.throws(
    () => new IdGenerator({ now: () => NaN }).next(),
    /clock out of ULID range/,
  );
});
