/**
 * ARCHITECTURE.md names files and functions along the path of a frame; this
 * checks that each named file exists and that each `Class.method` it names
 * is defined in the file it follows, so the page cannot drift from the code
 * unnoticed.
 */

import assert from "node:assert/strict";

const ROOT = new URL("../../", import.meta.url);
const page = await Deno.readTextFile(new URL("ARCHITECTURE.md", ROOT));

/** Every `dir/file.ts` the page names, and the `Class.member`s after each. */
function namedCode(text: string): Array<{ file: string; members: string[] }> {
  const found: Array<{ file: string; members: string[] }> = [];
  for (const token of text.matchAll(/`([^`\s]+)`/g)) {
    const code = token[1];
    if (/^[a-z_]+(\/[a-z_]+)*\.ts$/.test(code)) {
      found.push({ file: code, members: [] });
    } else if (/^[A-Z]\w+\.#?\w+$/.test(code) && found.length > 0) {
      found.at(-1)!.members.push(code);
    }
  }
  return found;
}

Deno.test("every file ARCHITECTURE.md names exists", async () => {
  const missing: string[] = [];
  for (const { file } of namedCode(page)) {
    try {
      await Deno.stat(new URL(file, ROOT));
    } catch {
      missing.push(file);
    }
  }
  assert.deepEqual(missing, []);
});

Deno.test("every Class.member ARCHITECTURE.md names right after a file is defined there", async () => {
  const missing: string[] = [];
  for (const { file, members } of namedCode(page)) {
    let source: string;
    try {
      source = await Deno.readTextFile(new URL(file, ROOT));
    } catch {
      continue; // reported by the test above
    }
    for (const name of members) {
      const [cls, member] = name.split(".");
      if (!new RegExp(`class ${cls}\\b`).test(source)) continue; // another file's
      const escaped = member.replace("#", "\\#");
      const defined = new RegExp(
        `^\\s*(?:(?:async|static|get|readonly|private)\\s+)*\\*?\\s*${escaped}\\s*[(<=:]`,
        "m",
      );
      if (!defined.test(source)) missing.push(`${file}: ${name}`);
    }
  }
  assert.deepEqual(missing, []);
});

Deno.test("the page names the received and sent paths' files", () => {
  const files = new Set(namedCode(page).map((n) => n.file));
  assert.ok(files.size >= 10, `only ${files.size} files named`);
});
