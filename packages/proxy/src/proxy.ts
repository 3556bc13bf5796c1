import { chmodSync, existsSync, unlinkSync } from 'node:fs';
import net from 'node:net';
import { type Allowlist, compileAllowlist } from './allowlist.js';
import { createAudit, type ProxyCounters } from './audit.js';
import type { ProxyDenial } from './denial.js';
import { createAuthorizer, defaultResolver } from './internal/authorize.js';
import type { ProxyContext } from './internal/context.js';
import {
  type EntranceState,
  type EntranceWhere,
  type OpenEntrance,
  openEntrance,
} from './internal/entrance.js';
import { createConnectHandler } from './internal/http-connect.js';
import { createHttpServer } from './internal/http-forward.js';
import { createHeadTimers } from './internal/http-head.js';
import { createSniffer, listen, removeStaleSocket } from './internal/listener.js';
import { createSocks5Handler } from './internal/socks5.js';

/** Resolves a host name to IP addresses (tests and `--resolve` inject one; default: the system resolver). */
export type Resolver = (hostname: string) => Promise<readonly string[]>;

/** Limits that keep a slow or hostile client from pinning memory or file descriptors. */
export interface ProxyLimits {
  /** Largest request head (request line + headers); larger gets 431. Default 16 KiB. */
  readonly maxHeaderBytes: number;
  /** How long a new connection may stay silent before its first byte. Default 10 s. */
  readonly firstByteTimeoutMs: number;
  /** How long the HTTP request head or the SOCKS handshake may take. Default 10 s. */
  readonly handshakeTimeoutMs: number;
  /** A tunnel with no traffic either way for this long is closed. Default 5 min. */
  readonly idleTimeoutMs: number;
  /** How long resolving and connecting upstream may take. Default 10 s. */
  readonly connectTimeoutMs: number;
  /** Most tunnels (CONNECT, SOCKS, forwarded requests) at once; more get 503 / SOCKS 0x01. Default 1024. */
  readonly maxTunnels: number;
  /** Most client connections at once; more are closed on accept. Default 4096. */
  readonly maxConnections: number;
}

export const DEFAULT_LIMITS: ProxyLimits = {
  maxHeaderBytes: 16 * 1024,
  firstByteTimeoutMs: 10_000,
  handshakeTimeoutMs: 10_000,
  idleTimeoutMs: 300_000,
  connectTimeoutMs: 10_000,
  maxTunnels: 1024,
  maxConnections: 4096,
};

/** Options of {@link startProxy}. */
export interface ProxyOptions {
  /** Allow patterns: `name`, `*.suffix`, IP literals, each with optional `:port`. */
  readonly allow: readonly string[];
  /** Deny patterns; they win over allow. */
  readonly deny?: readonly string[];
  /** TCP listener. Default `{ host: '127.0.0.1', port: 0 }`; `false` for a Unix socket only. */
  readonly listen?: { readonly host: string; readonly port: number } | false;
  /** Also (or only) listen on this Unix socket path. */
  readonly unixPath?: string;
  /** Mode of the Unix socket file. Default 0o600. */
  readonly unixMode?: number;
  readonly resolver?: Resolver;
  readonly limits?: Partial<ProxyLimits>;
  /**
   * A parent HTTP proxy (one that accepts CONNECT) to reach the internet through, for hosts behind a
   * corporate proxy. Every upstream connection becomes a CONNECT to the parent for the address this
   * proxy resolved and checked, so the allowlist and the address checks stay this proxy's own.
   */
  readonly parent?: ParentProxy;
}

/** Where a parent proxy listens. */
export interface ParentProxy {
  readonly host: string;
  readonly port: number;
}

/** Counters; `openSockets` and `activeTunnels` are zero when nothing is in flight. */
export interface ProxyStats {
  /** Client and upstream sockets currently open. */
  readonly openSockets: number;
  readonly activeTunnels: number;
  readonly connections: number;
  readonly allowed: number;
  readonly denied: number;
  /** Allowed targets that could not be reached. */
  readonly failed: number;
  readonly malformed: number;
  readonly bytesUp: number;
  readonly bytesDown: number;
}

/** A running proxy. */
export interface ProxyServer {
  /** The TCP listen address, or `null` when only a Unix socket is used. */
  readonly address: { readonly host: string; readonly port: number } | null;
  readonly unixPath: string | undefined;
  readonly allowlist: Allowlist;
  /**
   * Proxy variables for a client: `HTTP_PROXY`, `HTTPS_PROXY` (http://), `ALL_PROXY` (socks5h://), in
   * both cases, and `NO_PROXY` for loopback (so servers a command starts in its own network namespace
   * stay reachable directly), less any loopback address the allowlist names explicitly: that one is the
   * host's, and only the proxy reaches it. `at` overrides the address (the sandbox's in-namespace bridge).
   */
  env(at?: { host: string; port: number }): Record<string, string>;
  stats(): ProxyStats;
  /**
   * Opens another listener of this proxy (a Unix socket, or a TCP port on loopback) whose connections are
   * attributed to one user, a sandbox run: its refusals are kept, typed ({@link ProxyDenial}), for
   * {@link ProxyEntrance.settle}. The same allowlist decides; only the attribution differs.
   */
  openEntrance(where: ProxyEntranceOptions): Promise<ProxyEntrance>;
  /** Stops listening, ends every tunnel, removes the socket file. Idempotent. */
  close(): Promise<void>;
}

/** Where an entrance listens: `unixPath` (mode `unixMode`, default 0600), else `tcp` (default 127.0.0.1:0). */
export type ProxyEntranceOptions = EntranceWhere;

/** One entrance of a running proxy (see {@link ProxyServer.openEntrance}). */
export interface ProxyEntrance extends OpenEntrance {
  /** Its Unix socket, when it has one. */
  readonly unixPath: string | undefined;
  /** Its TCP address, when it has one. */
  readonly address: { readonly host: string; readonly port: number } | null;
  /**
   * Waits until no connection that came in through this entrance still waits for a decision (the user is
   * gone, so each ends soon), at most `timeoutMs` (default 250), then gives its refusals, deduplicated,
   * in order.
   */
  settle(timeoutMs?: number): Promise<readonly ProxyDenial[]>;
  /** Its refusals so far. */
  denials(): readonly ProxyDenial[];
  /** Stops listening and removes the socket file; connections already in run to their end. */
  close(): Promise<void>;
}

/**
 * Starts the managed egress proxy: HTTP CONNECT, absolute-URI HTTP and SOCKS5 on one listener (chosen by
 * the first byte), on TCP and/or a Unix socket. Every entry path normalises the target once and asks one
 * decision function; allowed names are resolved once and the exact checked address is dialled.
 *
 * Replies: denied → 403 (`X-Aleph-Proxy-Reason`) / SOCKS5 0x02; allowed but unreachable → 502 / SOCKS5
 * 0x04 or 0x05; malformed → 400 / SOCKS5 0x01 or 0x07; header too large → 431.
 *
 * @example
 * ```ts
 * const proxy = await startProxy({ allow: ['pypi.org', '*.pythonhosted.org:443'] })
 * spawn('pip', ['install', 'x'], { env: { ...proxy.env() } })
 * await proxy.close()
 * ```
 * @throws {PatternError} for a malformed pattern; the listen error when the address is taken.
 */
export async function startProxy(options: ProxyOptions): Promise<ProxyServer> {
  const allowlist = compileAllowlist(options.allow, options.deny ?? []);
  const limits: ProxyLimits = { ...DEFAULT_LIMITS, ...options.limits };
  const sockets = new Set<net.Socket>();
  const counters: ProxyCounters = {
    connections: 0,
    allowed: 0,
    denied: 0,
    failed: 0,
    malformed: 0,
    bytesUp: 0,
    bytesDown: 0,
    tunnels: 0,
  };
  let closing = false;
  const entranceOf = new WeakMap<net.Socket, EntranceState>();
  const ctx: ProxyContext = {
    limits,
    parent: options.parent,
    counters,
    audit: createAudit(counters),
    allowlist,
    authorize: createAuthorizer(allowlist, options.resolver ?? defaultResolver, limits.connectTimeoutMs),
    sockets,
    track(socket) {
      sockets.add(socket);
      socket.once('close', () => sockets.delete(socket));
      socket.on('error', () => socket.destroy());
    },
    entranceOf,
    decided(client, refusal) {
      const entrance = entranceOf.get(client);
      if (entrance === undefined) return;
      if (refusal?.denial !== undefined) entrance.note(refusal.denial);
      entrance.decided(client);
    },
  };
  const heads = createHeadTimers(limits.handshakeTimeoutMs);
  const connect = createConnectHandler(ctx, heads);
  const httpServer = createHttpServer(ctx, heads, connect);
  const onConnection = createSniffer(
    ctx,
    { socks5: createSocks5Handler(ctx), connect, http: httpServer, heads },
    () => closing,
  );

  const servers: net.Server[] = [];
  let address: { host: string; port: number } | null = null;
  const tcp = options.listen === false ? undefined : (options.listen ?? { host: '127.0.0.1', port: 0 });
  try {
    if (tcp !== undefined) {
      const server = net.createServer({ allowHalfOpen: true, pauseOnConnect: false }, onConnection);
      await listen(server, tcp);
      servers.push(server);
      const a = server.address() as net.AddressInfo;
      address = { host: a.address, port: a.port };
    }
    if (options.unixPath !== undefined) {
      await removeStaleSocket(options.unixPath);
      const server = net.createServer({ allowHalfOpen: true }, onConnection);
      await listen(server, options.unixPath);
      servers.push(server);
      chmodSync(options.unixPath, options.unixMode ?? 0o600);
    }
  } catch (error) {
    for (const s of servers) s.close();
    throw error;
  }
  if (servers.length === 0) throw new Error('startProxy needs a TCP listen address or a unixPath');

  let closed: Promise<void> | undefined;
  const entrances = new Set<OpenEntrance>();
  return {
    address,
    unixPath: options.unixPath,
    allowlist,
    env(at) {
      const where = at ?? address;
      if (where === null)
        throw new Error('this proxy has no TCP address; pass env({ host, port }) for the bridge');
      const hostPart = where.host.includes(':') ? `[${where.host}]` : where.host;
      const http = `http://${hostPart}:${where.port}`;
      const socks = `socks5h://${hostPart}:${where.port}`;
      // Loopback goes direct (a server the command starts itself), except loopback the allowlist names
      // explicitly: that is the host's, reachable only through the proxy (the sandbox's loopback is not).
      const allowed = allowlist.allow.filter((p) => p.kind === 'ip').map((p) => p.host);
      const ranges = allowlist.allow.filter((p) => p.kind === 'cidr');
      const v4 =
        allowed.some((h) => h.startsWith('127.')) ||
        ranges.some((r) => r.family === 4 && r.range.check('127.0.0.1', 'ipv4'));
      const v6 =
        allowed.includes('::1') || ranges.some((r) => r.family === 6 && r.range.check('::1', 'ipv6'));
      const noProxy = [
        ...(v4 || v6 ? [] : ['localhost']),
        ...(v4 ? [] : ['127.0.0.1']),
        ...(v6 ? [] : ['::1']),
      ].join(',');
      return {
        HTTP_PROXY: http,
        http_proxy: http,
        HTTPS_PROXY: http,
        https_proxy: http,
        ALL_PROXY: socks,
        all_proxy: socks,
        NO_PROXY: noProxy,
        no_proxy: noProxy,
      };
    },
    stats() {
      return {
        openSockets: sockets.size,
        activeTunnels: counters.tunnels,
        connections: counters.connections,
        allowed: counters.allowed,
        denied: counters.denied,
        failed: counters.failed,
        malformed: counters.malformed,
        bytesUp: counters.bytesUp,
        bytesDown: counters.bytesDown,
      };
    },
    async openEntrance(where) {
      const entrance = await openEntrance(entranceOf, onConnection, where, listen);
      entrances.add(entrance);
      return entrance;
    },
    close() {
      closed ??= (async () => {
        closing = true;
        await Promise.all([...entrances].map((e) => e.close()));
        const done = Promise.all(servers.map((s) => new Promise<void>((r) => s.close(() => r()))));
        for (const s of sockets) s.destroy();
        httpServer.closeAllConnections();
        await done;
        if (options.unixPath !== undefined && existsSync(options.unixPath)) {
          try {
            unlinkSync(options.unixPath);
          } catch {
            // Already gone.
          }
        }
      })();
      return closed;
    },
  };
}
