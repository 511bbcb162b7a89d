// The coding-agent profile from the command line: `awp exec`, `cat`, `put`
// and `ls` against a real peer that serves them, a refused request failing
// the command and showing in `read` and `threads`, and exec results read
// as words. Two real daemons over loopback.

import assert from "node:assert/strict";
import { awp, down, ok, okJson, type Status } from "../helpers/cli.ts";

Deno.test("cli: exec, cat, put and ls on a peer; err forbidden fails the command and shows in read and threads", async () => {
  const dir = await Deno.makeTempDir({ prefix: "awp-cli-profile-" });
  const [worker, boss, root] = [`${dir}/worker`, `${dir}/boss`, `${dir}/root`];
  await Deno.mkdir(`${root}/sub`, { recursive: true });
  try {
    const w = await okJson<Status>(worker, [
      "up",
      "--name",
      "worker",
      "--listen",
      "tcp:127.0.0.1:0",
      "--serve",
      "exec,fs:read,fs:write",
      "--root",
      root,
    ]);
    const b = await okJson<Status>(boss, [
      "up",
      "--name",
      "boss",
      "--listen",
      "tcp:127.0.0.1:0",
    ]);
    await ok(boss, ["connect", w.addrs[0]]);

    // No grant yet: the worker answers err forbidden, and the command fails.
    const refused = await awp(boss, ["exec", "worker", "--", "echo", "hi"]);
    assert.equal(refused.code, 1, refused.stdout);
    assert.match(
      refused.stderr,
      /^awp: worker refused the exec request: forbidden/,
    );
    assert.equal(refused.stderr.trimEnd().split("\n").length, 1);
    const read = await ok(boss, ["read"]);
    assert.match(read, /refused: forbidden/);
    const threads = await ok(boss, ["threads"]);
    assert.match(threads, /refused forbidden/);
    const readJson = await okJson<{ items: Array<{ kind?: string }> }>(boss, [
      "read",
    ]);
    assert.ok(readJson.items.some((i) => i.kind === "refused"));

    await ok(worker, ["grant", b.key, "exec", "fs:read", "fs:write"]);

    // exec: stdout and stderr where they belong, the remote exit code.
    const run = await awp(boss, [
      "exec",
      "worker",
      "--",
      "sh",
      "-c",
      "echo out; echo err >&2; exit 3",
    ]);
    assert.equal(run.code, 3, run.stderr);
    assert.equal(run.stdout, "out\n");
    assert.equal(run.stderr, "err\n");
    const pwd = await awp(boss, [
      "exec",
      "--cwd",
      "sub",
      "worker",
      "--",
      "pwd",
    ]);
    assert.equal(pwd.code, 0, pwd.stderr);
    assert.match(pwd.stdout, /\/root\/sub\n$/);
    // The result reads as words in `read`, not only under --json.
    const after = await ok(boss, ["read", "-n", "20"]);
    assert.match(after, /exit 3 in \d+ ms\n\s+out\n\s+stderr: err/);

    // put from stdin and from a file (binary goes as base64), cat, ls.
    assert.match(
      await ok(boss, ["put", "--mkdir", "worker", "notes/a.txt"], "hello\n"),
      /wrote 6 bytes to notes\/a\.txt/,
    );
    assert.equal(await ok(boss, ["cat", "worker", "notes/a.txt"]), "hello\n");
    const binary = new Uint8Array([0, 255, 1, 254, 10]);
    await Deno.writeFile(`${dir}/bin`, binary);
    await ok(boss, ["put", "--from", `${dir}/bin`, "worker", "notes/b.bin"]);
    assert.deepEqual(await Deno.readFile(`${root}/notes/b.bin`), binary);
    assert.equal(await ok(boss, ["ls", "worker", "notes"]), "a.txt\nb.bin\n");
    // A file over the inline limit comes back as a blob, printed whole.
    const big = "0123456789abcdef\n".repeat(6000);
    await Deno.writeTextFile(`${root}/big.txt`, big);
    assert.equal(await ok(boss, ["cat", "worker", "big.txt"]), big);

    // A failure there fails the command here, with the reason.
    const missing = await awp(boss, ["cat", "worker", "nope.txt"]);
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /fs:read failed: .*no such file/);
    const escape = await awp(boss, ["cat", "worker", "../outside"]);
    assert.equal(escape.code, 1);
    assert.match(escape.stderr, /fs:read failed/);
  } finally {
    await down(worker);
    await down(boss);
    await Deno.remove(dir, { recursive: true });
  }
});
