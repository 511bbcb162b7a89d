import assert from "node:assert/strict";
import {
  findRequests,
  handleRequest,
  parseServe,
  type ProfileContext,
  REQUEST_MIMES,
  type RequestOutcome,
  type ServeRecord,
} from "../../profile/profile.ts";
import { GrantPolicy } from "../../peer/policy.ts";
import { mintGrant } from "../../wire/grant.ts";
import { Signer } from "../../wire/keys.ts";
import type { DataPart, TextPart } from "../../wire/types.ts";
import { pathExists } from "../helpers/path_exists.ts";
import { withTempDir } from "../helpers/temp_dir.ts";

const EXEC = "application/vnd.awp.exec+json";
const READ = "application/vnd.awp.fs-read+json";
const WRITE = "application/vnd.awp.fs-write+json";
const ADMIN = "application/vnd.awp.admin+json";

function msg(...parts: unknown[]) {
  return { id: "01REQ", th: "thr_1", parts };
}

function data(mime: string, value: unknown) {
  return { k: "data", mime, data: value };
}

function withRoot(fn: (root: string) => Promise<void>): Promise<void> {
  return withTempDir(fn, { prefix: "awp-profile-", realPath: true });
}

/** lstat: a dangling symlink left behind counts as existing. */
function exists(path: string): Promise<boolean> {
  return pathExists(path, { lstat: true });
}

function result(o: RequestOutcome) {
  assert.equal(o.kind, "result");
  if (o.kind !== "result") throw new Error("unreachable");
  const [text, part] = o.reply.parts as [TextPart, DataPart];
  return {
    o,
    text: text.text,
    mime: part.mime,
    data: part.data as Record<string, unknown>,
  };
}

Deno.test("a msg without request parts is not a request", async () => {
  const ctx = { caps: new Set(["exec"]), serve: new Set(["exec"]), root: "." };
  assert.deepEqual(
    await handleRequest(msg({ k: "text", text: "hi" }), ctx),
    [],
  );
  assert.deepEqual(
    await handleRequest(msg(data("application/json", {})), ctx),
    [],
  );
  assert.deepEqual(findRequests({ parts: "nope" }, ctx), []);
  assert.deepEqual(findRequests(null, ctx), []);
  assert.deepEqual(Object.values(REQUEST_MIMES), [
    "exec",
    "fs:read",
    "fs:write",
    "admin",
  ]);
});

Deno.test("without the capability a request is forbidden and nothing runs", async () => {
  await withRoot(async (root) => {
    const served: ServeRecord[] = [];
    const ctx: ProfileContext = {
      caps: new Set(["fs:read"]), // but not exec or fs:write
      serve: new Set(["exec", "fs:read", "fs:write"]),
      root,
      log: (r) => served.push(r),
    };
    const m = msg(
      data(EXEC, { cmd: ["touch", "ran"] }),
      data(WRITE, { path: "written.txt", content: "x" }),
    );
    const out = await handleRequest(m, ctx);
    assert.deepEqual(out.map((o) => o.kind), ["forbidden", "forbidden"]);
    assert.deepEqual(out[0].kind === "forbidden" && out[0].err, {
      code: "forbidden",
      re: "01REQ",
      detail:
        'application/vnd.awp.exec+json requires a grant for capability "exec"',
    });
    assert.equal(out[1].request.cap, "fs:write");
    assert.equal(out[1].request.allowed, false);
    assert.equal(await exists(`${root}/ran`), false);
    assert.equal(await exists(`${root}/written.txt`), false);
    assert.deepEqual(served, []);
  });
});

Deno.test("with the capability but not served, the request goes to the agent marked allowed", async () => {
  await withRoot(async (root) => {
    const ctx = {
      caps: new Set(["exec", "admin"]),
      serve: new Set<string>(),
      root,
    };
    const m = msg(
      { k: "text", text: "please" },
      data(EXEC.toUpperCase(), { cmd: ["touch", "ran"] }),
      data(ADMIN, { anything: 1 }),
      data(READ, { path: "." }),
    );
    const out = await handleRequest(m, ctx);
    assert.deepEqual(
      out.map((
        o,
      ) => [o.kind, o.request.part, o.request.cap, o.request.allowed]),
      [
        ["deliver", 1, "exec", true],
        ["deliver", 2, "admin", true],
        ["forbidden", 3, "fs:read", false],
      ],
    );
    assert.equal(await exists(`${root}/ran`), false);
    // admin is never served here, even when asked to.
    const admin = await handleRequest(msg(data(ADMIN, {})), {
      ...ctx,
      serve: new Set(["admin"]),
    });
    assert.equal(admin[0].kind, "deliver");
  });
});

Deno.test("served requests run and answer in the thread, re the request", async () => {
  await withRoot(async (root) => {
    const served: ServeRecord[] = [];
    const ctx: ProfileContext = {
      caps: new Set(["exec", "fs:read", "fs:write"]),
      serve: parseServe("exec,fs:read,fs:write"),
      root,
      peer: "ed25519:requester",
      spoolDir: `${root}/.spool`,
      log: (r) => served.push(r),
    };
    const write = result(
      (await handleRequest(
        msg(data(WRITE, { path: "notes/todo.md", content: "hi", mkdir: true })),
        ctx,
      ))[0],
    );
    assert.equal(write.o.kind === "result" && write.o.reply.th, "thr_1");
    assert.equal(write.o.kind === "result" && write.o.reply.re, "01REQ");
    assert.equal(write.mime, "application/vnd.awp.fs-write-result+json");
    assert.deepEqual(write.data, {
      path: "notes/todo.md",
      written: 2,
      append: false,
    });
    assert.equal(write.text, "wrote 2 bytes to notes/todo.md");

    const read = result(
      (await handleRequest(msg(data(READ, { path: "notes/todo.md" })), ctx))[0],
    );
    assert.equal(read.mime, "application/vnd.awp.fs-read-result+json");
    assert.equal(read.data.content, "hi");
    assert.equal(read.data.encoding, "utf-8");

    const exec = result(
      (await handleRequest(
        msg(data(EXEC, { cmd: "cat notes/todo.md; exit 4" })),
        ctx,
      ))[0],
    );
    assert.equal(exec.mime, "application/vnd.awp.exec-result+json");
    assert.equal(exec.data.exit, 4);
    assert.equal(exec.data.stdout, "hi");
    assert.match(exec.text, /^exit 4 in /);

    assert.deepEqual(served.map((r) => [r.cap, r.ok, r.re, r.peer]), [
      ["fs:write", true, "01REQ", "ed25519:requester"],
      ["fs:read", true, "01REQ", "ed25519:requester"],
      ["exec", true, "01REQ", "ed25519:requester"],
    ]);
    assert.match(served[2].request, /cat notes\/todo.md/);
  });
});

Deno.test("an allowed request that fails still gets a result with error", async () => {
  await withRoot(async (root) => {
    const served: ServeRecord[] = [];
    const ctx: ProfileContext = {
      caps: new Set(["exec", "fs:read", "fs:write"]),
      serve: new Set(["exec", "fs:read", "fs:write"]),
      root,
      log: (r) => served.push(r),
    };
    const out = await handleRequest(
      msg(
        data(READ, { path: "../../etc/passwd" }),
        data(WRITE, { path: "x", content: 5 }),
        data(EXEC, { cmd: 17 }),
        data(EXEC, { cmd: "sleep 100", timeout: 0.2 }),
      ),
      ctx,
    );
    const [read, write, exec, slow] = out.map(result);
    assert.match(String(read.data.error), /outside the served root/);
    assert.match(read.text, /^fs:read .* failed: /);
    assert.match(String(write.data.error), /content/);
    assert.equal(exec.data.exit, -1);
    assert.match(String(exec.data.error), /cmd must be/);
    assert.equal(slow.data.timed_out, true);
    assert.deepEqual(served.map((r) => r.ok), [false, false, false, false]);
    assert.ok(served.every((r) => typeof r.error === "string"));
  });
});

Deno.test("grants decide the caps: a granted peer is served, an ungranted one forbidden", async () => {
  await withRoot(async (root) => {
    const me = await Signer.generate();
    const bob = await Signer.generate();
    const eve = await Signer.generate();
    const policy = new GrantPolicy({ ownKey: me.key });
    const grant = await mintGrant(me, {
      sub: bob.key,
      caps: ["fs:write"],
      ttlMs: 60_000,
    });
    const request = msg(data(WRITE, { path: "from-bob.txt", content: "ok" }));
    const serve = new Set(["fs:write"]);
    const forBob = await handleRequest(request, {
      caps: await policy.capsOf(bob.key, [grant]),
      serve,
      root,
    });
    assert.equal(forBob[0].kind, "result");
    // Eve replays Bob's grant: it names Bob, so Eve holds nothing.
    const forEve = await handleRequest(request, {
      caps: await policy.capsOf(eve.key, [grant]),
      serve,
      root,
    });
    assert.equal(forEve[0].kind, "forbidden");
    assert.equal(await Deno.readTextFile(`${root}/from-bob.txt`), "ok");
  });
});

Deno.test("parseServe accepts the servable caps and refuses others with one line", () => {
  assert.deepEqual([...parseServe(undefined)], []);
  assert.deepEqual([...parseServe(" exec , fs:write,")], ["exec", "fs:write"]);
  assert.throws(
    () => parseServe("exec,admin"),
    /--serve: unknown capability "admin"/,
  );
  assert.throws(() => parseServe("rm -rf"), TypeError);
});
