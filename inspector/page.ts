/**
 * The inspector's browser page and the Stately bridge page, as string
 * constants so `deno compile` binaries carry them (no file reads at run time).
 *
 * The page talks to the server of `server.ts`: `/ws` for live events,
 * `/api/log` for an actor's history, `/api/diagram` for a machine's SVG.
 *
 * @module
 */

const STYLE = `
:root { --bg:#f7fafc; --panel:#fff; --line:#e2e8f0; --ink:#1a202c; --mute:#718096;
  --accent:#dd6b20; --hi:#feebc8; --sel:#ebf4ff; }
* { box-sizing: border-box; }
html, body { margin:0; height:100%; font:13px/1.4 system-ui, sans-serif; color:var(--ink); background:var(--bg); }
header { display:flex; gap:12px; align-items:center; padding:6px 12px; background:#2d3748; color:#fff; }
header h1 { font-size:15px; margin:0; font-weight:600; }
#conn { font-size:12px; padding:1px 8px; border-radius:9px; background:#c53030; }
#conn.up { background:#2f855a; }
main { display:grid; grid-template-columns: 320px 1fr; grid-template-rows: 1fr 240px; height:calc(100% - 34px); }
#tree { grid-row: 1 / 3; overflow:auto; background:var(--panel); border-right:1px solid var(--line); padding:6px 0; }
#tree ul { list-style:none; margin:0; padding-left:14px; }
#tree > ul { padding-left:4px; }
.row { display:flex; flex-wrap:wrap; gap:6px; align-items:center; padding:3px 8px; border-radius:4px; cursor:pointer; }
.row:hover { background:#f0f4f8; }
.row.selected { background:var(--sel); outline:1px solid #90cdf4; }
.row.finished { opacity:.55; }
.kind { font-size:11px; padding:0 6px; border-radius:8px; background:#e2e8f0; color:#2d3748; }
.kind.connection { background:#c6f6d5; } .kind.thread { background:#bee3f8; }
.kind.blob { background:#fefcbf; } .kind.supervisor { background:#e9d8fd; } .kind.dialer { background:#fed7e2; }
.label { font-weight:600; }
.state { color:var(--accent); font-family:ui-monospace, monospace; font-size:12px; }
.bar[hidden], .pct[hidden] { display:none; }
.bar { flex-basis:100%; height:6px; background:#edf2f7; border-radius:3px; overflow:hidden; }
.bar > div { height:100%; background:#3182ce; }
.pct { font-size:11px; color:var(--mute); }
#view { overflow:auto; padding:8px 12px; }
#view h2 { font-size:14px; margin:0 0 6px; }
#view h2 small { color:var(--mute); font-weight:400; }
#diagram svg { display:block; width:100%; height:auto; max-height:calc(100vh - 240px); }
#diagram g.node.active > path, #diagram g.node.active > polygon, #diagram g.node.active > ellipse { fill:var(--hi) !important; stroke:var(--accent); stroke-width:2.5; }
#diagram g.cluster.active > path, #diagram g.cluster.active > polygon { fill:#fffaf0; stroke:var(--accent); stroke-width:2; }
#diagram g.cluster.active > text:first-of-type { fill:var(--accent); font-weight:700; }
#logpane { border-top:1px solid var(--line); background:var(--panel); display:flex; flex-direction:column; min-height:0; }
#logbar { display:flex; gap:8px; padding:4px 8px; align-items:center; border-bottom:1px solid var(--line); }
#logbar input { flex:1; max-width:320px; padding:2px 6px; }
#pending { color:var(--mute); font-size:12px; }
#log { overflow:auto; flex:1; font-family:ui-monospace, monospace; font-size:12px; }
#log div { padding:1px 8px; white-space:nowrap; border-bottom:1px solid #f4f6f8; }
#log .t { color:var(--mute); margin-right:8px; }
#log .k { display:inline-block; width:62px; }
#log .k.event { color:#2b6cb0; } #log .k.snapshot { color:#c05621; } #log .k.emitted { color:#2f855a; }
#log .who { color:#553c9a; margin-right:6px; }
.empty { color:var(--mute); padding:12px; }
`;

const SCRIPT = `
"use strict";
var actors = new Map();
var selected = null;
var paused = false;
var held = [];
var shownLog = [];
var currentMachine = null;
var ws = null;
var $ = function (id) { return document.getElementById(id); };
var PREFIX = "state:";

function stateText(v) {
  if (v === undefined || v === null) return "";
  if (typeof v === "string") return v;
  if (typeof v !== "object") return String(v);
  return Object.keys(v).map(function (k) {
    var inner = stateText(v[k]);
    return inner ? k + "." + inner : k;
  }).join(", ");
}
function esc(s) {
  return String(s).replace(/[&<>"]/g, function (c) {
    return { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" }[c];
  });
}
function time(t) {
  var d = new Date(t);
  return d.toTimeString().slice(0, 8) + "." + String(d.getMilliseconds()).padStart(3, "0");
}

var treeShape = "";
function renderTree() {
  var kids = new Map();
  var roots = [];
  actors.forEach(function (a) {
    if (a.parentId && actors.has(a.parentId)) {
      if (!kids.has(a.parentId)) kids.set(a.parentId, []);
      kids.get(a.parentId).push(a);
    } else roots.push(a);
  });
  // Rows are rebuilt only when the tree's shape changes and updated in place
  // otherwise, so they stay put under the pointer while events stream in.
  var shape = [];
  function walk(a) {
    shape.push(a.id + ">" + (a.parentId || ""));
    (kids.get(a.id) || []).forEach(walk);
  }
  roots.forEach(walk);
  var key = shape.join("|");
  if (key !== treeShape) {
    treeShape = key;
    var item = function (a) {
      var h = '<li><div class="row" data-id="' + esc(a.id) + '" data-kind="' + esc(a.kind) + '">' +
        '<span class="kind ' + esc(a.kind) + '">' + esc(a.kind) + '</span>' +
        '<span class="label"></span><span class="state"></span><span class="pct status"></span>' +
        '<span class="pct bytes" hidden></span>' +
        '<div class="bar" role="progressbar" hidden><div></div></div></div>';
      var c = kids.get(a.id);
      if (c) h += "<ul>" + c.map(item).join("") + "</ul>";
      return h + "</li>";
    };
    $("tree").innerHTML = roots.length ? "<ul>" + roots.map(item).join("") + "</ul>"
      : '<div class="empty">no actors yet</div>';
  }
  $("tree").querySelectorAll(".row").forEach(function (row) {
    var a = actors.get(row.dataset.id);
    if (!a) return;
    row.classList.toggle("selected", a.id === selected);
    row.classList.toggle("finished", a.status !== "active");
    if (row.dataset.kind !== a.kind) {
      row.dataset.kind = a.kind;
      var k = row.querySelector(".kind");
      k.textContent = a.kind;
      k.className = "kind " + a.kind;
    }
    row.querySelector(".label").textContent = a.label;
    row.querySelector(".state").textContent = stateText(a.value);
    row.querySelector(".status").textContent = a.status !== "active" ? a.status : "";
    var bytes = row.querySelector(".bytes");
    var bar = row.querySelector(".bar");
    if (a.progress && a.progress.total > 0) {
      var pct = Math.min(100, Math.round(100 * a.progress.bytes / a.progress.total));
      bytes.hidden = false;
      bytes.textContent = a.progress.bytes + "/" + a.progress.total + " (" + pct + "%)";
      bar.hidden = false;
      bar.setAttribute("aria-valuenow", String(pct));
      bar.firstChild.style.width = pct + "%";
    } else {
      bytes.hidden = true;
      bar.hidden = true;
    }
  });
}

function select(id) {
  selected = id;
  location.hash = "actor=" + encodeURIComponent(id);
  renderTree();
  var a = actors.get(id);
  $("title").innerHTML = a ? esc(a.label) + " <small>" + esc(a.kind) + " · " + esc(a.id) +
    (a.machine ? " · machine " + esc(a.machine) : "") + "</small>" : "";
  loadDiagram(a);
  shownLog = [];
  held = [];
  $("log").innerHTML = "";
  fetch("/api/log?id=" + encodeURIComponent(id)).then(function (r) { return r.ok ? r.json() : []; })
    .then(function (entries) {
      if (selected !== id) return;
      var have = new Set(shownLog.map(function (e) { return e.seq; }));
      var merged = entries.filter(function (e) { return !have.has(e.seq); }).concat(shownLog);
      merged.sort(function (x, y) { return x.seq - y.seq; });
      shownLog = merged;
      renderLog();
    });
}

function loadDiagram(a) {
  var box = $("diagram");
  if (!a || !a.machine) {
    currentMachine = null;
    box.dataset.machine = "";
    box.innerHTML = '<div class="empty">' + (a ? "not a state machine" : "select an actor") + "</div>";
    return;
  }
  if (currentMachine === a.machine) { highlight(); return; }
  currentMachine = a.machine;
  box.innerHTML = '<div class="empty">drawing ' + esc(a.machine) + "…</div>";
  fetch("/api/diagram?key=" + encodeURIComponent(a.machine)).then(function (r) { return r.text(); })
    .then(function (svg) {
      if (currentMachine !== a.machine) return;
      box.innerHTML = svg;
      // Scale the whole chart to the pane (its viewBox keeps the proportions).
      var drawn = box.querySelector("svg");
      if (drawn) { drawn.removeAttribute("width"); drawn.removeAttribute("height"); }
      box.dataset.machine = a.machine;
      highlight();
    });
}

function highlight() {
  var a = actors.get(selected);
  var box = $("diagram");
  box.querySelectorAll("g.active").forEach(function (g) { g.classList.remove("active"); });
  if (!a || !a.active) return;
  a.active.forEach(function (sid) {
    var el = document.getElementById(PREFIX + sid);
    if (el && box.contains(el)) el.classList.add("active");
  });
}

function describe(e) {
  var ev = e.event || {};
  var type = typeof ev === "object" && ev && ev.type !== undefined ? String(ev.type) : JSON.stringify(ev);
  if (type.indexOf("xstate.after.") === 0) type = "after " + type.split(".")[2];
  if (e.type === "snapshot") {
    return "→ " + (stateText(e.value) || e.status) + (type && type !== '""' ? "  (on " + type + ")" : "") +
      (e.status !== "active" ? " [" + e.status + "]" : "");
  }
  var rest = {};
  if (ev && typeof ev === "object") Object.keys(ev).forEach(function (k) { if (k !== "type") rest[k] = ev[k]; });
  var extra = Object.keys(rest).length ? " " + JSON.stringify(rest) : "";
  return type + extra;
}

function line(e) {
  var who = selected ? "" : '<span class="who">' + esc((actors.get(e.id) || {}).label || e.id) + "</span>";
  return '<div data-type="' + e.type + '"><span class="t">' + time(e.t) + '</span><span class="k ' + e.type + '">' +
    (e.type === "snapshot" ? "state" : e.type === "emitted" ? "emit" : "event") + "</span>" + who +
    esc(describe(e)) + "</div>";
}

function matches(e) {
  var f = $("filter").value.trim().toLowerCase();
  if (!f) return true;
  return (e.type + " " + describe(e)).toLowerCase().indexOf(f) >= 0;
}

function renderLog() {
  var log = $("log");
  var stick = log.scrollTop + log.clientHeight >= log.scrollHeight - 4;
  log.innerHTML = shownLog.filter(matches).map(line).join("");
  if (stick) log.scrollTop = log.scrollHeight;
  $("pending").textContent = paused && held.length ? held.length + " new (paused)" : "";
}

function addLog(e) {
  if (selected && e.id !== selected) return;
  if (paused) { held.push(e); $("pending").textContent = held.length + " new (paused)"; return; }
  shownLog.push(e);
  if (shownLog.length > 1000) shownLog.splice(0, shownLog.length - 1000);
  if (!matches(e)) return;
  var log = $("log");
  var stick = log.scrollTop + log.clientHeight >= log.scrollHeight - 4;
  log.insertAdjacentHTML("beforeend", line(e));
  if (stick) log.scrollTop = log.scrollHeight;
}

var treeQueued = false;
function queueTree() {
  if (treeQueued) return;
  treeQueued = true;
  requestAnimationFrame(function () { treeQueued = false; renderTree(); });
}

function onMessage(m) {
  if (m.type === "hello") {
    actors.clear();
    m.actors.forEach(function (a) { actors.set(a.id, a); });
    renderTree();
    var want = decodeURIComponent((location.hash.match(/actor=([^&]+)/) || [])[1] || "");
    if (want && actors.has(want)) select(want);
    else if (selected && actors.has(selected)) select(selected);
    return;
  }
  if (m.type === "actor") {
    var old = actors.get(m.actor.id);
    actors.set(m.actor.id, Object.assign({}, old || {}, m.actor));
    queueTree();
    return;
  }
  if (m.type === "removed") {
    actors.delete(m.id);
    queueTree();
    return;
  }
  var a = actors.get(m.id);
  if (a && m.type === "snapshot") {
    a.status = m.status;
    if (m.value !== undefined) a.value = m.value;
    a.active = m.active;
    if (m.progress) a.progress = m.progress;
    if (m.id === selected) highlight();
    queueTree();
  }
  if (a && m.type === "emitted" && m.event && typeof m.event.bytes === "number") {
    a.progress = { bytes: m.event.bytes, total: m.event.total };
    queueTree();
  }
  addLog(m);
}

function connect() {
  ws = new WebSocket((location.protocol === "https:" ? "wss://" : "ws://") + location.host + "/ws");
  ws.onopen = function () { $("conn").textContent = "live"; $("conn").className = "up"; };
  ws.onmessage = function (ev) { onMessage(JSON.parse(ev.data)); };
  ws.onclose = function () {
    $("conn").textContent = "disconnected"; $("conn").className = "";
    setTimeout(connect, 1000);
  };
}

$("tree").addEventListener("click", function (ev) {
  var row = ev.target.closest(".row");
  if (row) select(row.dataset.id);
});
$("filter").addEventListener("input", renderLog);
$("pause").addEventListener("click", function () {
  paused = !paused;
  $("pause").textContent = paused ? "Resume" : "Pause";
  if (!paused) { shownLog = shownLog.concat(held); held = []; }
  renderLog();
});
$("clear").addEventListener("click", function () { shownLog = []; held = []; renderLog(); });
connect();
`;

/**
 * The inspector page: actor tree, statechart of the selected actor with its
 * active states highlighted, and a filterable, pausable event log.
 *
 * @example
 * ```ts
 * import { INSPECTOR_PAGE_HTML } from "./page.ts";
 * console.log(INSPECTOR_PAGE_HTML.startsWith("<!doctype html>")); // true
 * ```
 */
export const INSPECTOR_PAGE_HTML: string = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>AWP inspector</title>
<style>${STYLE}</style>
</head>
<body>
<header><h1>AWP inspector</h1><span id="conn">connecting</span></header>
<main>
<nav id="tree"><div class="empty">connecting…</div></nav>
<section id="view"><h2 id="title">select an actor</h2><div id="diagram"></div></section>
<section id="logpane">
<div id="logbar"><strong>Log</strong><input id="filter" placeholder="filter (e.g. msg, open, progress)">
<button id="pause">Pause</button><button id="clear">Clear</button><span id="pending"></span></div>
<div id="log"></div>
</section>
</main>
<script>${SCRIPT}</script>
</body>
</html>
`;

/**
 * A bridge page for users with internet access: it embeds Stately's hosted
 * inspector and feeds it this server's `/ws/stately` stream by postMessage.
 *
 * @example
 * ```ts
 * import { STATELY_BRIDGE_HTML } from "./page.ts";
 * console.log(STATELY_BRIDGE_HTML.includes("/ws/stately")); // true
 * ```
 */
export const STATELY_BRIDGE_HTML: string = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>AWP inspector (Stately)</title>
<style>html,body,iframe{margin:0;width:100%;height:100%;border:0}</style>
</head>
<body>
<iframe id="stately" src="https://stately.ai/inspect"></iframe>
<script>
"use strict";
var frame = document.getElementById("stately");
var ready = false;
var queue = [];
function deliver(m) { frame.contentWindow.postMessage(m, "https://stately.ai"); }
window.addEventListener("message", function (ev) {
  // The hosted inspector announces itself once it can take events.
  if (ev.origin === "https://stately.ai" && ev.data && ev.data.type === "@statelyai.connected") {
    ready = true;
    queue.splice(0).forEach(deliver);
  }
});
function connect() {
  var ws = new WebSocket((location.protocol === "https:" ? "wss://" : "ws://") + location.host + "/ws/stately");
  ws.onmessage = function (ev) {
    var m = JSON.parse(ev.data);
    if (ready) deliver(m); else queue.push(m);
  };
  ws.onclose = function () { setTimeout(connect, 1000); };
}
connect();
</script>
</body>
</html>
`;
