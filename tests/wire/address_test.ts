import assert from "node:assert/strict";
import {
  AddressError,
  DEFAULT_PORT,
  expandShortAddress,
  formatAddress,
  isPrivateHost,
  parseAddress,
} from "../../wire/address.ts";

Deno.test("parseAddress accepts tcp, bracketed IPv6 and unix forms", () => {
  assert.deepEqual(parseAddress("tcp:127.0.0.1:5000"), {
    kind: "tcp",
    host: "127.0.0.1",
    port: 5000,
  });
  assert.deepEqual(parseAddress("tcp:[::1]:7000"), {
    kind: "tcp",
    host: "::1",
    port: 7000,
  });
  assert.deepEqual(parseAddress("tcp:my-box.internal:0"), {
    kind: "tcp",
    host: "my-box.internal",
    port: 0,
  });
  assert.deepEqual(parseAddress("unix:/tmp/awp.sock"), {
    kind: "unix",
    path: "/tmp/awp.sock",
  });
});

Deno.test("formatAddress round-trips", () => {
  for (
    const text of [
      "tcp:127.0.0.1:1",
      "tcp:[fd00::1]:65535",
      "tcp:localhost:80",
      "unix:/a b/c.sock",
    ]
  ) {
    assert.equal(formatAddress(parseAddress(text)), text);
  }
});

Deno.test("parseAddress rejects bad input with one clear line", () => {
  const bad: Array<[string, RegExp]> = [
    ["127.0.0.1:5000", /expected tcp:HOST:PORT/],
    ["http://x:1", /unknown scheme "http"/],
    ["tcp:::1:7000", /IPv6 hosts need brackets/],
    ["tcp:[::1]7000", /expected :PORT after \]/],
    ["tcp:[::1:7000", /missing \]/],
    ["tcp:[zz::1]:7000", /invalid IPv6 address/],
    ["tcp:127.0.0.1", /missing :PORT|invalid port/],
    ["tcp:host:70000", /out of range/],
    ["tcp:host:-1", /invalid port/],
    ["tcp::80", /empty host/],
    ["tcp:300.1.1.1:80", /invalid IPv4/],
    ["tcp:bad host:80", /invalid host/],
    ["unix:", /empty unix socket path/],
  ];
  for (const [text, pattern] of bad) {
    assert.throws(() => parseAddress(text), (e: unknown) => {
      assert.ok(e instanceof AddressError, text);
      assert.match(e.message, pattern, text);
      assert.ok(!e.message.includes("\n"), "one line");
      assert.ok(e.message.includes(JSON.stringify(text)), "names the input");
      return true;
    });
  }
});

Deno.test("isPrivateHost classifies private and public hosts", () => {
  const privateHosts = [
    "localhost",
    "LOCALHOST",
    "127.0.0.1",
    "127.255.0.9",
    "10.0.0.1",
    "172.16.0.1",
    "172.31.255.255",
    "192.168.1.1",
    "169.254.3.4",
    "100.64.0.1",
    "100.127.255.255",
    "::1",
    "[::1]",
    "fd12:3456::1",
    "fc00::1",
    "fe80::1",
    "fe80::1%eth0",
    "febf::1",
    "::ffff:10.0.0.1",
    "::ffff:127.0.0.1",
  ];
  const publicHosts = [
    "8.8.8.8",
    "172.15.0.1",
    "172.32.0.1",
    "192.169.0.1",
    "100.63.255.255",
    "100.128.0.1",
    "169.255.0.1",
    "2001:db8::1",
    "fec0::1",
    "::ffff:8.8.8.8",
    "::",
    "0.0.0.0",
    "example.com",
    "",
  ];
  for (const h of privateHosts) assert.equal(isPrivateHost(h), true, h);
  for (const h of publicHosts) assert.equal(isPrivateHost(h), false, h);
});

Deno.test("ws:// and wss:// addresses: parsed, defaults, round trip, bad forms", () => {
  assert.deepEqual(parseAddress("ws://127.0.0.1:0/awp"), {
    kind: "ws",
    secure: false,
    host: "127.0.0.1",
    port: 0,
    path: "/awp",
  });
  assert.deepEqual(parseAddress("wss://box.example.dev/awp?room=1"), {
    kind: "ws",
    secure: true,
    host: "box.example.dev",
    port: 443,
    path: "/awp?room=1",
  });
  assert.deepEqual(parseAddress("ws://[::1]:8080"), {
    kind: "ws",
    secure: false,
    host: "::1",
    port: 8080,
    path: "/",
  });
  for (
    const text of [
      "ws://127.0.0.1:7000/awp",
      "wss://box.example.dev/awp",
      "ws://[::1]:8080/",
    ]
  ) {
    assert.equal(formatAddress(parseAddress(text)), text);
  }
  assert.equal(
    formatAddress(parseAddress("wss://x.dev:443/a")),
    "wss://x.dev/a",
  );
  const bad: Array<[string, RegExp]> = [
    ["ws://user:pw@host/awp", /user info is not allowed/],
    ["wss://host/awp#frag", /fragments are not allowed/],
    ["ws:/host", /expected ws:\/\/HOST:PORT\/path/],
    ["ws://host:99999/", /invalid WebSocket URL/],
  ];
  for (const [text, pattern] of bad) {
    assert.throws(() => parseAddress(text), pattern, text);
  }
});

Deno.test("expandShortAddress reads HOST:PORT and bare hosts as tcp: (port 7000), and leaves names alone", () => {
  const cases: Array<[string, string | undefined]> = [
    ["10.0.0.7", "tcp:10.0.0.7:7000"],
    ["127.0.0.1:7001", "tcp:127.0.0.1:7001"],
    ["build1.lan", "tcp:build1.lan:7000"],
    ["build1.lan:7001", "tcp:build1.lan:7001"],
    ["localhost", "tcp:localhost:7000"],
    ["[::1]", "tcp:[::1]:7000"],
    ["[::1]:9", "tcp:[::1]:9"],
    ["fd00::7", "tcp:[fd00::7]:7000"],
    ["alice", undefined],
    ["AbCd", undefined],
    ["-YZe", undefined],
    ["3.14", undefined],
    ["tcp:10.0.0.7:7000", undefined],
    ["unix:/tmp/a.sock", undefined],
  ];
  for (const [text, want] of cases) {
    assert.equal(expandShortAddress(text), want, text);
  }
  assert.equal(DEFAULT_PORT, 7000);
  // What it gives is a valid address.
  for (const [, want] of cases) if (want) parseAddress(want);
});

Deno.test("parseAddress: a URL-style tcp:// says what was meant", () => {
  assert.throws(
    () => parseAddress("tcp://10.0.0.7:7000"),
    /did you mean tcp:10\.0\.0\.7:7000\?/,
  );
});
