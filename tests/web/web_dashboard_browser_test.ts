/**
 * The dashboard in a real headless Chromium, fed by two real daemons (real
 * processes, real sockets, real Deno KV): alice serves it from `up --web`,
 * bob attaches one later with `awp web`. The page sees bob come up, a
 * conversation grow as msgs, a state, a code part and an exec request with
 * its result arrive, an injected `<img onerror>` msg shown as text, a blob's
 * progress bar stop part way (bob is SIGSTOPped mid-transfer) and finish,
 * the activity log pause and filter, a reload that loses nothing, and a msg
 * sent from the page (`--web-write`). Screenshots of every view go to
 * tests/output/dashboard/ (and to docs/dashboard/ with AWP_DOCS_SCREENSHOTS=1).
 */
import assert from "node:assert/strict";
import type { Page } from "npm:playwright-core@^1.65.1";
import { awpOk } from "../helpers/awp_cli.ts";
import { browserMissing, launchChromium } from "../helpers/chromium.ts";

const missing = browserMissing();
if (missing) console.warn(`web_dashboard_browser_test skipped: ${missing}`);

const OUTPUT = new URL("../output/dashboard/", import.meta.url).pathname;
const DOCS = new URL("../../docs/dashboard/", import.meta.url).pathname;

async function screenshot(page: Page, name: string): Promise<void> {
  await Deno.mkdir(OUTPUT, { recursive: true });
  const shot = await page.screenshot({ fullPage: false });
  await Deno.writeFile(`${OUTPUT}${name}.png`, shot);
  if (Deno.env.get("AWP_DOCS_SCREENSHOTS") === "1") {
    await Deno.mkdir(DOCS, { recursive: true });
    await Deno.writeFile(`${DOCS}${name}.png`, shot);
  }
}

interface Status {
  key: string;
  pid: number;
  addrs: string[];
  web?: string;
}

/** Waits for the first `transfer` event of a blob being sent, on `url`'s stream. */
async function firstBytes(url: string, ref: RegExp): Promise<void> {
  const ctl = new AbortController();
  const res = await fetch(new URL("/events", url), { signal: ctl.signal });
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  let buf = "";
  try {
    while (true) {
      const { value, done } = await reader.read();
      if (done) throw new Error("event stream ended");
      buf += value;
      let cut;
      while ((cut = buf.indexOf("\n\n")) >= 0) {
        const block = buf.slice(0, cut);
        buf = buf.slice(cut + 2);
        if (!block.includes("event: transfer")) continue;
        const data = JSON.parse(block.split("\ndata: ")[1]);
        // Stopped from here, bob leaves the rest unread: the bar stalls part way.
        if (ref.test(data.name ?? "") && data.status === "sending") return;
      }
    }
  } finally {
    ctl.abort();
    await reader.cancel().catch(() => {});
  }
}

Deno.test({
  name:
    "dashboard: two daemons, peer up, live conversation, text not HTML, blob bar moves and finishes",
  ignore: missing !== undefined,
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "awp-web-" });
    const alice = `${dir}/alice`;
    const bob = `${dir}/bob`;
    const carol = `${dir}/carol`;
    const root = `${dir}/bob-work`;
    await Deno.mkdir(root);
    let bobPid = 0;
    let stopped = false;
    const browser = await launchChromium();
    try {
      const a = JSON.parse(
        await awpOk(alice, [
          "up",
          "--name",
          "alice",
          "--about",
          "ports the auth middleware to the new router",
          "--listen",
          "tcp:127.0.0.1:0",
          "--web=127.0.0.1:0",
          "--web-write",
          "--presence",
          "--json",
        ]),
      ) as Status;
      const b = JSON.parse(
        await awpOk(bob, [
          "up",
          "--name",
          "bob",
          "--about",
          "reviews diffs and runs the test suite",
          "--listen",
          "tcp:127.0.0.1:0",
          "--serve",
          "exec",
          "--root",
          root,
          "--presence",
          "--json",
        ]),
      ) as Status;
      await awpOk(carol, [
        "up",
        "--name",
        "carol",
        "--about",
        "triages CI failures",
        "--listen",
        "tcp:127.0.0.1:0",
        "--presence",
      ]);
      bobPid = b.pid;
      assert.ok(a.web, "up --web prints the dashboard URL");
      assert.equal(b.web, undefined);
      // A running daemon starts serving on `awp web`.
      const bobWeb = JSON.parse(
        await awpOk(bob, ["web", "--listen", "127.0.0.1:0", "--json"]),
      ) as { url: string; write: boolean };
      assert.equal(bobWeb.write, false);

      const page = await browser.newPage({
        viewport: { width: 1360, height: 880 },
      });
      const errors: string[] = [];
      page.on("pageerror", (e) => errors.push(String(e)));
      page.on("console", (m) => {
        if (m.type() === "error") errors.push(m.text());
      });
      await page.goto(a.web!);
      await page.locator(".self.card strong", { hasText: "alice" }).waitFor();
      await page.getByText("No peers yet").waitFor();

      // The peer comes up.
      const bobAddr = b.addrs.find((x) => x.startsWith("tcp:"))!;
      await awpOk(alice, ["connect", bobAddr]);
      const bobCard = page.locator(".card.peer.up", { hasText: "bob" });
      await bobCard.waitFor();
      await page.locator(".node.up").waitFor();
      assert.match(
        await bobCard.textContent() ?? "",
        /reviews diffs and runs the test suite/,
      );
      // Carol knows only bob: alice hears of her through presence gossip.
      await awpOk(carol, ["connect", bobAddr]);

      // A conversation appears as msgs are sent, live.
      const sent = JSON.parse(
        await awpOk(alice, [
          "send",
          "bob",
          "Can you review the router port? The diff is in auth/middleware.ts.",
          "--subject",
          "Port auth middleware",
          "--json",
        ]),
      ) as { th: string };
      const th = sent.th;
      await page.goto(
        `${a.web}#/c/${encodeURIComponent(b.key)}/${encodeURIComponent(th)}`,
      );
      await page.locator(".msg.out", { hasText: "review the router port" })
        .waitFor();
      await page.locator(".msg.out .ack.acked").waitFor();

      await awpOk(bob, ["state", th, "working", "--note", "reading the diff"]);
      await page.locator(".state-line", { hasText: "working" }).waitFor();

      const code = `${dir}/guard.ts`;
      await Deno.writeTextFile(
        code,
        'export function guard(req: Request): boolean {\n  // TODO: check the token\n  return req.headers.has("authorization");\n}\n',
      );
      await awpOk(bob, [
        "send",
        "--thread",
        th,
        "Looks good. One nit in the guard:",
        "--code",
        code,
      ]);
      await page.locator(".msg.in", { hasText: "One nit" }).waitFor();
      await page.locator(".msg.in pre.hljs .hljs-keyword").first().waitFor();

      // Remote text is text: no element is made from it, no script runs.
      const evil =
        '<img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script> **bold** [x](javascript:alert(1))';
      await awpOk(bob, ["send", "--thread", th, evil]);
      const evilMsg = page.locator(".msg.in .text", { hasText: "<img src=x" });
      await evilMsg.waitFor();
      assert.equal(await evilMsg.textContent(), evil);
      assert.equal(await page.locator(".chat img").count(), 0);
      assert.equal(await page.locator(".chat script").count(), 0);
      assert.equal(await page.evaluate(() => "__pwned" in globalThis), false);

      // An exec request with its result under it.
      await awpOk(bob, ["grant", "alice", "exec"]);
      await awpOk(alice, [
        "send",
        "bob",
        "--thread",
        th,
        "Run the tests please",
        "--data",
        JSON.stringify({ cmd: ["echo", "12 passed, 0 failed"] }),
        "--mime",
        "application/vnd.awp.exec+json",
      ]);
      const answer = page.locator(".msg.out .answers .answer");
      await answer.waitFor({ timeout: 20_000 });
      assert.match(await answer.textContent() ?? "", /12 passed, 0 failed/);
      await screenshot(page, "conversation");

      // Threads: both sides' states, filter by state.
      await page.goto(`${a.web}#/threads`);
      const row = page.locator(".thread-row", {
        hasText: "Port auth middleware",
      });
      await row.waitFor();
      assert.match(await row.textContent() ?? "", /working/);
      await page.locator(".filter-state").selectOption("failed");
      await page.getByText("No threads match").waitFor();
      await page.locator(".filter-state").selectOption("working");
      await row.waitFor();
      await page.locator(".filter-state").selectOption("");

      // A blob's bar moves, stops part way while bob is stopped, then finishes.
      const big = `${dir}/build-artifacts.tar`;
      // Larger than loopback's socket buffers, so it cannot all leave while bob sleeps.
      const bytes = new Uint8Array(24 * 1024 * 1024);
      for (let i = 0; i < bytes.length; i += 65536) {
        crypto.getRandomValues(bytes.subarray(i, i + 65536));
      }
      await Deno.writeFile(big, bytes);
      await page.goto(`${a.web}#/transfers`);
      await page.getByText("Nothing moving.").waitFor();
      const moving = firstBytes(a.web!, /build-artifacts/);
      const sending = awpOk(alice, [
        "send",
        "bob",
        "--thread",
        th,
        "the build artifacts",
        "--file",
        big,
      ]);
      await moving;
      Deno.kill(bobPid, "SIGSTOP");
      stopped = true;
      const bar = page.locator(".transfer.active .bar");
      await bar.waitFor();
      // Polled from here: a string predicate of waitForFunction is evaluated
      // in the page after its first try, and the page's CSP forbids eval.
      let partway = NaN;
      for (const end = Date.now() + 15_000; Date.now() < end;) {
        partway = Number(await bar.getAttribute("aria-valuenow"));
        if (partway > 0 && partway < 100) break;
        await new Promise((r) => setTimeout(r, 25));
      }
      assert.ok(partway > 0 && partway < 100, `part way: ${partway}%`);
      await screenshot(page, "transfers");
      Deno.kill(bobPid, "SIGCONT");
      stopped = false;
      const finished = page.locator(".transfer.finished.ok", {
        hasText: "build-artifacts.tar",
      });
      await finished.waitFor({ timeout: 60_000 });
      assert.equal(
        await finished.locator(".bar").getAttribute("aria-valuenow"),
        "100",
      );
      await sending;

      // Activity: newest first, filter, pause.
      await page.goto(`${a.web}#/activity`);
      await page.locator("table.log tr").first().waitFor();
      await page.locator(".activity .filter").fill("working");
      await page.locator("table.log tr", { hasText: "working" }).first()
        .waitFor();
      for (const text of await page.locator("table.log tr").allTextContents()) {
        assert.match(text, /working/);
      }
      await page.locator(".activity .filter").fill("");
      await page.locator(".pause").click();
      const frozen = await page.locator("table.log tr").count();
      await awpOk(bob, ["send", "--thread", th, "one more while paused"]);
      await page.getByText(/paused · [1-9]\d* new/).waitFor();
      assert.equal(await page.locator("table.log tr").count(), frozen);
      await page.locator(".pause").click();
      await page.locator("table.log tr", { hasText: "one more while paused" })
        .first().waitFor();
      await screenshot(page, "activity");

      // A reload loses nothing.
      const convUrl = `${a.web}#/c/${encodeURIComponent(b.key)}/${
        encodeURIComponent(th)
      }`;
      await page.goto(convUrl);
      await page.locator(".msg.in", { hasText: "one more while paused" })
        .waitFor();
      const before = await page.locator(".chat > *").count();
      await page.reload();
      await page.locator(".msg.in", { hasText: "one more while paused" })
        .waitFor();
      assert.equal(await page.locator(".chat > *").count(), before);
      await page.locator(".msg.out .blob", { hasText: "build-artifacts.tar" })
        .waitFor();

      // --web-write: the page sends a msg, bob gets it.
      await page.locator(".composer textarea").fill("Thanks, merging now.");
      await page.locator(".composer button.primary").click();
      await page.locator(".msg.out", { hasText: "Thanks, merging now." })
        .waitFor();
      await page.locator(".composer select").selectOption("done");
      await page.locator(".composer button", { hasText: "set state" }).click();
      await page.locator(".state-line", { hasText: "alice set" })
        .locator(".st-done").waitFor();
      const read = JSON.parse(
        await awpOk(bob, ["read", th, "--json"]),
      ) as { items: Array<{ text?: string }> };
      assert.ok(
        read.items.some((i) => i.text === "Thanks, merging now."),
        "bob received the msg sent from the page",
      );

      // Bob's own dashboard (attached later, read-only) sees alice and the thread.
      const bobPage = await browser.newPage({
        viewport: { width: 1360, height: 880 },
      });
      await bobPage.goto(`${bobWeb.url}#/threads`);
      await bobPage.locator(".thread-row", { hasText: "Port auth middleware" })
        .waitFor();
      assert.equal(await bobPage.locator(".badge.write").count(), 0);
      await bobPage.close();

      // A second thread, and states on both sides.
      const flaky = JSON.parse(
        await awpOk(alice, [
          "send",
          "bob",
          "CI failed twice on main in the KV tests; can you look?",
          "--subject",
          "Flaky CI on main",
          "--json",
        ]),
      ) as { th: string };
      await awpOk(bob, ["state", flaky.th, "done", "--note", "fixed in #42"]);
      await awpOk(alice, ["state", th, "waiting", "--note", "for the merge"]);
      await page.goto(`${a.web}#/threads`);
      await page.locator(".thread-row", { hasText: "Flaky CI on main" })
        .locator(".st-done").waitFor();
      await page.locator(".thread-row", { hasText: "Port auth middleware" })
        .locator(".st-waiting").waitFor();
      await screenshot(page, "threads");

      await page.goto(`${a.web}#/network`);
      await bobCard.waitFor();
      // --web-write: a grant from the peer's card.
      await bobCard.locator(".grant select").selectOption("fs:read");
      await bobCard.locator(".grant button").click();
      await bobCard.getByText("granted fs:read for 1h").waitFor();
      await bobCard.locator("dd", { hasText: /^fs:read$/ }).waitFor();
      const heard = page.locator(".node.heard", { hasText: "carol" });
      await heard.waitFor({ timeout: 30_000 });
      const carolRow = page.locator("table.presence tr", { hasText: "carol" });
      await carolRow.waitFor();
      assert.match(await carolRow.textContent() ?? "", /triages CI failures/);
      await screenshot(page, "network");
      assert.deepEqual(errors, []);
    } finally {
      if (stopped) Deno.kill(bobPid, "SIGCONT");
      await browser.close().catch(() => {});
      await awpOk(alice, ["down"]).catch(() => {});
      await awpOk(bob, ["down"]).catch(() => {});
      await awpOk(carol, ["down"]).catch(() => {});
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    }
  },
});
