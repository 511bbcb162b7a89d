/**
 * Micro-benchmark of {@linkcode canonicalJson} (what grants are signed
 * over), next to plain `JSON.stringify` of the same value for scale.
 *
 * @example
 * ```sh
 * deno bench -A bench/canonical_json_bench.ts
 * ```
 *
 * @module
 */

import { canonicalJson } from "../wire/canonical_json.ts";

const grant = {
  iss: "ed25519:6EPXkq2TFR8tWi49c2x809PIBLePjuGFm-CQqb859bw",
  sub: "ed25519:Zm9vYmFyYmF6cXV4Zm9vYmFyYmF6cXV4Zm9vYmFyYmE",
  caps: ["fs:read", "fs:write", "exec"],
  exp: "2026-12-02T15:53:05.123Z",
  nonce: "q7N4y1fGmQ2nYp0sW3xZb8cV5dJ6kL9hT2rU4eA1oIw",
  aud: "ed25519:6EPXkq2TFR8tWi49c2x809PIBLePjuGFm-CQqb859bw",
};
const nested = {
  t: "msg",
  id: "01JDQ2X3ZQ8K9V0000000000AB",
  th: "t1",
  parts: Array.from({ length: 20 }, (_, i) => ({
    k: "data",
    mime: "application/json",
    data: { i, name: `item "${i}"\n`, tags: ["a", "b", "c"], ok: i % 2 === 0 },
  })),
};

Deno.bench({
  name: "canonicalJson: grant",
  group: "grant",
  baseline: true,
  fn() {
    canonicalJson(grant);
  },
});

Deno.bench({
  name: "JSON.stringify: grant",
  group: "grant",
  fn() {
    JSON.stringify(grant);
  },
});

Deno.bench({
  name: "canonicalJson: msg with 20 data parts",
  group: "nested",
  baseline: true,
  fn() {
    canonicalJson(nested);
  },
});

Deno.bench({
  name: "JSON.stringify: msg with 20 data parts",
  group: "nested",
  fn() {
    JSON.stringify(nested);
  },
});
