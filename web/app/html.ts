/**
 * Preact bound to htm, and the small formatting helpers every view uses.
 *
 * @module
 */

import { h, type VNode } from "npm:preact@^10.29.8";
import htm from "npm:htm@^3.1.1";

type Html = (strings: TemplateStringsArray, ...values: unknown[]) => VNode;

/** Tagged templates that build Preact vnodes (text is always text, never HTML). */
export const html: Html = (htm as unknown as { bind(factory: typeof h): Html })
  .bind(h);

/** "ed25519:AbCd…" → "AbCdEf12". */
export function shortKey(key: string): string {
  return key.replace(/^ed25519:/, "").slice(0, 8);
}

/** A peer's display name: alias, name, else its key prefix. */
export function displayName(
  p: { alias?: string; name?: string; key?: string; peerName?: string },
  key = p.key ?? "",
): string {
  return p.alias ?? p.name ?? p.peerName ?? shortKey(key);
}

/** 1536 → "1.5 KiB". */
export function bytes(n: number): string {
  if (n < 0) return "?";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  let v = n;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${i === 0 ? v : v.toFixed(v < 10 ? 1 : 0)} ${units[i]}`;
}

/** An ISO time or ms → "3s ago", "5m ago", "2h ago", or a date. */
export function ago(at: string | number, now = Date.now()): string {
  const t = typeof at === "number" ? at : Date.parse(at);
  if (!Number.isFinite(t)) return "";
  const s = Math.max(0, Math.round((now - t) / 1000));
  if (s < 60) return `${s}s ago`;
  if (s < 3600) return `${Math.floor(s / 60)}m ago`;
  if (s < 86400) return `${Math.floor(s / 3600)}h ago`;
  return new Date(t).toISOString().slice(0, 10);
}

/** ms since the epoch or ISO → "14:03:22". */
export function clock(at: string | number): string {
  const d = new Date(at);
  return Number.isNaN(d.getTime()) ? "" : d.toTimeString().slice(0, 8);
}

/** A thread state's colour class. */
export function stateClass(state: string | undefined): string {
  switch (state) {
    case "working":
      return "st-working";
    case "waiting":
      return "st-waiting";
    case "done":
      return "st-done";
    case "failed":
      return "st-failed";
    case "closed":
      return "st-closed";
    default:
      return "st-open";
  }
}
