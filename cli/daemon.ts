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
import { bind, type BoundSocket } from "../net/transport.ts";
import { Peer, type PeerOptions } from "../peer/peer.ts";
import type { PeerEvent } from "../peer/peer_events.ts";
import { InspectionHub } from "../inspector/inspection_hub.ts";
import { type InspectorServer, serveInspector } from "../inspector/server.ts";
import type { DashboardServer } from "../web/serve_dashboard.ts";
import {
  ensureHomeDir,
  HomeNotDirectoryError,
  openStore,
  StoreDamagedError,
  StorePermissionsError,
  StoreUnavailableError,
} from "../storage/open_store.ts";
import { DEFAULT_PORT, parseAddress } from "../wire/address.ts";
import { ControlError, type ControlRequest, ControlServer } from "./control.ts";
import {
  DaemonConfigError,
  presenceFromEnv,
  readDaemonConfig,
} from "./daemon_config.ts";
import { ensureSocketDir, homePaths } from "./home.ts";
import type { SamvadFlagValues } from "./daemon_flags.ts";
import type { StatusResult } from "./protocol.ts";
import { readTlsFiles } from "./tls_files.ts";
import { str, strings, usage } from "./control_args.ts";
import { Inbox } from "./inbox.ts";
import { PeerNames } from "./peer_names.ts";
import { PeerOps } from "./peer_ops.ts";
import { Sender } from "./sender.ts";
import { errorText } from "../wire/error_text.ts";
import { lazyImport } from "../peer/lazy_import.ts";

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

const CONFIG_META = "cli:config";
const STORE_MARKER_META = "cli:store-marker";
const DEFAULT_WEB_PORT = 7788;

interface Config {
  name?: string;
  about?: string;
  listen?: string[];
}

/**
 * Where the daemon will listen, bound before its peer opens
 * ({@link Daemon}'s `#bindListen`): the addresses it was given, each with
 * its socket when the early bind worked, or the default pair (the home's
 * Unix socket and the first free TCP port from {@link DEFAULT_PORT}). An
 * address whose early bind failed is bound again when served, and fails
 * there as it always did.
 */
type ListenPlan =
  | {
    kind: "given";
    addrs: Array<{ addr: string; bound: BoundSocket | undefined }>;
  }
  | {
    kind: "defaults";
    unix: BoundSocket | undefined;
    tcp: BoundSocket | undefined;
  };

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

/** One control op: its arguments, a way to stream items, the client's signal. */
type ControlOp = (
  args: Record<string, unknown>,
  emit: (item: unknown) => Promise<void>,
  signal: AbortSignal,
) => unknown;

class Daemon {
  readonly #o: DaemonOptions;
  readonly #paths: ReturnType<typeof homePaths>;
  #peer!: Peer;
  #control?: ControlServer;
  #lock?: Deno.FsFile;
  #addrs: string[] = [];
  #name?: string;
  #names!: PeerNames;
  #inbox!: Inbox;
  #sender!: Sender;
  #ops!: PeerOps;
  #table: Record<string, ControlOp> = {};
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
  /** The listen addresses, bound before the peer opens; see {@link ListenPlan}. */
  #plan?: ListenPlan;

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
      return this.#fail(`cannot use home ${home}: ${errorText(error)}`);
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
      // A socket bound but never served (the daemon did not start): closed,
      // its unix file removed. Served ones were taken by their listeners.
      this.#closeUnserved();
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
      // Addresses known before the store opens are bound first (the flags'
      // now, config.json's once read): a peer dialing while the daemon
      // starts waits in the socket's backlog and is answered once the peer
      // is open, instead of being refused until its next probe.
      if (o.listen?.length) await this.#bindListen(o.listen);
      const file = await readDaemonConfig(o.home);
      if (!o.listen?.length && file.listen?.length) {
        await this.#bindListen(file.listen);
      }
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
      // The rest (remembered in the store, or the defaults), before the
      // peer's open: its store, identity and handshake warm-up.
      if (this.#plan === undefined) await this.#bindListen(listen);
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
      this.#makeParts();
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
        }: ${errorText(error)}`,
      );
    }
    try {
      try {
        await this.#listenAll();
      } catch (error) {
        await this.#peer.close();
        return this.#fail(errorText(error));
      }
      // Remembered only once bound: a port in use must not break every later `up`.
      await this.#rememberListen();
      if (this.#hub) {
        try {
          await this.#serveInspector(this.#o.inspect ?? "", []);
        } catch (error) {
          await this.#peer.close();
          return this.#fail(errorText(error));
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
          return this.#fail(errorText(error));
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
          return this.#fail(`samvad: ${errorText(error)}`);
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
      return this.#fail(`daemon failed: ${errorText(error)}`);
    }
  }

  /** The parts over the open Peer that answer the control ops. */
  #makeParts(): void {
    const isStopped = () => this.#isStopped;
    this.#names = new PeerNames(this.#peer);
    this.#inbox = new Inbox(this.#peer, this.#names, this.#stopped, isStopped);
    this.#sender = new Sender(
      this.#peer,
      this.#names,
      this.#inbox,
      this.#stopped,
      isStopped,
    );
    this.#ops = new PeerOps(this.#peer, this.#names, this.#inbox, {
      name: this.#name,
      presence: this.#presence,
      relay: this.#relay,
    });
    this.#table = this.#controlOps();
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
          errorText(error)
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
      strings(a.allowHosts),
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
    const { serveDashboard } = await lazyImport<
      typeof import("../web/serve_dashboard.ts")
    >("web/serve_dashboard.ts");
    const source = {
      peer: this.#peer,
      self: () => ({
        key: this.#peer.key,
        ...(this.#name ? { name: this.#name } : {}),
        addrs: this.#addrs,
      }),
      counts: () => this.#ops.summaries(),
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
            errorText(error)
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
        strings(a.allowHosts),
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

  /**
   * Binds the listen addresses ahead of {@link #listenAll}: `addrs` when
   * given, else the defaults (the home's Unix socket and the first free TCP
   * port from {@link DEFAULT_PORT}). A bind that fails here is not
   * reported: the address is bound again when served, and fails there, in
   * the order and words it always did.
   */
  async #bindListen(addrs: string[] | undefined): Promise<void> {
    if (addrs && addrs.length > 0) {
      const given: Array<{ addr: string; bound: BoundSocket | undefined }> = [];
      this.#plan = { kind: "given", addrs: given };
      for (const addr of addrs) {
        given.push({ addr, bound: await bind(addr).catch(() => undefined) });
      }
      return;
    }
    const plan: ListenPlan = {
      kind: "defaults",
      unix: undefined,
      tcp: undefined,
    };
    this.#plan = plan;
    try {
      plan.unix = await this.#bindDefaultUnix();
    } catch { /* bound again, and reported, when served */ }
    for (let port = DEFAULT_PORT; port < DEFAULT_PORT + 100; port++) {
      try {
        plan.tcp = await bind(`tcp:127.0.0.1:${port}`);
        return;
      } catch (error) {
        if (!/in use/i.test(errorText(error))) return;
      }
    }
  }

  /** The home's Unix socket, bound (a stale file replaced) and private. */
  async #bindDefaultUnix(): Promise<BoundSocket> {
    // Ours alone: we hold the home's lock, so a socket file left there is stale.
    await ensureSocketDir(this.#paths.peerSocket);
    await Deno.remove(this.#paths.peerSocket).catch(() => {});
    const bound = await bind(`unix:${this.#paths.peerSocket}`);
    try {
      await Deno.chmod(this.#paths.peerSocket, 0o600); // like every file in the home
    } catch (error) {
      bound.close();
      throw error;
    }
    return bound;
  }

  /** Serves the planned addresses (bound by {@link #bindListen}). */
  async #listenAll(): Promise<void> {
    const plan = this.#plan;
    if (plan?.kind === "given") {
      for (const { addr, bound } of plan.addrs) {
        parseAddress(addr);
        this.#addrs.push(await this.#peer.listen(bound ?? addr));
      }
      return;
    }
    const unix = plan?.unix ?? await this.#bindDefaultUnix();
    this.#addrs.push(await this.#peer.listen(unix));
    if (plan?.tcp) {
      this.#addrs.push(await this.#peer.listen(plan.tcp));
      return;
    }
    for (let port = DEFAULT_PORT; port < DEFAULT_PORT + 100; port++) {
      try {
        this.#addrs.push(await this.#peer.listen(`tcp:127.0.0.1:${port}`));
        return;
      } catch (error) {
        if (!/in use/i.test(errorText(error))) throw error;
      }
    }
  }

  /** Closes the planned sockets not served (idempotent). */
  #closeUnserved(): void {
    const plan = this.#plan;
    if (plan?.kind === "given") {
      for (const { bound } of plan.addrs) bound?.close();
    } else if (plan) {
      plan.unix?.close();
      plan.tcp?.close();
    }
  }

  /** Turns peer events into inbox items for streams and notices. */
  async #pump(): Promise<void> {
    for await (const ev of this.#peer.events()) {
      this.#logEvent(ev);
      try {
        await this.#inbox.publish(ev);
      } catch (error) {
        this.#log(`event handling failed: ${errorText(error)}`);
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

  /**
   * The control ops, by name: the CLI's commands call these over the
   * control socket. Each is one call on a part of the daemon.
   */
  #controlOps(): Record<string, ControlOp> {
    const ops = this.#ops;
    const inbox = this.#inbox;
    const sender = this.#sender;
    return {
      ping: () => ({ pid: Deno.pid }),
      status: () => this.#status(),
      inspect: (a) => this.#inspect(a),
      web: (a) => this.#webOp(a),
      down: () => {
        setTimeout(() => this.#stop(), 20);
        return { stopping: true };
      },
      listen: (a) => this.#listenOp(a),
      connect: (a) => ops.connect(a),
      send: (a, emit, signal) => sender.send(a, emit, signal),
      state: (a) => sender.state(a),
      threads: async (a) => ({
        threads: await ops.threads(str(a.peer), a.open === true),
      }),
      peers: async () => ({ peers: await ops.summaries() }),
      blobs: (a) => ops.blobs(a),
      grant: (a) => ops.grant(a),
      grants: () => ops.grants(),
      revoke: (a) => ops.revoke(a),
      introduce: (a) => ops.introduce(a),
      bye: (a) => ops.bye(a),
      alias: (a) => ops.alias(a),
      presence: () => ops.presenceList(),
      share: (a) => ops.share(a),
      private: (a) => ops.private(a),
      mirrored: (a) => ops.mirrored(a),
      tail: (a, emit, signal) => inbox.tail(a, emit, signal),
      wait: (a, emit, signal) => inbox.wait(a, emit, signal),
      read: (a) => inbox.read(a),
      samvad: (a, emit) => this.#samvad(a, emit),
      request: (a, _emit, signal) => sender.request(a, signal),
    };
  }

  async #handle(
    req: ControlRequest,
    emit: (item: unknown) => Promise<void>,
    signal: AbortSignal,
  ): Promise<unknown> {
    const op = Object.hasOwn(this.#table, req.op)
      ? this.#table[req.op]
      : undefined;
    if (!op) throw usage(`unknown control op "${req.op}"`);
    return await op(req.args, emit, signal);
  }

  /** The `listen` op: listens on one more address, when given. */
  async #listenOp(a: Record<string, unknown>): Promise<unknown> {
    const addr = str(a.addr);
    if (addr) {
      try {
        parseAddress(addr);
      } catch (error) {
        throw usage(errorText(error));
      }
      const real = await this.#peer.listen(addr);
      if (!this.#addrs.includes(real)) this.#addrs.push(real);
    }
    return { key: this.#peer.key, addrs: this.#addrs };
  }

  /** The SAMVAD bridge and calls (loaded on first use: ajv, jose). */
  async #samvad(
    a: Record<string, unknown>,
    emit: (item: unknown) => Promise<void>,
  ): Promise<unknown> {
    const { samvadOp } = await lazyImport<
      typeof import("../samvad/daemon_op.ts")
    >("samvad/daemon_op.ts");
    return await samvadOp(this.#peer, a, emit, (line) => this.#log(line));
  }

  async #status(): Promise<StatusResult> {
    const peers = await this.#ops.summaries();
    return {
      key: this.#peer.key,
      name: this.#name,
      home: this.#o.home,
      pid: Deno.pid,
      addrs: this.#addrs,
      peers,
      unread: peers.reduce((n, p) => n + p.unread, 0),
      notices: this.#inbox.noticeCount,
      ...(this.#inspector ? { inspector: this.#inspector.url } : {}),
      ...(this.#web ? { web: this.#web.url } : {}),
      queued: peers.reduce((n, p) => n + p.queued, 0),
    };
  }
}
