import assert from "node:assert/strict";
import {
  EXEC_RESULT_MIME,
  parseExecRequest,
  runExec,
} from "../../profile/exec_runner.ts";
import { withTempDir } from "../helpers/temp_dir.ts";

function withRoot(fn: (root: string) => Promise<void>): Promise<void> {
  return withTempDir(fn, { prefix: "awp-exec-", realPath: true });
}

function alive(pid: number): boolean {
  // kill -0, through a real process: does the pid still exist?
  const exists = new Deno.Command("kill", {
    args: ["-0", String(pid)],
    stderr: "null",
  }).outputSync().success;
  if (!exists) return false;
  // An exited orphan stays a zombie where pid 1 does not reap: it is dead.
  try {
    const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
    return stat.slice(stat.lastIndexOf(")") + 2)[0] !== "Z";
  } catch {
    return false;
  }
}

Deno.test("exec runs argv and sh strings with cwd, env, stdin and exit codes", async () => {
  await withRoot(async (root) => {
    await Deno.mkdir(`${root}/services/api`, { recursive: true });
    const argv = await runExec({ cmd: ["printf", "%s-%s", "a b", "c"] }, {
      root,
    });
    assert.equal(argv.result.exit, 0);
    assert.equal(argv.result.stdout, "a b-c"); // no shell splitting of argv
    assert.equal(argv.result.stdout_truncated, false);
    assert.equal(argv.result.stderr_truncated, false);
    assert.equal(argv.result.timed_out, undefined);
    assert.ok(argv.result.duration_ms >= 0);
    assert.match(argv.summary, /^exit 0 in \d+\.\ds: printf %s-%s a b c$/);

    const sh = await runExec({
      cmd: 'pwd; echo "$AWP_T"; cat; echo oops >&2; exit 3',
      cwd: "services/api",
      env: { AWP_T: "from-env" },
      stdin: "fed\n",
    }, { root });
    assert.equal(sh.result.exit, 3);
    assert.equal(sh.result.stdout, `${root}/services/api\nfrom-env\nfed\n`);
    assert.equal(sh.result.stderr, "oops\n");
    assert.deepEqual(sh.attachments, []);

    const inherits = await runExec({ cmd: 'test -n "$PATH"' }, { root });
    assert.equal(inherits.result.exit, 0);
  });
});

Deno.test("exec reports commands that cannot start and bad requests", async () => {
  await withRoot(async (root) => {
    const missing = await runExec({ cmd: ["/nonexistent/awp-cmd"] }, { root });
    assert.equal(missing.result.exit, -1);
    assert.match(String(missing.result.error), /command not found/);
    const escape = await runExec({ cmd: "pwd", cwd: "../.." }, { root });
    assert.equal(escape.result.exit, -1);
    assert.match(String(escape.result.error), /outside the served root/);
    const notDir = await runExec({ cmd: "pwd", cwd: "nope" }, { root });
    assert.match(String(notDir.result.error), /not a directory/);
    for (const bad of [{}, { cmd: [] }, { cmd: "" }, { cmd: [1] }, "x"]) {
      const r = await runExec(bad, { root });
      assert.equal(r.result.exit, -1);
      assert.equal(typeof r.result.error, "string");
    }
    assert.throws(() => parseExecRequest({ cmd: "ls", env: { A: 1 } }), /env/);
    assert.throws(
      () => parseExecRequest({ cmd: "ls", timeout: -1 }),
      /timeout/,
    );
    assert.throws(() => parseExecRequest({ cmd: "ls", stdin: 5 }), /stdin/);
    assert.equal(EXEC_RESULT_MIME, "application/vnd.awp.exec-result+json");
  });
});

Deno.test("exec timeout kills the process and its children", async () => {
  await withRoot(async (root) => {
    const pidFile = `${root}/pids`;
    const r = await runExec({
      // The children write their pids, then everyone sleeps.
      cmd:
        `sleep 100 & echo $! >> ${pidFile}; sleep 100 & echo $! >> ${pidFile}; echo $$ >> ${pidFile}; wait`,
      timeout: 0.5,
    }, { root });
    assert.equal(r.result.timed_out, true);
    assert.match(String(r.result.error), /timed out after 0\.5 s/);
    assert.equal(r.result.exit, 137);
    assert.match(r.summary, /timed out/);
    const pids = (await Deno.readTextFile(pidFile)).trim().split("\n").map(
      Number,
    );
    assert.equal(pids.length, 3);
    // SIGKILL is delivered at once, but give the kernel a moment to reap.
    for (let i = 0; i < 50 && pids.some(alive); i++) {
      await new Promise((r) => setTimeout(r, 20));
    }
    for (const pid of pids) {
      assert.equal(alive(pid), false, `pid ${pid} survived`);
    }
  });
});

Deno.test("exec leaves no background process behind after a normal exit", async () => {
  await withRoot(async (root) => {
    const r = await runExec({ cmd: "sleep 100 & echo $!" }, { root });
    assert.equal(r.result.exit, 0);
    assert.equal(r.result.timed_out, undefined);
    const pid = Number(r.result.stdout.trim());
    for (let i = 0; i < 50 && alive(pid); i++) {
      await new Promise((r) => setTimeout(r, 20));
    }
    assert.equal(alive(pid), false);
  });
});

Deno.test("exec truncates output over 64 KiB and keeps it in full in a file", async () => {
  await withRoot(async (root) => {
    const spoolDir = `${root}/.spool`;
    // 100,000 bytes of stdout, a little stderr.
    const r = await runExec({
      cmd: "head -c 100000 /dev/zero | tr '\\0' 'x'; echo err >&2",
    }, { root, spoolDir });
    assert.equal(r.result.exit, 0);
    assert.equal(r.result.stdout_truncated, true);
    assert.equal(r.result.stdout.length, 65536);
    assert.equal(r.result.stderr, "err\n");
    assert.equal(r.result.stderr_truncated, false);
    assert.equal(r.attachments.length, 1);
    const [a] = r.attachments;
    assert.equal(a.name, "stdout.txt");
    assert.equal(a.size, 100000);
    assert.equal(a.temporary, true);
    assert.ok(a.path.startsWith(spoolDir));
    const full = await Deno.readTextFile(a.path);
    assert.equal(full, "x".repeat(100000));

    // Exactly at the limit is not truncated.
    const edge = await runExec({
      cmd: "head -c 65536 /dev/zero | tr '\\0' 'y'",
    }, { root, spoolDir });
    assert.equal(edge.result.stdout_truncated, false);
    assert.equal(edge.result.stdout.length, 65536);
    assert.deepEqual(edge.attachments, []);

    // Invalid UTF-8 is inlined lossily, and sent in full as a file.
    const bin = await runExec({ cmd: "printf '\\377\\376ok'" }, {
      root,
      spoolDir,
    });
    assert.equal(bin.result.stdout_truncated, true);
    assert.deepEqual(
      await Deno.readFile(bin.attachments[0].path),
      new Uint8Array([0xff, 0xfe, 0x6f, 0x6b]),
    );
  });
});

Deno.test("exec output cut at the limit does not split a UTF-8 character", async () => {
  await withRoot(async (root) => {
    // One ASCII byte, then 3-byte characters: the limit falls inside one.
    const r = await runExec({
      cmd:
        "printf a; i=0; while [ $i -lt 22000 ]; do printf '\\342\\202\\254'; i=$((i+1)); done",
    }, {
      root,
      spoolDir: `${root}/.spool`,
    });
    assert.equal(r.result.stdout_truncated, true);
    assert.ok(!r.result.stdout.includes("\ufffd"));
    assert.equal(
      new TextEncoder().encode(r.result.stdout).length,
      1 + 3 * 21845,
    );
  });
});

Deno.test("exec returns even when an escaped process holds its output open", async () => {
  await withRoot(async (root) => {
    // setsid puts the sleeper outside the command's process group.
    // It writes its pid once in its new session; the command waits for that.
    const r = await runExec({
      cmd: "setsid sh -c 'echo $$ > esc.pid; exec sleep 30' & " +
        "while [ ! -s esc.pid ]; do sleep 0.01; done; cat esc.pid",
    }, { root });
    const pid = Number(r.result.stdout.trim());
    try {
      assert.equal(r.result.exit, 0);
      assert.ok(pid > 0);
      // It returned while the escaped process (holding stdout) still lives.
      assert.equal(alive(pid), true);
    } finally {
      try {
        Deno.kill(pid, "SIGKILL");
      } catch { /* gone */ }
    }
  });
});
