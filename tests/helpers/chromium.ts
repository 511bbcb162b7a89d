/**
 * Debian's Chromium for the browser tests (driven by playwright-core), and
 * why a test must skip when it is missing.
 *
 * @module
 */

import type { Browser } from "npm:playwright-core@^1.65.1";

/** Where Debian installs Chromium. */
export const CHROMIUM = "/usr/bin/chromium";

/** Headless flags for a sandbox-less CI machine with no network. */
export const LAUNCH_ARGS: readonly string[] = [
  "--no-sandbox",
  "--disable-background-networking",
  "--disable-gpu",
  "--no-first-run",
  "--disable-component-update",
  "--disable-sync",
];

/**
 * Why the browser tests cannot run here, or undefined when they can.
 *
 * @example
 * ```ts
 * import { browserMissing } from "./chromium.ts";
 * const why = browserMissing();
 * if (why) console.warn(`skipped: ${why}`);
 * ```
 */
export function browserMissing(): string | undefined {
  try {
    Deno.statSync(CHROMIUM);
    return undefined;
  } catch {
    return `no browser at ${CHROMIUM} (apt-get install -y chromium)`;
  }
}

/**
 * Launches headless Chromium through playwright-core (loaded only now, so a
 * test file that skips never loads it).
 *
 * @example
 * ```ts ignore
 * const browser = await launchChromium();
 * const page = await browser.newPage();
 * await browser.close();
 * ```
 */
export async function launchChromium(): Promise<Browser> {
  const { chromium } = await import("npm:playwright-core@^1.65.1");
  return await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [...LAUNCH_ARGS],
  });
}
