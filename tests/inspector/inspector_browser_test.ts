/**
 * The inspector page in a real headless Chromium. First with two real Peers
 * sharing a hub (a msg with a blob over a unix socket): the tree, the
 * connection's statechart with `open` highlighted, a thread and a blob
 * actor, and the msg and its ack in the log. Then with the demo system,
 * whose slow blob shows a progress bar moving (real transfers on loopback
 * finish before a page could watch them) and the log filter.
 */
import assert from "node:assert/strict";
import { startDemo } from "../../inspector/demo.ts";
import { Peer } from "../../peer/peer.ts";
import { InspectionHub } from "../../inspector/inspection_hub.ts";
import { serveInspector } from "../../inspector/server.ts";
import { browserMissing, launchChromium } from "../helpers/chromium.ts";

const missing = browserMissing();
if (missing) console.warn(`inspector_browser_test skipped: ${missing}`);

Deno.test({
  name:
    "inspector page shows two real peers: open connection, thread, blob, msg and ack",
  ignore: missing !== undefined,
  // Chromium's pipes and playwright's timers settle asynchronously.
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "awp-inspect-" });
    const hub = new InspectionHub();
    const fast = { timeouts: { pingInterval: 0, bye: 1000 } };
    const alice = await Peer.open({
      home: `${dir}/alice`,
      name: "alice",
      inspect: hub,
      ...fast,
    });
    const bob = await Peer.open({
      home: `${dir}/bob`,
      name: "bob",
      inspect: hub,
      ...fast,
    });
    const server = await serveInspector(hub);
    const browser = await launchChromium();
    let page: import("npm:playwright-core@^1.65.1").Page | undefined;
    try {
      await alice.connect(await bob.listen(`unix:${dir}/bob.sock`));
      const file = `${dir}/notes.txt`;
      await Deno.writeTextFile(file, "x".repeat(300_000));
      const { id } = await alice.send(bob.key, "see the notes", {
        subject: "Notes",
        files: [file],
      });
      await alice.waitAck(id, { timeoutMs: 10_000 });

      page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
      const errors: string[] = [];
      page.on("pageerror", (e) => errors.push(e.message));
      await page.goto(server.url);

      // alice's connection to bob, under a supervisor, open.
      await page.locator('.row[data-kind="supervisor"]').first().waitFor();
      const conn = page.locator('.row[data-kind="connection"]', {
        hasText: "peer bob",
      });
      await conn.waitFor();
      await conn.click();
      // (Each Connection provides its own implementations: connection~N.)
      await page.locator('#diagram[data-machine^="connection"] svg').waitFor();
      await page.locator('#diagram g.active[id="state:connection.open"]')
        .waitFor({ timeout: 10_000 });
      assert.equal(
        await page.locator('#diagram g.active[id="state:connection.hello"]')
          .count(),
        0,
      );

      // A thread actor and a blob actor, nested under the connection.
      const nested =
        '.row[data-kind="connection"] + ul .row[data-kind="thread"]';
      await page.locator(nested).first().waitFor();
      await page.locator(
        '.row[data-kind="connection"] + ul .row[data-kind="blob"]',
      ).first().waitFor();

      // The sender's thread logs the msg; its blob transfer logs the ack.
      const thread = page.locator('.row[data-kind="thread"]', {
        hasText: "Notes",
      }).first();
      await thread.click();
      await page.locator("#log div", { hasText: "MSG_OUT" }).first().waitFor();
      await page.locator("#log div", { hasText: "see the notes" }).first()
        .waitFor();
      // The thread's chart is scaled to the pane, not cut off at its edge.
      const chart = page.locator('#diagram[data-machine^="thread"] svg');
      await chart.waitFor();
      const box = await chart.boundingBox();
      const pane = await page.locator("#view").boundingBox();
      const viewport = page.viewportSize();
      const fits = box !== null && pane !== null && viewport !== null &&
        box.width > 0 && box.x + box.width <= pane.x + pane.width + 1 &&
        box.height <= viewport.height;
      assert.ok(fits, "the thread chart fits its pane");
      // No "(on )" for an event without a name.
      assert.ok(
        !(await page.locator("#log").innerText()).includes("(on )"),
        "no empty event names in the log",
      );
      const out = page.locator('.row[data-kind="blob"]', {
        hasText: "out notes.txt",
      }).first();
      await out.click();
      await page.locator("#log div", { hasText: "ACKED" }).first().waitFor();
      await page.locator('#log div[data-type="snapshot"]', { hasText: "done" })
        .first().waitFor();

      await Deno.mkdir(new URL("../output/", import.meta.url), {
        recursive: true,
      });
      await thread.click();
      await page.screenshot({
        path: new URL("../output/inspector_peers.png", import.meta.url)
          .pathname,
      });
      assert.deepEqual(errors, [], "no page errors");
    } catch (err) {
      await page?.screenshot({
        path: new URL("../output/inspector_peers_failed.png", import.meta.url)
          .pathname,
      }).catch(() => {});
      throw err;
    } finally {
      await browser.close();
      await server.close();
      await alice.close();
      await bob.close();
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test({
  name: "inspector page shows live actors, highlighted statechart and log",
  ignore: missing !== undefined,
  // Chromium's pipes and playwright's timers outlive single awaits; all are
  // closed in finally, but their ops settle asynchronously.
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const demo = await startDemo({ step: 100 });
    const browser = await launchChromium();
    let page: import("npm:playwright-core@^1.65.1").Page | undefined;
    try {
      page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
      const errors: string[] = [];
      page.on("pageerror", (e) => errors.push(e.message));
      await page.goto(demo.url);

      // The tree: supervisor with connections, threads and blobs beneath.
      await page.locator('.row[data-kind="supervisor"]').waitFor();
      const bob = page.locator(".row", { hasText: "peer bob" });
      await bob.waitFor();
      await page.locator('.row[data-kind="thread"]').first().waitFor();
      await page.locator('.row[data-kind="blob"]').first().waitFor();
      const nested = await page.locator(
        '.row[data-kind="supervisor"] + ul .row[data-kind="connection"] + ul .row[data-kind="blob"]',
      ).count();
      assert.ok(
        nested >= 1,
        "blob actors are nested under a connection under the supervisor",
      );

      // The connection's statechart, drawn server-side, with `open` lit.
      await bob.click();
      await page.locator('#diagram[data-machine="connection"] svg').waitFor();
      const open = page.locator(
        '#diagram g.active[id="state:connection.open"]',
      );
      await open.waitFor({ timeout: 10_000 });
      for (const s of ["hello", "auth", "resume", "closing", "closed"]) {
        assert.equal(
          await page.locator(`#diagram g[id="state:connection.${s}"]`).count(),
          1,
          `diagram has state ${s}`,
        );
        assert.equal(
          await page.locator(`#diagram g.active[id="state:connection.${s}"]`)
            .count(),
          0,
          `${s} is not highlighted`,
        );
      }
      assert.match(await bob.innerText(), /open/);

      // The log shows events and state changes for the selected connection.
      await page.locator("#log div", { hasText: "after" }).first().waitFor();
      await page.locator('#log div[data-type="snapshot"]', { hasText: "open" })
        .first()
        .waitFor();
      await page.locator("#filter").fill("resume");
      const filtered = await page.locator("#log div").allInnerTexts();
      assert.ok(filtered.length > 0, "filter keeps matching lines");
      assert.ok(
        filtered.every((l) => l.toLowerCase().includes("resume")),
        "filter hides others",
      );
      await page.locator("#filter").fill("");

      // A blob shows a progress bar that moves.
      const bar = page.locator('.row[data-kind="blob"]:not(.finished) .bar')
        .first();
      await bar.waitFor();
      const pct0 = Number(await bar.getAttribute("aria-valuenow"));
      // A string, since the test is type-checked without the DOM library.
      await page.waitForFunction(
        `Number(document.querySelector('.row[data-kind="blob"]:not(.finished) .bar')` +
          `?.getAttribute("aria-valuenow")) > ${pct0}`,
        undefined,
        { timeout: 10_000 },
      );

      await Deno.mkdir(new URL("../output/", import.meta.url), {
        recursive: true,
      });
      await page.screenshot({
        path: new URL("../output/inspector.png", import.meta.url).pathname,
        fullPage: false,
      });
      assert.deepEqual(errors, [], "no page errors");
    } catch (err) {
      await page?.screenshot({
        path:
          new URL("../output/inspector_failed.png", import.meta.url).pathname,
      }).catch(() => {});
      throw err;
    } finally {
      await browser.close();
      await demo.stop();
    }
  },
});
