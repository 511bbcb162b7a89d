/**
 * The dashboard's HTML shell: no inline script or style (the CSP forbids
 * them); the bundled app draws everything into `#app`.
 *
 * @module
 */

/**
 * The page, carrying the per-run write token when writes are on.
 *
 * @example
 * ```ts
 * import { dashboardPage } from "./dashboard_page.ts";
 * console.log(dashboardPage("").includes('src="/app.js"')); // true
 * ```
 */
export function dashboardPage(token: string): string {
  const meta = /^[0-9a-f]*$/.test(token) && token
    ? `\n<meta name="awp-token" content="${token}">`
    : "";
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">${meta}
<title>awp dashboard</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/app.css">
<script type="module" src="/app.js"></script>
</head>
<body>
<div id="app"><p class="loading">connecting to the daemon…</p></div>
</body>
</html>
`;
}
