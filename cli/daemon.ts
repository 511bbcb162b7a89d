/**
 * The daemon: one per home, held by an exclusive lock on
 * `${home}/daemon.lock`. It owns the identity, the listeners, every
 * connection and the store (one {@link Peer}), and answers the CLI over the
 * control socket (see {@link ./control.ts}).
 *
 * @module
 */

import { applyBounds, type BoundValues } from "./bound_flags.ts";
import { raiseFdLimit } from "../net/fd_limit.ts";
import { Peer, type PeerOptions } from "../peer/peer.ts";
import type { PeerEvent, ProgressEvent } from "../peer/peer_events.ts";
import { ENDING_STATES } from "../actors/thread_machine.ts";
import { InspectionHub } from "../inspector/inspection_hub.ts";
import { type InspectorServer, serveInspector } from "../inspector/server.ts";
import type { DashboardServer } from "../web/serve_dashboard.ts";
import type { LogEntry, ThreadRecord } from "../storage/store.ts";
import {
  ensureHomeDir,
  HomeNotDirectoryError,
  openStore,
  StoreDamagedError,
  StorePermissionsError,
  StoreUnavailableError,
} from "../storage/open_store.ts";
import { AddressError, parseAddress } from "../wire/address.ts";
import { grantHash } from "../wire/grant.ts";
import { REQUEST_MIMES } from "../profile/profile.ts";
import type { Part } from "../wire/types.ts";
import { ControlError, type ControlRequest, ControlServer } from "./control.ts";
import {
  DaemonConfigError,
  presenceFromEnv,
  readDaemonConfig,
} from "./daemon_config.ts";
import { ensureSocketDir, homePaths } from "./home.ts";
import type { SamvadFlagValues } from "./daemon_flags.ts";
import type {
  InboxItem,
  PeerSummary,
  ProgressItem,
  RequestResult,
  SendResult,
  StatusResult,
  WaitResult,
} from "./protocol.ts";
import { PeerNameError, resolvePeer } from "./resolve_peer.ts";
import { readTlsFiles } from "./tls_files.ts";

/** How the daemon starts. */
export interface DaemonOptions {
  home: string;
  name?: string;
  about?: string;
  /** Addresses to listen on; default: a Unix socket in the home and tcp:127.0.0.1:7000 (or the next free port). */
  listen?: string[];
  /** Largest blob sent or accepted, bytes. */
  maxBlobBytes?: number;
  /** Append log lines here instead of stderr (background mode). */
  log?: string;
  /** Print the identity and addresses on stdout once up (foreground mode). */
  announce?: boolean;
  /**
   * Serve the live statechart inspector: "" for 127.0.0.1 on a free port,
   * or `HOST:PORT`. Off when undefined.
   */
  inspect?: string;
  /** Issuer keys whose grants we honor (`--trust`). */
  trust?: string[];
  /** Admission policy (`--accept any|allowlist`). */
  accept?: "any" | "allowlist";
  /** Keys admitted under the allowlist (`--allow`). */
  allow?: string[];
  /** Capabilities fulfilled for granted peers (`--serve exec,fs:read,fs:write`). */
  serve?: string[];
  /** Directory fs requests are confined to and exec runs in (`--root`). */
  root?: string;
  /** Environment variable names exec passes on (`--exec-env-pass`). */
  execEnvPass?: string[];
  /** Bounds on what remotes can make us hold (`--max-connections` ...). */
  bounds?: BoundValues;
  /** Publish signed presence (`--presence`; else AWP_PRESENCE, else config.json). */
  presence?: boolean;
  /** False: do not forward other agents' presence (`--no-relay`). */
  relay?: boolean;
  /** A KV Connect URL to keep the state in (`--store`); token in DENO_KV_ACCESS_TOKEN. */
  store?: string;
  /** Extra Host names the inspector and the dashboard answer (behind a proxy or tunnel). */
  allowHosts?: string[];
  /** Serve the SAMVAD bridge from the start (`--samvad-listen`, `--samvad-skills`). */
  samvad?: SamvadFlagValues;
  /**
   * Serve the dashboard: "" for 127.0.0.1:7788 (or the next free port), or
   * `HOST:PORT`. Off when undefined.
   */
  web?: string;
  /** The dashboard may send, set states and grant. */
  webWrite?: boolean;
  /** hello.addr instead of the first listener's address (`--advertise`). */
  advertise?: string;
  /** WebSocket binding: CA files (PEM) trusted when dialing wss (`--ca`). */
  ca?: string[];
  /** WebSocket binding: TLS certificate and key files for wss listeners. */
  cert?: string;
  key?: string;
  /** Resolves when the daemon is up, with its status (tests, embedding). */
  onReady?(status: StatusResult): void;
}

/**
 * Capabilities `grant` accepts.
 *
 * @example
 * ```ts
 * import { GRANT_CAPS } from "./daemon.ts";
 * console.log(GRANT_CAPS.has("fs:read")); // true
 * ```
 */
export const GRANT_CAPS: ReadonlySet<string> = new Set([
  "exec",
  "fs:read",
  "fs:write",
  "introduce",
  "admin",
]);

const CONFIG_META = "cli:config";
const STORE_MARKER_META = "cli:store-marker";
const DEFAULT_TCP_PORT = 7000;
const DEFAULT_WEB_PORT = 7788;

interface Config {
  name?: string;
  about?: string;
  listen?: string[];
}

function oneLine(error: unknown): string {
  return (error instanceof Error ? error.message : String(error)).split(
    "\n",
  )[0];
}

function usage(message: string): ControlError {
  return new ControlError(message, 2);
}

function str(v: unknown): string | undefined {
  return typeof v === "string" && v !== "" ? v : undefined;
}

function progressItem(ev: ProgressEvent): ProgressItem {
  return {
    event: "progress",
    peer: ev.peer,
    ts: ev.ts,
    ref: ev.ref,
    dir: ev.dir,
    bytes: ev.bytes,
    total: ev.total,
    rate: ev.rate,
    status: ev.status,
    ...(ev.th ? { th: ev.th } : {}),
    ...(ev.name ? { name: ev.name } : {}),
  };
}

/**
 * Runs the daemon until `down`, SIGINT or SIGTERM. Resolves with the exit
 * code: 0 after a clean stop, 1 when it could not start (lock held,
 * storage unavailable, port in use), with one line on stderr/the log.
 *
 * @example
 * ```ts ignore
 * import { runDaemon } from "./daemon.ts";
 * Deno.exit(await runDaemon({ home: "/tmp/awp-home", announce: true }));
 * ```
 */
export async function runDaemon(options: DaemonOptions): Promise<number> {
  const daemon = new Daemon(options);
  return await daemon.run();
}

/**
 * The name a peer announces when none is given: who runs it and where, and
 * which home unless it is the default one, e.g. `ana@build1` or
 * `ana@build1:worker`, so two local peers are told apart.
 */
function defaultName(home: string): string {
  const user = Deno.env.get("USER") ?? Deno.env.get("LOGNAME") ??
    Deno.env.get("USERNAME") ?? "awp";
  const base = `${user}@${Deno.hostname()}`;
  const dir = home.split("/").filter(Boolean).at(-1) ?? "";
  return dir === "" || dir === ".awp" ? base : `${base}:${dir}`;
}

class Daemon {
  readonly #o: DaemonOptions;
  readonly #paths: ReturnType<typeof homePaths>;
  #peer!: Peer;
  #control?: ControlServer;
  #lock?: Deno.FsFile;
  #addrs: string[] = [];
  #name?: string;
  #listeners = new Set<(item: InboxItem, ev: PeerEvent) => void>();
  #notices: InboxItem[] = [];
  #stopped!: Promise<void>;
  #stop!: () => void;
  #isStopped = false;
  #hub?: InspectionHub;
  #inspector?: InspectorServer;
  #inspecting?: Promise<string>;
  #web?: DashboardServer;
  #webStarting?: Promise<DashboardServer>;
  #encoder = new TextEncoder();
  #presence = false;
  #relay = true;
  /** Every Peer event, for streams that want more than inbox items (progress). */
  #raw = new Set<(ev: PeerEvent) => void>();

  constructor(options: DaemonOptions) {
    this.#o = options;
    this.#paths = homePaths(options.home);
    this.#stopped = new Promise((r) =>
      this.#stop = () => {
        this.#isStopped = true;
        r();
      }
    );
  }

  #log(line: string): void {
    const text = `${new Date().toISOString()} ${line}\n`;
    try {
      if (this.#o.log) {
        Deno.writeTextFileSync(this.#o.log, text, {
          append: true,
          mode: 0o600,
        });
      } else Deno.stderr.writeSync(this.#encoder.encode(text));
    } catch { /* logging must not take the daemon down */ }
  }

  #fail(line: string): number {
    if (this.#o.log) this.#log(`error: ${line}`);
    Deno.stderr.writeSync(this.#encoder.encode(`awp: ${line}\n`));
    return 1;
  }

  async run(): Promise<number> {
    const home = this.#o.home;
    try {
      await ensureHomeDir(home);
      this.#lock = await Deno.open(this.#paths.lock, {
        create: true,
        read: true,
        write: true,
        mode: 0o600,
      });
    } catch (error) {
      if (error instanceof HomeNotDirectoryError) {
        return this.#fail(error.message);
      }
      return this.#fail(`cannot use home ${home}: ${oneLine(error)}`);
    }
    if (!(await this.#lock.tryLock(true))) {
      const pid = (await Deno.readTextFile(this.#paths.lock).catch(() => ""))
        .trim();
      this.#lock.close();
      return this.#fail(
        `a daemon is already running for ${home}${pid ? ` (pid ${pid})` : ""}`,
      );
    }
    await this.#lock.truncate(0);
    await this.#lock.write(this.#encoder.encode(`${Deno.pid}\n`));
    try {
      return await this.#runLocked();
    } finally {
      try {
        this.#lock.close();
      } catch { /* closed */ }
    }
  }

  async #runLocked(): Promise<number> {
    let listen: string[] | undefined;
    // Many peers need many descriptors; an fd shortage is survived anyway.
    raiseFdLimit();
    try {
      // Flags win, then the environment, then config.json, then what
      // earlier flags remembered (name, about, listen).
      const o = this.#o;
      const file = await readDaemonConfig(o.home);
      const envPresence = presenceFromEnv();
      this.#presence = o.presence
        ? true
        : envPresence ?? file.presence ?? false;
      this.#relay = o.relay === false ? false : file.relay ?? true;
      const trust = o.trust?.length ? o.trust : file.trust ?? [];
      const serve = o.serve?.length ? o.serve : file.serve ?? [];
      const root = o.root ?? file.root;
      const peerOpts: PeerOptions = {
        home: o.home,
        maxBlobBytes: o.maxBlobBytes,
        ...(trust.length ? { trust } : {}),
        ...(o.accept ? { accept: o.accept } : {}),
        ...(o.allow?.length ? { allow: o.allow } : {}),
        ...(serve.length ? { serve } : {}),
        ...(root ? { root } : {}),
        ...(o.execEnvPass ? { execEnvPass: o.execEnvPass } : {}),
        ...(this.#presence ? { presence: true } : {}),
        ...(this.#relay ? {} : { relayPresence: false }),
        ...(o.advertise ? { addr: o.advertise } : {}),
        ...await readTlsFiles(o).catch((error) => {
          throw new DaemonConfigError(error.message);
        }),
      };
      applyBounds(peerOpts, o.bounds);
      let config: Config = {};
      let marker: string | undefined;
      {
        // Name/about go into hello, so read the remembered config first.
        if (o.store && !Deno.env.get("DENO_KV_ACCESS_TOKEN")) {
          return this.#fail(
            "--store needs DENO_KV_ACCESS_TOKEN in the environment",
          );
        }
        const probe = await openStore(
          o.store ? { url: o.store } : { home: o.home },
        );
        config = await probe.getMeta<Config>(CONFIG_META) ?? {};
        const next: Config = {
          ...config,
          ...(o.name !== undefined ? { name: o.name } : {}),
          ...(o.about !== undefined ? { about: o.about } : {}),
        };
        if (JSON.stringify(next) !== JSON.stringify(config)) {
          await probe.setMeta(CONFIG_META, next);
        }
        if (o.store) {
          // Proves below that the Peer really opened this store.
          marker = crypto.randomUUID();
          await probe.setMeta(STORE_MARKER_META, marker);
        }
        config = next;
        probe.close();
      }
      this.#name = o.name ?? file.name ?? config.name ??
        defaultName(o.home);
      const about = o.about ?? file.about ?? config.about;
      listen = o.listen?.length ? o.listen : file.listen ?? config.listen;
      if (o.inspect !== undefined) this.#hub = new InspectionHub();
      this.#peer = await Peer.open({
        ...peerOpts,
        ...(o.store ? { url: o.store } : {}),
        name: this.#name,
        about,
        ...(this.#hub ? { inspect: this.#hub } : {}),
      } as PeerOptions);
      if (
        marker !== undefined &&
        await this.#peer.store.getMeta<string>(STORE_MARKER_META) !== marker
      ) {
        await this.#peer.close();
        return this.#fail(
          "--store: this Peer cannot keep its state in a remote store yet (Peer.open has no url option)",
        );
      }
    } catch (error) {
      if (
        error instanceof StoreUnavailableError ||
        error instanceof StoreDamagedError ||
        error instanceof StorePermissionsError
      ) {
        return this.#fail(error.message);
      }
      if (error instanceof DaemonConfigError) return this.#fail(error.message);
      return this.#fail(
        `cannot open the store ${
          this.#o.store ? `at ${this.#o.store}` : `in ${this.#o.home}`
        }: ${oneLine(error)}`,
      );
    }
    try {
      try {
        await this.#listenAll(listen);
      } catch (error) {
        await this.#peer.close();
        return this.#fail(oneLine(error));
      }
      // Remembered only once bound: a port in use must not break every later `up`.
      await this.#rememberListen();
      if (this.#hub) {
        try {
          await this.#serveInspector(this.#o.inspect ?? "", []);
        } catch (error) {
          await this.#peer.close();
          return this.#fail(oneLine(error));
        }
      }
      this.#control = await ControlServer.listen(
        this.#paths.control,
        (req, emit, signal) => this.#handle(req, emit, signal),
      );
      const pump = this.#pump();
      // After the pump: the first event stream gets the events since open.
      if (this.#o.web !== undefined) {
        try {
          await this.#serveWeb(this.#o.web, this.#o.webWrite === true, []);
        } catch (error) {
          await this.#control.close();
          await this.#inspector?.close();
          await this.#peer.close();
          await pump;
          return this.#fail(oneLine(error));
        }
      }
      if (this.#o.samvad) {
        // After the pump: the first events() subscriber gets the early events.
        try {
          await this.#samvad(
            { action: "serve", ...this.#o.samvad },
            () => Promise.resolve(),
          );
        } catch (error) {
          await this.#control.close();
          await this.#web?.close().catch(() => {});
          await this.#inspector?.close();
          await this.#peer.close();
          await pump;
          return this.#fail(`samvad: ${oneLine(error)}`);
        }
      }
      const onSignal = () => this.#stop();
      Deno.addSignalListener("SIGINT", onSignal);
      Deno.addSignalListener("SIGTERM", onSignal);
      this.#log(
        `daemon up: ${this.#peer.key} on ${
          this.#addrs.join(" ")
        } (pid ${Deno.pid})`,
      );
      const status = await this.#status();
      if (this.#o.announce) {
        console.log(`${this.#name} ${this.#peer.key}`);
        for (const a of this.#addrs) console.log(`  ${a}`);
        if (this.#inspector) console.log(`inspector ${this.#inspector.url}`);
        if (this.#web) console.log(`web ${this.#web.url}`);
      }
      this.#o.onReady?.(status);
      await this.#stopped;
      Deno.removeSignalListener("SIGINT", onSignal);
      Deno.removeSignalListener("SIGTERM", onSignal);
      this.#log("daemon stopping");
      await this.#control.close();
      await this.#inspector?.close();
      await this.#web?.close();
      await this.#peer.close();
      await pump;
      this.#log("daemon stopped");
      return 0;
    } catch (error) {
      await this.#control?.close();
      await this.#inspector?.close().catch(() => {});
      await this.#web?.close().catch(() => {});
      await this.#peer.close().catch(() => {});
      return this.#fail(`daemon failed: ${oneLine(error)}`);
    }
  }

  /**
   * Serves the inspector on `where` ("" for 127.0.0.1 on a free port, or
   * HOST:PORT), attaching a hub to the Peer first when it has none (late
   * attach: until now nothing was recorded). Throws one line.
   */
  async #serveInspector(where: string, allowHosts: string[]): Promise<string> {
    const colon = where.lastIndexOf(":");
    const hostname = colon > 0
      ? where.slice(0, colon).replace(/^\[|\]$/g, "")
      : where || "127.0.0.1";
    const port = colon > 0 ? Number(where.slice(colon + 1)) : 0;
    if (!Number.isInteger(port) || port < 0 || port > 65535) {
      throw usage(`bad --inspect address "${where}": use HOST:PORT`);
    }
    this.#hub = this.#peer.inspect(this.#hub);
    try {
      this.#inspector = await serveInspector(this.#hub, {
        hostname,
        port,
        allowHosts: [...(this.#o.allowHosts ?? []), ...allowHosts],
      });
    } catch (error) {
      throw new ControlError(
        `cannot serve the inspector on ${where || "127.0.0.1"}: ${
          oneLine(error)
        }`,
      );
    }
    return this.#inspector.url;
  }

  /** The `inspect` op: the inspector's URL, serving it first if need be. */
  async #inspect(a: Record<string, unknown>): Promise<{ url: string }> {
    if (this.#inspector) return { url: this.#inspector.url };
    // Two racing requests share one server.
    this.#inspecting ??= this.#serveInspector(
      str(a.addr) ?? "",
      Array.isArray(a.allowHosts) ? a.allowHosts.map(String) : [],
    ).finally(() => this.#inspecting = undefined);
    return { url: await this.#inspecting };
  }

  async #rememberListen(): Promise<void> {
    const listen = this.#o.listen;
    if (!listen?.length) return;
    const config = await this.#peer.store.getMeta<Config>(CONFIG_META) ?? {};
    if (JSON.stringify(config.listen) === JSON.stringify(listen)) return;
    await this.#peer.store.setMeta(CONFIG_META, { ...config, listen });
  }

  /**
   * Serves the dashboard on `where` ("" for 127.0.0.1:7788 or the next
   * free port, or HOST:PORT). Throws one line.
   */
  async #serveWeb(
    where: string,
    write: boolean,
    allowHosts: string[],
  ): Promise<DashboardServer> {
    const colon = where.lastIndexOf(":");
    const hostname = colon > 0
      ? where.slice(0, colon).replace(/^\[|\]$/g, "")
      : where || "127.0.0.1";
    const port = colon > 0 ? Number(where.slice(colon + 1)) : DEFAULT_WEB_PORT;
    if (!Number.isInteger(port) || port < 0 || port > 65535) {
      throw usage(`bad --web address "${where}": use HOST:PORT`);
    }
    // Loaded only when asked for: the page is a large embedded bundle.
    const { serveDashboard } = await import("../web/serve_dashboard.ts");
    const source = {
      peer: this.#peer,
      self: () => ({
        key: this.#peer.key,
        ...(this.#name ? { name: this.#name } : {}),
        addrs: this.#addrs,
      }),
      counts: () => this.#summaries(),
    };
    // The default port moves on when taken (two homes on one machine).
    const tries = colon > 0 ? 1 : 20;
    for (let i = 0;; i++) {
      try {
        this.#web = await serveDashboard(source, {
          hostname,
          port: port === 0 ? 0 : port + i,
          write,
          allowHosts: [...(this.#o.allowHosts ?? []), ...allowHosts],
        });
        return this.#web;
      } catch (error) {
        if (i + 1 < tries && error instanceof Deno.errors.AddrInUse) continue;
        throw new ControlError(
          `cannot serve the dashboard on ${where || `127.0.0.1:${port}`}: ${
            oneLine(error)
          }`,
        );
      }
    }
  }

  /** The `web` op: the dashboard's URL, serving it first if need be. */
  async #webOp(a: Record<string, unknown>): Promise<unknown> {
    const write = a.write === true;
    if (!this.#web) {
      // Two racing requests share one server.
      this.#webStarting ??= this.#serveWeb(
        str(a.addr) ?? "",
        write,
        Array.isArray(a.allowHosts) ? a.allowHosts.map(String) : [],
      ).finally(() => this.#webStarting = undefined);
      await this.#webStarting;
    }
    const web = this.#web!;
    return {
      url: web.url,
      write: web.write,
      ...(write && !web.write
        ? {
          note:
            "note: the dashboard is already served read-only; for --write: awp down; awp web --write",
        }
        : {}),
    };
  }

  async #listenAll(explicit: string[] | undefined): Promise<void> {
    if (explicit && explicit.length > 0) {
      for (const addr of explicit) {
        parseAddress(addr);
        this.#addrs.push(await this.#peer.listen(addr));
      }
      return;
    }
    // Ours alone: we hold the home's lock, so a socket file left there is stale.
    await ensureSocketDir(this.#paths.peerSocket);
    await Deno.remove(this.#paths.peerSocket).catch(() => {});
    this.#addrs.push(await this.#peer.listen(`unix:${this.#paths.peerSocket}`));
    await Deno.chmod(this.#paths.peerSocket, 0o600); // like every file in the home
    for (let port = DEFAULT_TCP_PORT; port < DEFAULT_TCP_PORT + 100; port++) {
      try {
        this.#addrs.push(await this.#peer.listen(`tcp:127.0.0.1:${port}`));
        return;
      } catch (error) {
        if (!/in use/i.test(oneLine(error))) throw error;
      }
    }
  }

  /** Turns peer events into inbox items for streams and notices. */
  async #pump(): Promise<void> {
    for await (const ev of this.#peer.events()) {
      this.#logEvent(ev);
      for (const l of this.#raw) l(ev);
      try {
        const item = await this.#toItem(ev);
        if (!item) continue;
        if (item.event === "notice" && item.kind !== "error") {
          this.#notices.push(item);
          if (this.#notices.length > 1000) this.#notices.shift();
        }
        for (const l of this.#listeners) l(item, ev);
      } catch (error) {
        this.#log(`event handling failed: ${oneLine(error)}`);
      }
    }
  }

  /** One log line per admission decision and per served request. */
  #logEvent(ev: PeerEvent): void {
    if (ev.type === "admission") {
      this.#log(
        `admission ${
          ev.admitted ? "admitted" : "refused"
        } ${ev.peer} (${ev.why})${
          ev.caps.length ? ` caps ${ev.caps.join(",")}` : ""
        }${ev.detail ? `: ${ev.detail}` : ""}`,
      );
    } else if (ev.type === "served") {
      this.#log(
        `served ${ev.cap} for ${ev.peer} re ${ev.re}: ${
          ev.ok ? "ok" : `failed (${ev.error ?? "error"})`
        } in ${ev.duration_ms}ms: ${ev.request.replace(/\s+/g, " ")}`,
      );
    } else if (ev.type === "presence" && ev.kind !== "updated") {
      this.#log(
        `presence ${ev.kind} ${ev.peer}${ev.name ? ` (${ev.name})` : ""}${
          ev.detail ? `: ${ev.detail}` : ""
        }`,
      );
    }
  }

  #names = new Map<string, string | undefined>();

  async #nameOf(key: string): Promise<string | undefined> {
    if (!this.#names.has(key)) {
      const rec = await this.#peer.store.peer(key);
      this.#names.set(key, rec?.alias ?? rec?.name);
    }
    return this.#names.get(key);
  }

  async #toItem(ev: PeerEvent): Promise<InboxItem | undefined> {
    const base = { dir: "in" as const, peer: ev.peer, ts: ev.ts };
    const peerName = ev.peer ? await this.#nameOf(ev.peer) : undefined;
    const named = peerName ? { peerName } : {};
    switch (ev.type) {
      case "message":
        return {
          event: "message",
          ...base,
          ...named,
          id: ev.id,
          th: ev.th,
          ts: ev.message.ts,
          text: ev.text,
          parts: ev.parts,
          blobs: ev.blobs,
          ...(ev.subject ? { subject: ev.subject } : {}),
          ...(ev.re ? { re: ev.re } : {}),
        };
      case "state":
        return {
          event: "state",
          ...base,
          ...named,
          id: ev.id,
          th: ev.th,
          state: ev.state,
          ...(ev.note ? { note: ev.note } : {}),
        };
      case "connected":
        this.#names.delete(ev.peer);
        return {
          event: "connected",
          ...base,
          ...(ev.name ? { peerName: ev.name } : named),
        };
      case "disconnected":
        return { event: "disconnected", ...base, ...named, detail: ev.reason };
      case "bye":
        return {
          event: "notice",
          kind: "bye",
          ...base,
          ...named,
          ...(ev.reason ? { detail: ev.reason } : {}),
        };
      case "grant":
        return {
          event: "notice",
          kind: "grant",
          ...base,
          ...named,
          detail: ev.valid
            ? `granted ${ev.grant.caps.join(",")} until ${ev.grant.exp}`
            : `invalid grant: ${ev.reason}`,
        };
      case "introduced":
        return {
          event: "notice",
          kind: "introduced",
          ...base,
          ...named,
          detail: `${ev.name ?? ""} ${ev.key}${
            ev.address ? ` at ${ev.address}` : ""
          }`.trim(),
        };
      case "blob":
        if (ev.dir === "out" && ev.status === "refused") {
          return {
            event: "notice",
            kind: "blob_refused",
            ...base,
            ...named,
            ...(ev.th ? { th: ev.th } : {}),
            detail: `${ev.name ?? ev.ref}: ${ev.detail ?? "refused"}`,
          };
        }
        return undefined;
      case "error":
        return {
          event: "notice",
          kind: "error",
          ...base,
          ...named,
          detail: `${ev.code}: ${ev.detail}`,
        };
      default:
        return undefined;
    }
  }

  async #handle(
    req: ControlRequest,
    emit: (item: unknown) => Promise<void>,
    signal: AbortSignal,
  ): Promise<unknown> {
    const a = req.args;
    switch (req.op) {
      case "ping":
        return { pid: Deno.pid };
      case "status":
        return await this.#status();
      case "inspect":
        return await this.#inspect(a);
      case "web":
        return await this.#webOp(a);
      case "down":
        setTimeout(() => this.#stop(), 20);
        return { stopping: true };
      case "listen": {
        const addr = str(a.addr);
        if (addr) {
          try {
            parseAddress(addr);
          } catch (error) {
            throw usage(oneLine(error));
          }
          const real = await this.#peer.listen(addr);
          if (!this.#addrs.includes(real)) this.#addrs.push(real);
        }
        return { key: this.#peer.key, addrs: this.#addrs };
      }
      case "connect":
        return await this.#connect(a);
      case "send":
        return await this.#send(a, emit, signal);
      case "state":
        return await this.#state(a);
      case "threads":
        return { threads: await this.#threads(str(a.peer), a.open === true) };
      case "peers":
        return { peers: await this.#summaries() };
      case "blobs": {
        const peer = str(a.peer) ? await this.#key(str(a.peer)!) : undefined;
        const blobs = await this.#peer.store.blobs(peer);
        return { blobs: blobs.sort((x, y) => y.updated - x.updated) };
      }
      case "grant":
        return await this.#grant(a);
      case "grants":
        return await this.#grants();
      case "revoke":
        return await this.#revoke(a);
      case "introduce": {
        const to = await this.#key(str(a.to) ?? "");
        const other = await this.#key(str(a.peer) ?? "");
        const caps = Array.isArray(a.caps) ? a.caps.map(String) : [];
        for (const c of caps) {
          if (!GRANT_CAPS.has(c)) throw usage(`unknown capability "${c}"`);
        }
        const r = await this.#peer.introduce(to, other, {
          grantCaps: caps,
          ttlMs: typeof a.ttlMs === "number" ? a.ttlMs : undefined,
          thread: str(a.thread),
        });
        return { ...r, to, peer: other };
      }
      case "bye": {
        const key = await this.#key(str(a.to) ?? "");
        const connected = (await this.#peer.peers()).some((p) =>
          p.key === key && p.connected
        );
        // Away or not, it is not redialed until something new is sent.
        await this.#peer.bye(key, str(a.reason));
        return { key, name: await this.#nameOf(key), connected };
      }
      case "alias":
        return await this.#alias(a);
      case "presence":
        return await this.#presenceList();
      case "share":
        return await this.#share(a);
      case "private": {
        const th = str(a.thread);
        if (!th) throw usage("missing thread");
        const key = str(a.peer)
          ? await this.#key(str(a.peer)!)
          : await this.#threadPeer(th);
        const r = await this.#peer.private(key, th);
        return { ...r, peer: key, peerName: await this.#nameOf(key) };
      }
      case "mirrored":
        return await this.#mirrored(a);
      case "tail":
        return await this.#tail(a, emit, signal);
      case "wait":
        return await this.#wait(a, emit, signal);
      case "read":
        return await this.#read(a);
      case "samvad":
        return await this.#samvad(a, emit);
      case "request":
        return await this.#request(a, signal);
      default:
        throw usage(`unknown control op "${req.op}"`);
    }
  }

  /** The SAMVAD bridge and calls (loaded on first use: ajv, jose). */
  async #samvad(
    a: Record<string, unknown>,
    emit: (item: unknown) => Promise<void>,
  ): Promise<unknown> {
    const { samvadOp } = await import("../samvad/daemon_op.ts");
    return await samvadOp(this.#peer, a, emit, (line) => this.#log(line));
  }

  /** Resolves a peer name to a known key (addresses included). */
  async #key(query: string): Promise<string> {
    if (query === "") throw usage("missing peer");
    const records = await this.#peer.peers();
    try {
      const r = resolvePeer(query, records);
      if (r.kind === "peer") return r.peer.key;
      parseAddress(r.address);
      throw new ControlError(
        `no known peer at ${r.address}: run awp connect ${r.address} first`,
      );
    } catch (error) {
      if (error instanceof PeerNameError || error instanceof AddressError) {
        throw new ControlError(error.message);
      }
      throw error;
    }
  }

  async #connect(a: Record<string, unknown>): Promise<unknown> {
    const target = str(a.target);
    if (!target) throw usage("missing address");
    const timeoutMs = typeof a.timeoutMs === "number" ? a.timeoutMs : 60_000;
    const records = await this.#peer.peers();
    let address: string;
    let r;
    try {
      r = resolvePeer(target, records);
    } catch (error) {
      throw new ControlError(oneLine(error));
    }
    if (r.kind === "peer") {
      const known = records.find((p) => p.key === r.peer.key)!;
      if (known.connected) {
        return {
          key: known.key,
          name: known.alias ?? known.name,
          already: true,
        };
      }
      if (known.addresses.length === 0) {
        throw new ControlError(`no address known for ${target}`);
      }
      address = known.addresses[0];
    } else {
      address = r.address;
      try {
        parseAddress(address);
      } catch (error) {
        throw usage(oneLine(error));
      }
    }
    let timer: ReturnType<typeof setTimeout> | undefined;
    let key: string;
    try {
      key = await this.#peer.connect(address);
    } catch (error) {
      // Nothing answers (yet): keep dialing in the background, as a dialer
      // does; the command reports it, or waits for it with `wait`.
      const dialing = this.#keepDialing(address);
      if (a.wait !== true) {
        return { address, dialing: true, error: oneLine(error) };
      }
      try {
        key = await Promise.race([
          dialing,
          new Promise<never>((_, reject) => {
            timer = setTimeout(
              () =>
                reject(
                  new ControlError(
                    `could not connect to ${address} within ${
                      timeoutMs / 1000
                    }s (still dialing)`,
                    2,
                  ),
                ),
              timeoutMs,
            );
          }),
        ]);
      } catch (error) {
        if (error instanceof ControlError) throw error;
        throw new ControlError(
          `cannot connect to ${address}: ${oneLine(error)}`,
        );
      } finally {
        clearTimeout(timer);
      }
    }
    this.#names.delete(key);
    return { key, name: await this.#nameOf(key), already: false };
  }

  /** Addresses being dialed until they answer, by `awp connect`. */
  #dialing = new Map<string, Promise<string>>();

  #keepDialing(address: string): Promise<string> {
    let dialing = this.#dialing.get(address);
    if (!dialing) {
      dialing = this.#peer.connect(address, { retry: true });
      this.#dialing.set(address, dialing);
      const done = () => this.#dialing.delete(address);
      dialing.then(done, done);
    }
    return dialing;
  }

  /** The one peer that has thread `th`. */
  async #threadPeer(th: string): Promise<string> {
    const matches = (await this.#peer.threads()).filter((t) => t.th === th);
    if (matches.length === 1) return matches[0].peer;
    if (matches.length === 0) {
      throw new ControlError(`unknown thread "${th}": name the peer too`);
    }
    throw new ControlError(
      `thread "${th}" exists with ${matches.length} peers: name the peer too`,
    );
  }

  async #unreadNote(key: string, th: string): Promise<string | undefined> {
    const rec = await this.#peer.store.thread(key, th);
    if (!rec || rec.unread === 0) return undefined;
    const age = Math.round((Date.now() - Date.parse(rec.updated)) / 1000);
    return `note: ${rec.unread} unread from ${
      (await this.#nameOf(key)) ?? key.slice(0, 16)
    } in this thread (${age}s ago): awp read ${th}`;
  }

  async #send(
    a: Record<string, unknown>,
    emit: (item: unknown) => Promise<void>,
    signal: AbortSignal,
  ): Promise<SendResult> {
    const words = Array.isArray(a.words) ? a.words.map(String) : [];
    const thread = str(a.thread);
    let key: string;
    if (str(a.to)) key = await this.#key(str(a.to)!);
    else if (thread) {
      key = "";
      if (words.length >= 2) {
        try {
          key = await this.#key(words[0]);
          words.shift();
        } catch { /* the first word is text */ }
      }
      if (!key) key = await this.#threadPeer(thread);
    } else {
      if (words.length === 0) throw usage("missing peer and text");
      key = await this.#key(words.shift()!);
    }
    const parts = (Array.isArray(a.parts) ? a.parts : []) as Part[];
    const files = Array.isArray(a.files) ? a.files.map(String) : [];
    const text = words.join(" ");
    if (text === "" && parts.length === 0 && files.length === 0) {
      throw usage("nothing to send: give some text");
    }
    let subject = str(a.subject);
    if (!subject && !thread && text) {
      subject = text.split("\n")[0].slice(0, 120);
    }
    const note = thread ? await this.#unreadNote(key, thread) : undefined;
    const doSend = async (
      flush?: (keep: (i: ProgressItem) => boolean) => Promise<void>,
    ): Promise<SendResult> => {
      const sent = await this.#peer.send(key, text, {
        ...(thread ? { thread } : {}),
        ...(subject ? { subject } : {}),
        ...(str(a.re) ? { re: str(a.re) } : {}),
        parts,
        files,
      });
      const blobs = files.length === 0
        ? []
        : (await this.#peer.store.blobs(key))
          .filter((b) => b.dir === "out" && b.th === sent.th)
          .map((b) => ({
            ref: b.ref,
            size: b.size,
            ...(b.name ? { name: b.name } : {}),
          }));
      const after = flush && blobs.length
        ? await this.#ackWithProgress(key, sent, blobs, a.waitAckMs, {
          flush,
          signal,
        })
        : await this.#afterSend(key, sent, a.waitAckMs);
      return {
        ...after,
        ...(note ? { note } : {}),
        ...(blobs.length ? { blobs } : {}),
      };
    };
    if (a.progress === true && files.length > 0) {
      return await this.#withProgress(
        (ev) => ev.dir === "out" && ev.peer === key,
        emit,
        doSend,
      );
    }
    return await doSend();
  }

  /**
   * Waits for the ack of a send that carries blobs, streaming their
   * progress, until acked, the peer is gone, the client left or
   * `waitAckMs` (when given) ran out.
   */
  async #ackWithProgress(
    key: string,
    sent: { id: string; th: string },
    blobs: Array<{ ref: string }>,
    waitAckMs: unknown,
    io: {
      flush: (keep: (i: ProgressItem) => boolean) => Promise<void>;
      signal: AbortSignal;
    },
  ): Promise<SendResult> {
    const refs = new Set(blobs.map((b) => b.ref));
    const deadline = typeof waitAckMs === "number"
      ? Date.now() + waitAckMs
      : Infinity;
    const isConnected = async () =>
      (await this.#peer.peers()).some((p) => p.key === key && p.connected);
    let connected = await isConnected();
    let acked = false;
    while (connected && !io.signal.aborted && !this.#isStopped) {
      try {
        await this.#peer.waitAck(sent.id, {
          timeoutMs: Math.max(1, Math.min(250, deadline - Date.now())),
        });
        acked = true;
      } catch { /* not yet */ }
      await io.flush((i) => refs.has(i.ref));
      if (acked || Date.now() >= deadline) break;
      connected = await isConnected();
    }
    return {
      id: sent.id,
      th: sent.th,
      thread: sent.th,
      peer: key,
      acked,
      connected,
    };
  }

  async #state(a: Record<string, unknown>): Promise<SendResult> {
    const th = str(a.thread);
    const state = str(a.state);
    if (!th || !state) throw usage("missing thread or state");
    const key = str(a.to)
      ? await this.#key(str(a.to)!)
      : await this.#threadPeer(th);
    const note = str(a.note);
    const sent = await this.#peer.setState(key, th, state, note);
    const unread = await this.#unreadNote(key, th);
    return {
      ...(await this.#afterSend(key, sent, a.waitAckMs)),
      ...(unread ? { note: unread } : {}),
    };
  }

  async #afterSend(
    key: string,
    sent: { id: string; th: string },
    waitAckMs: unknown,
  ): Promise<SendResult> {
    const connected = (await this.#peer.peers()).some((p) =>
      p.key === key && p.connected
    );
    const wait = typeof waitAckMs === "number"
      ? waitAckMs
      : connected
      ? 1000
      : 0;
    let acked = false;
    if (wait > 0) {
      try {
        await this.#peer.waitAck(sent.id, { timeoutMs: wait });
        acked = true;
      } catch { /* not yet */ }
    }
    return {
      id: sent.id,
      th: sent.th,
      thread: sent.th,
      peer: key,
      acked,
      connected,
    };
  }

  async #threads(peerQuery: string | undefined, open: boolean) {
    const peer = peerQuery ? await this.#key(peerQuery) : undefined;
    const all = await this.#peer.threads();
    const refused = new Map<string, string>();
    for (const p of new Set(all.map((t) => t.peer))) {
      if (peer && p !== peer) continue;
      for (const e of await this.#refusals(p)) {
        const m = JSON.parse(e.line) as { code?: unknown; detail?: unknown };
        refused.set(
          `${p} ${e.th}`,
          `${String(m.code)}${
            typeof m.detail === "string" ? `: ${m.detail}` : ""
          }`,
        );
      }
    }
    const rows = [];
    for (const t of all) {
      if (peer && t.peer !== peer) continue;
      if (
        open &&
        (ENDING_STATES.has(t.mine?.state ?? "") ||
          ENDING_STATES.has(t.theirs?.state ?? ""))
      ) continue;
      rows.push({
        ...t,
        peerName: await this.#nameOf(t.peer),
        my_since: t.mine?.ts,
        their_since: t.theirs?.ts,
        ...(refused.has(`${t.peer} ${t.th}`)
          ? { refused: refused.get(`${t.peer} ${t.th}`) }
          : {}),
      });
    }
    return rows.sort((x, y) => y.updated.localeCompare(x.updated));
  }

  async #summaries(): Promise<PeerSummary[]> {
    const threads = await this.#peer.threads();
    const grants = await this.#peer.store.grants("issued");
    const now = Date.now();
    const out: PeerSummary[] = [];
    for (const p of await this.#peer.peers()) {
      const mine = threads.filter((t) => t.peer === p.key);
      const caps = new Set<string>();
      for (const g of grants) {
        if (g.grant.sub !== p.key || Date.parse(g.grant.exp) <= now) continue;
        if (await this.#peer.store.isRevoked(g.hash)) continue;
        for (const c of g.grant.caps) caps.add(c);
      }
      out.push({
        key: p.key,
        ...(p.name ? { name: p.name } : {}),
        ...(p.alias ? { alias: p.alias } : {}),
        ...(p.about ? { about: p.about } : {}),
        connected: p.connected,
        ...(p.waking ? { waking: true } : {}),
        addresses: p.addresses,
        queued: (await this.#peer.store.outbox(p.key)).length,
        openThreads: mine.filter((t) =>
          !ENDING_STATES.has(t.mine?.state ?? "") &&
          !ENDING_STATES.has(t.theirs?.state ?? "")
        )
          .length,
        unread: mine.reduce((n, t) =>
          n + t.unread, 0),
        caps: [...caps],
        ...(p.unreachable ? { unreachable: p.unreachable } : {}),
      });
    }
    return out;
  }

  async #status(): Promise<StatusResult> {
    const peers = await this.#summaries();
    return {
      key: this.#peer.key,
      name: this.#name,
      home: this.#o.home,
      pid: Deno.pid,
      addrs: this.#addrs,
      peers,
      unread: peers.reduce((n, p) => n + p.unread, 0),
      notices: this.#notices.length,
      ...(this.#inspector ? { inspector: this.#inspector.url } : {}),
      ...(this.#web ? { web: this.#web.url } : {}),
      queued: peers.reduce((n, p) => n + p.queued, 0),
    };
  }

  async #grant(a: Record<string, unknown>): Promise<unknown> {
    const key = await this.#key(str(a.to) ?? "");
    const caps = Array.isArray(a.caps) ? a.caps.map(String) : [];
    if (caps.length === 0) throw usage("missing capability");
    for (const c of caps) {
      if (!GRANT_CAPS.has(c)) {
        throw usage(
          `unknown capability "${c}": use ${[...GRANT_CAPS].join(", ")}`,
        );
      }
    }
    const ttlMs = typeof a.ttlMs === "number" ? a.ttlMs : 3_600_000;
    if (ttlMs <= 0) throw usage("--ttl must be positive");
    const grant = await this.#peer.grant(key, caps, { ttlMs });
    return { hash: await grantHash(grant), grant };
  }

  async #grants(): Promise<unknown> {
    const out = [];
    for (const g of await this.#peer.store.grants()) {
      out.push({
        ...g,
        revoked: await this.#peer.store.isRevoked(g.hash),
        issName: g.grant.iss === this.#peer.key
          ? this.#name
          : await this.#nameOf(g.grant.iss),
        subName: g.grant.sub === this.#peer.key
          ? this.#name
          : await this.#nameOf(g.grant.sub),
      });
    }
    return { grants: out };
  }

  async #revoke(a: Record<string, unknown>): Promise<unknown> {
    const q = str(a.hash);
    if (!q) throw usage("missing grant hash");
    const hits = (await this.#peer.store.grants()).filter((g) =>
      g.hash === q || (q.length >= 6 && g.hash.startsWith(q))
    );
    const hashes = [...new Set(hits.map((g) => g.hash))];
    if (hashes.length === 0) throw new ControlError(`no grant with hash ${q}`);
    if (hashes.length > 1) {
      throw new ControlError(`ambiguous grant hash ${q}: give more characters`);
    }
    await this.#peer.store.revoke(hashes[0]);
    return { revoked: hashes[0] };
  }

  async #alias(a: Record<string, unknown>): Promise<unknown> {
    const alias = str(a.alias);
    if (!alias) throw usage("missing alias");
    if (/^(tcp|unix):/.test(alias) || alias.startsWith("ed25519:")) {
      throw usage(`bad alias "${alias}"`);
    }
    const key = await this.#key(str(a.peer) ?? "");
    const records = await this.#peer.store.peers();
    const taken = records.find((p) => p.alias === alias && p.key !== key);
    if (taken) {
      throw new ControlError(
        `alias "${alias}" is already used for ${taken.key}`,
      );
    }
    const rec = records.find((p) => p.key === key)!;
    await this.#peer.store.putPeer({ ...rec, alias });
    this.#names.delete(key);
    return { key, alias };
  }

  // ---- presence and conversation sharing ----

  async #presenceList(): Promise<unknown> {
    const now = Date.now();
    const docs = [];
    for (const r of this.#peer.presence()) {
      docs.push({
        origin: r.origin,
        ...(r.doc.name ? { name: r.doc.name } : {}),
        ...(r.doc.about ? { about: r.doc.about } : {}),
        seq: r.seq,
        hops: r.hops,
        via: r.via,
        ...(r.via ? { viaName: await this.#nameOf(r.via) } : {}),
        ts: r.doc.ts,
        age_ms: Math.max(0, now - r.time),
      });
    }
    return { publishing: this.#presence, relaying: this.#relay, docs };
  }

  async #share(a: Record<string, unknown>): Promise<unknown> {
    const hosts = Array.isArray(a.hosts) ? a.hosts.map(String) : [];
    if (a.stop === true) {
      if (hosts.length) throw usage("give hosts or --stop, not both");
      await this.#peer.share([]);
    } else if (hosts.length) {
      const keys = [];
      for (const h of hosts) keys.push(await this.#key(h));
      await this.#peer.share([...new Set(keys)]);
    }
    const sharing = [];
    for (const key of this.#peer.sharing) {
      const name = await this.#nameOf(key);
      sharing.push({ key, ...(name ? { name } : {}) });
    }
    return { sharing };
  }

  async #mirrored(a: Record<string, unknown>): Promise<unknown> {
    const sharer = str(a.sharer) ? await this.#key(str(a.sharer)!) : undefined;
    const th = str(a.thread);
    if (th) {
      const lines = await this.#peer.mirroredLines(
        th,
        sharer ? { sharer } : {},
      );
      if (lines.length === 0) {
        throw new ControlError(`no mirrored thread "${th}"`);
      }
      const out = [];
      for (const l of lines) {
        const name = await this.#nameOf(l.from);
        out.push({ ...l, ...(name ? { fromName: name } : {}) });
      }
      return { lines: out };
    }
    const threads = [];
    for (const t of await this.#peer.mirrored(sharer)) {
      const sharerName = await this.#nameOf(t.sharer);
      threads.push({ ...t, ...(sharerName ? { sharerName } : {}) });
    }
    return { threads: threads.sort((x, y) => y.updated - x.updated) };
  }

  /** Streams our Peer's progress events as items while `run` runs. */
  async #withProgress<T>(
    wanted: (ev: ProgressEvent) => boolean,
    emit: (item: unknown) => Promise<void>,
    run: (
      flush: (keep?: (i: ProgressItem) => boolean) => Promise<void>,
    ) => Promise<T>,
  ): Promise<T> {
    const queue: ProgressItem[] = [];
    const listener = (ev: PeerEvent) => {
      if (ev.type !== "progress" || !wanted(ev)) return;
      queue.push(progressItem(ev));
    };
    const flush = async (keep?: (i: ProgressItem) => boolean) => {
      // The latest state of each transfer is enough for a bar.
      const latest = new Map<string, ProgressItem>();
      for (const item of queue.splice(0)) {
        if (!keep || keep(item)) latest.set(`${item.dir} ${item.ref}`, item);
      }
      for (const item of latest.values()) await emit(item);
    };
    this.#raw.add(listener);
    try {
      return await run(flush);
    } finally {
      this.#raw.delete(listener);
    }
  }

  // ---- the inbox: unread messages, tail, wait, read ----

  #matches(
    item: InboxItem,
    peer: string | undefined,
    th: string | undefined,
  ): boolean {
    return (!peer || item.peer === peer) && (!th || item.th === th);
  }

  async #markRead(peer: string, th: string): Promise<void> {
    const rec = await this.#peer.store.thread(peer, th);
    if (rec && rec.unread > 0) await this.#peer.markRead(peer, th);
  }

  /** Unread messages (per the thread records' counts), oldest first. */
  async #unread(
    peer: string | undefined,
    th: string | undefined,
  ): Promise<InboxItem[]> {
    const items: InboxItem[] = [];
    const threads: ThreadRecord[] = (await this.#peer.threads()).filter((t) =>
      t.unread > 0 && (!peer || t.peer === peer) && (!th || t.th === th)
    );
    for (const t of threads) {
      const log = (await this.#peer.log({ peer: t.peer, th: t.th }))
        .filter((e) => e.dir === "in" && e.t === "msg");
      for (const e of log.slice(-t.unread)) {
        const item = await this.#fromLog(e);
        if (item) items.push(item);
      }
    }
    return items.sort((x, y) => (x.id ?? "").localeCompare(y.id ?? ""));
  }

  async #fromLog(e: LogEntry): Promise<InboxItem | undefined> {
    let m: Record<string, unknown>;
    try {
      m = JSON.parse(e.line);
    } catch {
      return undefined;
    }
    const peerName = await this.#nameOf(e.peer);
    const base = {
      dir: e.dir,
      peer: e.peer,
      ...(peerName ? { peerName } : {}),
      ts: typeof m.ts === "string" ? m.ts : new Date(e.at).toISOString(),
      ...(e.id ? { id: e.id } : {}),
      ...(e.th ? { th: e.th } : {}),
    };
    if (e.t === "msg") {
      const parts = Array.isArray(m.parts)
        ? m.parts as Array<Record<string, unknown>>
        : [];
      const blobs = [];
      for (const p of parts) {
        if (p.k !== "blob" || typeof p.ref !== "string") continue;
        const rec = await this.#peer.store.blob(e.peer, p.ref, e.dir);
        blobs.push({
          ref: p.ref,
          ...(typeof p.name === "string" ? { name: p.name } : {}),
          size: typeof p.size === "number" ? p.size : rec?.size ?? 0,
          status: rec?.status ?? "missing",
          ...(rec?.path ? { path: rec.path } : {}),
          ...(rec?.sha256 ? { sha256: rec.sha256 } : {}),
        });
      }
      return {
        event: "message",
        ...base,
        ...(blobs.length ? { blobs } : {}),
        text: parts.filter((p) => p.k === "text").map((p) => String(p.text))
          .join("\n"),
        parts,
        ...(typeof m.subject === "string" ? { subject: m.subject } : {}),
        ...(typeof m.re === "string" ? { re: m.re } : {}),
      };
    }
    if (e.t === "err") {
      return {
        event: "notice",
        kind: "refused",
        ...base,
        ...(typeof m.re === "string" ? { re: m.re } : {}),
        detail: `${String(m.code)}${
          typeof m.detail === "string" ? `: ${m.detail}` : ""
        }`,
      };
    }
    if (e.t === "state") {
      return {
        event: "state",
        ...base,
        state: String(m.state),
        ...(typeof m.note === "string" ? { note: m.note } : {}),
      };
    }
    return undefined;
  }

  /**
   * The errs a peer sent in answer to our msgs (e.g. `forbidden`), each
   * with the thread of the msg it answers.
   */
  async #refusals(peer: string): Promise<Array<LogEntry & { th: string }>> {
    const log = await this.#peer.log({ peer });
    const threadOf = new Map<string, string>();
    for (const e of log) {
      if (e.t === "msg" && e.dir === "out" && e.id && e.th) {
        threadOf.set(e.id, e.th);
      }
    }
    const out: Array<LogEntry & { th: string }> = [];
    for (const e of log) {
      if (e.t !== "err" || e.dir !== "in") continue;
      let re: unknown;
      try {
        re = JSON.parse(e.line).re;
      } catch {
        continue;
      }
      const th = typeof re === "string" ? threadOf.get(re) : undefined;
      if (th) out.push({ ...e, th });
    }
    return out;
  }

  async #filters(
    a: Record<string, unknown>,
  ): Promise<{ peer?: string; th?: string }> {
    return {
      peer: str(a.peer) ? await this.#key(str(a.peer)!) : undefined,
      th: str(a.thread),
    };
  }

  #takeNotices(peer: string | undefined): InboxItem[] {
    const mine = this.#notices.filter((n) => !peer || n.peer === peer);
    this.#notices = this.#notices.filter((n) => !mine.includes(n));
    return mine;
  }

  async #tail(
    a: Record<string, unknown>,
    emit: (item: unknown) => Promise<void>,
    signal: AbortSignal,
  ) {
    const { peer, th } = await this.#filters(a);
    const all = a.all === true;
    const mark = a.mark === true;
    if (a.follow !== true) {
      const items = [
        ...(await this.#unread(peer, th)),
        ...this.#takeNotices(peer),
      ];
      for (const item of items) await emit(item);
      if (mark) {
        for (const i of items) {
          if (i.th && i.event === "message") {
            await this.#markRead(i.peer, i.th);
          }
        }
      }
      return { items };
    }
    const queue: Array<InboxItem | ProgressItem> = [];
    let wake: (() => void) | undefined;
    const progress = a.progress === true
      ? (ev: PeerEvent) => {
        if (ev.type !== "progress" || ev.dir !== "in") return;
        if (peer && ev.peer !== peer) return;
        queue.push(progressItem(ev));
        wake?.();
      }
      : undefined;
    if (progress) this.#raw.add(progress);
    const listener = (item: InboxItem) => {
      if (!this.#matches(item, peer, th)) return;
      const content = item.event === "message" || item.event === "state";
      if (!all && !content && item.event !== "notice") return;
      if (!all && item.kind === "error") return;
      queue.push(item);
      wake?.();
    };
    this.#listeners.add(listener);
    const stop = new Promise<void>((r) => {
      if (signal.aborted) r();
      signal.addEventListener("abort", () => r(), { once: true });
      this.#stopped.then(r);
    });
    try {
      while (!signal.aborted) {
        while (queue.length > 0) {
          const item = queue.shift()!;
          await emit(item);
          if (item.event === "progress") continue;
          if (mark && item.th && item.event === "message") {
            await this.#markRead(item.peer, item.th);
          }
        }
        await Promise.race([stop, new Promise<void>((r) => wake = r)]);
        wake = undefined;
        if (this.#isStopped) break;
      }
    } finally {
      this.#listeners.delete(listener);
      if (progress) this.#raw.delete(progress);
    }
    return { items: [] };
  }

  async #wait(
    a: Record<string, unknown>,
    emit: (item: unknown) => Promise<void>,
    signal: AbortSignal,
  ): Promise<WaitResult> {
    const { peer, th } = await this.#filters(a);
    const states = Array.isArray(a.states) ? a.states.map(String) : undefined;
    const timeoutMs = typeof a.timeoutMs === "number" ? a.timeoutMs : 300_000;
    const got: InboxItem[] = [];
    let wake: (() => void) | undefined;
    const listener = (item: InboxItem) => {
      if (!this.#matches(item, peer, th)) return;
      if (item.event === "message" || item.event === "state") {
        got.push(item);
        wake?.();
      }
    };
    this.#listeners.add(listener);
    let emitting = Promise.resolve();
    const progress = a.progress === true
      ? (ev: PeerEvent) => {
        if (ev.type !== "progress" || ev.dir !== "in") return;
        if (peer && ev.peer !== peer) return;
        const item = progressItem(ev);
        emitting = emitting.then(() => emit(item)).catch(() => {});
      }
      : undefined;
    if (progress) this.#raw.add(progress);
    const theirState = async (): Promise<string | undefined> => {
      const recs = (await this.#peer.threads()).filter((t) =>
        t.th === th && (!peer || t.peer === peer)
      );
      return recs.find((r) => r.theirs)?.theirs?.state;
    };
    const finish = async (
      items: InboxItem[],
      timedOut: boolean,
    ): Promise<WaitResult> => {
      for (const i of items) {
        if (i.th && i.event === "message") await this.#markRead(i.peer, i.th);
      }
      const all = [...items, ...this.#takeNotices(peer)];
      if (!states) return { items: all, timedOut };
      const state = await theirState();
      return {
        items: all,
        timedOut,
        matched: state !== undefined && states.includes(state),
        ...(state ? { state } : {}),
      };
    };
    try {
      if (states) {
        const now = await theirState();
        if (now && states.includes(now)) return await finish([], false);
      } else {
        const unread = await this.#unread(peer, th);
        if (unread.length > 0) return await finish(unread, false);
      }
      let timer: ReturnType<typeof setTimeout> | undefined;
      const timeout = new Promise<"timeout">((r) =>
        timer = setTimeout(() => r("timeout"), timeoutMs)
      );
      const aborted = new Promise<"abort">((r) =>
        signal.addEventListener("abort", () => r("abort"), { once: true })
      );
      try {
        while (got.length === 0) {
          const r = await Promise.race([
            timeout,
            aborted,
            this.#stopped.then(() => "abort" as const),
            new Promise<"item">((res) => wake = () => res("item")),
          ]);
          if (r === "timeout") return await finish([], true);
          if (r === "abort") throw new ControlError("interrupted");
        }
        // Let lines that arrived together land in the same answer.
        await new Promise((r) => setTimeout(r, 50));
        return await finish(got.splice(0), false);
      } finally {
        clearTimeout(timer);
      }
    } finally {
      this.#listeners.delete(listener);
      if (progress) {
        this.#raw.delete(progress);
        await emitting;
      }
    }
  }

  async #read(a: Record<string, unknown>): Promise<unknown> {
    const { peer, th } = await this.#filters(a);
    const last = typeof a.last === "number" ? a.last : 50;
    let entries: LogEntry[];
    if (th) {
      const peers = peer ? [peer] : [
        ...new Set(
          (await this.#peer.threads()).filter((t) => t.th === th).map((t) =>
            t.peer
          ),
        ),
      ];
      if (peers.length === 0) throw new ControlError(`unknown thread "${th}"`);
      entries = [];
      for (const p of peers) {
        entries.push(...await this.#peer.log({ peer: p, th }));
      }
    } else {
      entries = await this.#peer.log(peer ? { peer } : {});
    }
    entries = entries.filter((e) => e.t === "msg" || e.t === "state");
    // A refused request (err forbidden) shows in the thread it was sent in.
    for (const p of new Set(entries.map((e) => e.peer))) {
      entries.push(
        ...(await this.#refusals(p)).filter((e) => !th || e.th === th),
      );
    }
    // A line replayed after a reconnect is logged again: show it once.
    const seen = new Set<string>();
    entries = entries
      .sort((x, y) => x.seq - y.seq)
      .filter((e) => {
        const id = `${e.dir} ${e.peer} ${e.id}`;
        if (seen.has(id)) return false;
        seen.add(id);
        return true;
      })
      .slice(-last);
    const items: InboxItem[] = [];
    for (const e of entries) {
      const item = await this.#fromLog(e);
      if (item) items.push(item);
    }
    if (a.mark !== false) {
      const seen = new Set<string>();
      for (const i of items) {
        if (!i.th || seen.has(`${i.peer} ${i.th}`)) continue;
        seen.add(`${i.peer} ${i.th}`);
        await this.#markRead(i.peer, i.th);
      }
    }
    return { items };
  }

  /**
   * The `request` op: sends an exec, fs:read or fs:write request (PROFILE.md)
   * and waits for the answer: the reply msg whose `re` is the request's id,
   * or the `err` (forbidden) that names it, or the timeout.
   */
  async #request(
    a: Record<string, unknown>,
    signal: AbortSignal,
  ): Promise<RequestResult> {
    const key = await this.#key(str(a.to) ?? "");
    const cap = str(a.cap) ?? "";
    const mime = Object.keys(REQUEST_MIMES).find((m) =>
      REQUEST_MIMES[m] === cap && cap !== "admin"
    );
    if (!mime) {
      throw usage(`unknown request "${cap}": use exec, fs:read or fs:write`);
    }
    if (
      typeof a.data !== "object" || a.data === null || Array.isArray(a.data)
    ) {
      throw usage("a request needs its data as an object");
    }
    const timeoutMs = typeof a.timeoutMs === "number" ? a.timeoutMs : 600_000;
    // Listen before sending: a fast answer may arrive before send resolves.
    const seen: PeerEvent[] = [];
    let wake: (() => void) | undefined;
    const listener = (_item: InboxItem, ev: PeerEvent) => {
      if (ev.peer !== key) return;
      if (ev.type === "message" && ev.re) seen.push(ev);
      else if (ev.type === "error" && ev.remote && ev.re) seen.push(ev);
      else return;
      wake?.();
    };
    this.#listeners.add(listener);
    let timer: ReturnType<typeof setTimeout> | undefined;
    try {
      const sent = await this.#peer.send(key, "", {
        ...(str(a.thread) ? { thread: str(a.thread) } : {}),
        ...(str(a.subject) ? { subject: str(a.subject) } : {}),
        parts: [{ k: "data", mime, data: a.data } as Part],
      });
      const base = { id: sent.id, th: sent.th, peer: key, cap };
      const timeout = new Promise<"timeout">((r) =>
        timer = setTimeout(() => r("timeout"), timeoutMs)
      );
      const aborted = new Promise<"abort">((r) => {
        if (signal.aborted) r("abort");
        signal.addEventListener("abort", () => r("abort"), { once: true });
        this.#stopped.then(() => r("abort"));
      });
      while (true) {
        const answer = seen.find((ev) =>
          (ev.type === "message" || ev.type === "error") && ev.re === sent.id
        );
        if (answer?.type === "error") {
          return {
            ...base,
            ok: false,
            error: `${answer.code}: ${answer.detail}`,
          };
        }
        if (answer?.type === "message") {
          await this.#markRead(key, answer.th);
          const reply = (await this.#toItem(answer))!;
          const result = answer.parts.find((p) =>
            p.k === "data" && typeof p.mime === "string" &&
            p.mime.toLowerCase() === mime.replace("+json", "-result+json")
          ) as { data?: unknown } | undefined;
          const data = result?.data as Record<string, unknown> | undefined;
          return {
            ...base,
            ok: data !== undefined && typeof data.error !== "string",
            reply,
            ...(data !== undefined ? { result: data } : {}),
            ...(typeof data?.error === "string" ? { error: data.error } : {}),
          };
        }
        const r = await Promise.race([
          timeout,
          aborted,
          new Promise<"event">((res) => wake = () => res("event")),
        ]);
        wake = undefined;
        if (r === "timeout") return { ...base, ok: false, timedOut: true };
        if (r === "abort") throw new ControlError("interrupted");
      }
    } finally {
      clearTimeout(timer);
      this.#listeners.delete(listener);
    }
  }
}
