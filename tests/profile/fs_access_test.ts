import assert from "node:assert/strict";
import {
  FsAccessError,
  fsRead,
  fsWrite,
  INLINE_LIMIT,
  resolveInRoot,
} from "../../profile/fs_access.ts";

/** A root inside a temp dir, with an "outside" sibling holding a secret. */
async function fixture(): Promise<
  { base: string; root: string; outside: string; cleanup: () => Promise<void> }
> {
  const base = await Deno.realPath(
    await Deno.makeTempDir({ prefix: "awp-fs-" }),
  );
  const root = `${base}/root`;
  const outside = `${base}/outside`;
  await Deno.mkdir(`${root}/sub`, { recursive: true });
  await Deno.mkdir(outside);
  await Deno.writeTextFile(`${outside}/secret.txt`, "secret");
  await Deno.writeTextFile(`${root}/hello.txt`, "hello\n");
  await Deno.writeTextFile(`${root}/sub/inner.txt`, "inner");
  await Deno.symlink(outside, `${root}/out-link`); // dir link leaving the root
  await Deno.symlink(`${outside}/secret.txt`, `${root}/secret-link`);
  await Deno.symlink(`${outside}/nope.txt`, `${root}/dangling-out`);
  await Deno.symlink(`${root}/sub`, `${root}/sub-link`); // stays inside
  return {
    base,
    root,
    outside,
    cleanup: () => Deno.remove(base, { recursive: true }),
  };
}

const escapes = (outside: string) => [
  "../outside/secret.txt",
  "sub/../../outside/secret.txt",
  "../outside/new.txt", // not existing, out of an existing dir
  "../outside/newdir/new.txt", // not existing, below a missing dir
  "out-link/secret.txt", // through a directory symlink
  "out-link/new.txt", // create through a directory symlink
  "out-link/newdir/new.txt",
  "secret-link", // a file symlink
  "dangling-out", // a dangling symlink pointing out
  `${outside}/secret.txt`, // absolute, existing
  `${outside}/abs-new.txt`, // absolute, not existing
];

Deno.test("resolveInRoot keeps paths inside and refuses every escape", async () => {
  const f = await fixture();
  try {
    assert.equal(
      await resolveInRoot(f.root, "hello.txt"),
      `${f.root}/hello.txt`,
    );
    assert.equal(await resolveInRoot(f.root, "."), f.root);
    assert.equal(
      await resolveInRoot(f.root, "sub/../hello.txt"),
      `${f.root}/hello.txt`,
    );
    assert.equal(
      await resolveInRoot(f.root, "sub-link/inner.txt"),
      `${f.root}/sub/inner.txt`,
    );
    assert.equal(
      await resolveInRoot(f.root, "new/deep/x.txt"),
      `${f.root}/new/deep/x.txt`,
    );
    assert.equal(
      await resolveInRoot(f.root, `${f.root}/sub/inner.txt`),
      `${f.root}/sub/inner.txt`,
    );
    // ".." at the top clamps lexically to "/" and so leaves the root.
    for (
      const p of [
        ...escapes(f.outside),
        "/etc/passwd",
        `${f.root}/../outside/secret.txt`,
      ]
    ) {
      await assert.rejects(resolveInRoot(f.root, p), FsAccessError, p);
    }
    await assert.rejects(resolveInRoot(f.root, ""), /path is required/);
    await assert.rejects(resolveInRoot(f.root, 42), /path is required/);
    await assert.rejects(resolveInRoot(f.root, "a\0b"), /NUL/);
    // A root that shares a prefix with its sibling ("root" vs "root2").
    await Deno.mkdir(`${f.base}/root2`);
    await Deno.writeTextFile(`${f.base}/root2/x`, "x");
    await assert.rejects(resolveInRoot(f.root, `${f.base}/root2/x`), /outside/);
    await assert.rejects(resolveInRoot(f.root, "../root2/x"), /outside/);
  } finally {
    await f.cleanup();
  }
});

Deno.test("resolveInRoot accepts a root given through a symlink", async () => {
  const f = await fixture();
  try {
    await Deno.symlink(f.root, `${f.base}/root-alias`);
    const alias = `${f.base}/root-alias`;
    assert.equal(
      await resolveInRoot(alias, "hello.txt"),
      `${f.root}/hello.txt`,
    );
    assert.equal(
      await resolveInRoot(alias, `${alias}/hello.txt`),
      `${f.root}/hello.txt`,
    );
    await assert.rejects(
      resolveInRoot(alias, "../outside/secret.txt"),
      /outside/,
    );
  } finally {
    await f.cleanup();
  }
});

Deno.test("fsRead and fsWrite refuse escapes with an error result", async () => {
  const f = await fixture();
  try {
    for (const path of escapes(f.outside)) {
      const r = await fsRead(f.root, { path });
      assert.equal(typeof r.result.error, "string", `read ${path}`);
      assert.equal(r.result.content, undefined);
      const w = await fsWrite(f.root, { path, content: "pwned", mkdir: true });
      assert.equal(typeof w.result.error, "string", `write ${path}`);
      assert.match(w.summary, /^fs:write .* failed: /);
    }
    // Nothing was written outside, nothing was created there.
    assert.equal(await Deno.readTextFile(`${f.outside}/secret.txt`), "secret");
    const names = [];
    for await (const e of Deno.readDir(f.outside)) names.push(e.name);
    assert.deepEqual(names, ["secret.txt"]);
  } finally {
    await f.cleanup();
  }
});

Deno.test("fsRead lists directories, reads utf-8, base64 and ranges", async () => {
  const f = await fixture();
  try {
    const dir = await fsRead(f.root, { path: "." });
    assert.equal(dir.result.dir, true);
    assert.deepEqual(
      dir.result.entries,
      [
        "dangling-out",
        "hello.txt",
        "out-link/",
        "secret-link",
        "sub-link/",
        "sub/",
      ].sort(),
    );
    const text = await fsRead(f.root, { path: "hello.txt" });
    assert.equal(text.result.encoding, "utf-8");
    assert.equal(text.result.content, "hello\n");
    assert.equal(text.result.size, 6);
    assert.equal(text.result.offset, 0);
    assert.equal(text.result.length, 6);
    assert.match(String(text.result.mode), /^-rw/);
    assert.deepEqual(text.attachments, []);
    const range = await fsRead(f.root, {
      path: "hello.txt",
      offset: 1,
      length: 3,
    });
    assert.equal(range.result.content, "ell");
    assert.equal(range.result.length, 3);
    await Deno.writeFile(
      `${f.root}/bin.dat`,
      new Uint8Array([0xff, 0x00, 0xfe]),
    );
    const bin = await fsRead(f.root, { path: "bin.dat" });
    assert.equal(bin.result.encoding, "base64");
    assert.equal(bin.result.content, "/wD+");
    const missing = await fsRead(f.root, { path: "nope.txt" });
    assert.equal(missing.result.error, "no such file or directory");
    const bad = await fsRead(f.root, { path: "hello.txt", offset: -1 });
    assert.match(String(bad.result.error), /offset/);
    assert.match(String((await fsRead(f.root, "x")).result.error), /object/);
  } finally {
    await f.cleanup();
  }
});

Deno.test("fsRead returns a larger file or range as a blob", async () => {
  const f = await fixture();
  try {
    const big = new Uint8Array(INLINE_LIMIT + 100).map((_, i) => 97 + (i % 26));
    await Deno.writeFile(`${f.root}/big.txt`, big);
    const whole = await fsRead(f.root, { path: "big.txt" });
    assert.equal(whole.result.blob, "big.txt");
    assert.equal(whole.result.content, undefined);
    assert.equal(whole.result.length, big.length);
    assert.equal(whole.attachments.length, 1);
    assert.equal(whole.attachments[0].temporary, true); // copied through the descriptor
    assert.deepEqual(await Deno.readFile(whole.attachments[0].path), big);

    const spoolDir = `${f.base}/spool`;
    const part = await fsRead(f.root, {
      path: "big.txt",
      offset: 10,
      length: INLINE_LIMIT + 1,
    }, {
      spoolDir,
    });
    assert.equal(part.result.blob, "big.txt");
    assert.equal(part.result.offset, 10);
    assert.equal(part.attachments[0].temporary, true);
    assert.ok(part.attachments[0].path.startsWith(spoolDir));
    assert.deepEqual(
      await Deno.readFile(part.attachments[0].path),
      big.subarray(10, 10 + INLINE_LIMIT + 1),
    );
  } finally {
    await f.cleanup();
  }
});

Deno.test("fsWrite writes utf-8 and base64, appends, creates parents", async () => {
  const f = await fixture();
  try {
    const w = await fsWrite(f.root, {
      path: "notes/todo.md",
      content: "a",
      mkdir: true,
    });
    assert.deepEqual(w.result, {
      path: "notes/todo.md",
      written: 1,
      append: false,
    });
    const a = await fsWrite(f.root, {
      path: "notes/todo.md",
      content: "YmM=",
      encoding: "base64",
      append: true,
    });
    assert.equal(a.result.written, 2);
    assert.equal(await Deno.readTextFile(`${f.root}/notes/todo.md`), "abc");
    await fsWrite(f.root, { path: "notes/todo.md", content: "z" });
    assert.equal(await Deno.readTextFile(`${f.root}/notes/todo.md`), "z");
    // Through a symlink that stays inside the root.
    await fsWrite(f.root, { path: "sub-link/via.txt", content: "v" });
    assert.equal(await Deno.readTextFile(`${f.root}/sub/via.txt`), "v");
    const noParent = await fsWrite(f.root, { path: "x/y/z.txt", content: "" });
    assert.equal(noParent.result.error, "no such file or directory");
    assert.match(
      String(
        (await fsWrite(f.root, { path: "sub", content: "" })).result.error,
      ),
      /directory/,
    );
    assert.match(
      String(
        (await fsWrite(f.root, { path: "e", content: "!", encoding: "base64" }))
          .result.error,
      ),
      /base64/,
    );
    assert.match(
      String(
        (await fsWrite(f.root, { path: "e", content: "x", encoding: "latin1" }))
          .result.error,
      ),
      /encoding/,
    );
    assert.match(
      String((await fsWrite(f.root, { path: "e" })).result.error),
      /content/,
    );
  } finally {
    await f.cleanup();
  }
});

Deno.test("fsRead and fsWrite: relative links inside, link loops, FIFOs and hard links", async () => {
  const f = await fixture();
  try {
    await Deno.symlink("../hello.txt", `${f.root}/sub/up-link`); // relative, inside
    await Deno.symlink("loop-b", `${f.root}/loop-a`);
    await Deno.symlink("loop-a", `${f.root}/loop-b`);
    assert.equal(
      (await fsRead(f.root, { path: "sub/up-link" })).result.content,
      "hello\n",
    );
    assert.match(
      String((await fsRead(f.root, { path: "loop-a" })).result.error),
      /symbolic links/,
    );
    const fifo = `${f.root}/pipe`;
    const mk = await new Deno.Command("mkfifo", { args: [fifo] }).output()
      .catch(() => undefined);
    if (mk?.success) {
      // Opening a FIFO must not hang the request.
      assert.match(
        String((await fsRead(f.root, { path: "pipe" })).result.error),
        /not a regular file/,
      );
    }
    await Deno.link(`${f.root}/hello.txt`, `${f.root}/twin.txt`);
    assert.match(
      String(
        (await fsWrite(f.root, { path: "twin.txt", content: "x" })).result
          .error,
      ),
      /2 hard links/,
    );
    assert.equal(await Deno.readTextFile(`${f.root}/hello.txt`), "hello\n");
    // A dangling link that stays inside: writing creates its target.
    await Deno.symlink("made.txt", `${f.root}/to-made`);
    await fsWrite(f.root, { path: "to-made", content: "m" });
    assert.equal(await Deno.readTextFile(`${f.root}/made.txt`), "m");
  } finally {
    await f.cleanup();
  }
});

Deno.test("without /proc/self/fd (the macOS path) escapes are still refused", async () => {
  const f = await fixture();
  try {
    const mod = new URL("../../profile/fs_access.ts", import.meta.url).href;
    const script = `
      const { fsRead, fsWrite } = await import(${JSON.stringify(mod)});
      const [root, ...paths] = Deno.args;
      const out = [];
      for (const path of paths) {
        const r = await fsRead(root, { path });
        const w = await fsWrite(root, { path, content: "pwned", mkdir: true });
        out.push({ path, read: r.result.error ?? r.result.content, write: w.result.error ?? "written" });
      }
      out.push({ ok: (await fsRead(root, { path: "sub-link/inner.txt" })).result.content });
      console.log(JSON.stringify(out));`;
    const run = await new Deno.Command(Deno.execPath(), {
      args: ["eval", script, f.root, ...escapes(f.outside)],
      env: { AWP_FS_NO_PROCFD: "1" },
      stdout: "piped",
      stderr: "piped",
    }).output();
    const text = new TextDecoder().decode(run.stdout);
    assert.equal(run.code, 0, new TextDecoder().decode(run.stderr));
    const results = JSON.parse(text) as Array<Record<string, string>>;
    for (const r of results.slice(0, -1)) {
      assert.notEqual(r.read, "secret", `read ${r.path}`);
      assert.notEqual(r.write, "written", `write ${r.path}`);
    }
    assert.equal(results.at(-1)!.ok, "inner");
    assert.equal(await Deno.readTextFile(`${f.outside}/secret.txt`), "secret");
  } finally {
    await f.cleanup();
  }
});
