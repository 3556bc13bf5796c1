import diagnosticsChannel from 'node:diagnostics_channel';
import { lookup } from 'node:dns/promises';
import { chmodSync, existsSync, lstatSync, unlinkSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import { dirname } from 'node:path';
import { type Allowlist, compileAllowlist } from './allowlist.js';
import { DownstreamReader } from './downstream.js';
import {
  forbiddenReason,
  formatTarget,
  fromWire,
  normalizeHost,
  parseAuthority,
  type Target,
  TargetError,
} from './target.js';

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
  /** Stops listening, ends every tunnel, removes the socket file. Idempotent. */
  close(): Promise<void>;
}

export const PROXY_CHANNEL = 'aleph:proxy';
const channel = diagnosticsChannel.channel(PROXY_CHANNEL);

/** The record published on `aleph:proxy` for every decision. */
export interface ProxyRecord {
  readonly type: 'proxy';
  readonly entry: 'connect' | 'http' | 'socks5';
  readonly host: string;
  readonly port: number;
  readonly verdict: 'allow' | 'deny' | 'unreachable' | 'malformed';
  readonly reason: string;
  readonly pattern: string | null;
  /** The address dialled (allowed connections). */
  readonly address: string | null;
  readonly bytesUp: number;
  readonly bytesDown: number;
}

type Authorization =
  | { ok: true; address: string; family: 4 | 6; pattern: string | null }
  | { ok: false; status: 'deny' | 'unreachable'; reason: string; pattern: string | null };

interface Upstream {
  readonly socket: net.Socket;
  /** Moves what the upstream sends to the client. */
  readonly reader: { forward(source: net.Socket, sink: net.Socket): void };
}

/** The CONNECT success reply, encoded once: every tunnel sends it. */
const CONNECT_ESTABLISHED = new Map(
  ['1.0', '1.1'].map((v) => [v, Buffer.from(`HTTP/${v} 200 Connection Established\r\n\r\n`, 'latin1')]),
);

const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-authenticate',
  'proxy-authorization',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
]);

function defaultResolver(hostname: string): Promise<readonly string[]> {
  return lookup(hostname, { all: true, verbatim: true }).then((list) => list.map((a) => a.address));
}

function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    p,
    new Promise<T>((_r, reject) => {
      timer = setTimeout(() => reject(new Error(`${what} timed out after ${ms} ms`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
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
  const resolver = options.resolver ?? defaultResolver;
  const sockets = new Set<net.Socket>();
  const counters = {
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

  const track = (socket: net.Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
    socket.on('error', () => socket.destroy());
  };

  const publish = (record: Omit<ProxyRecord, 'type'>) => {
    if (channel.hasSubscribers) channel.publish({ type: 'proxy', ...record });
  };

  type Entry = ProxyRecord['entry'];
  const noTraffic = { bytesUp: 0, bytesDown: 0 } as const;
  /** Counts and records a request that could not be parsed into a target. */
  const recordMalformed = (entry: Entry, host: string, port: number, reason: string) => {
    counters.malformed++;
    publish({ entry, host, port, verdict: 'malformed', reason, pattern: null, address: null, ...noTraffic });
  };
  /** Counts and records a target the allowlist denied or that could not be resolved. */
  const recordRefused = (entry: Entry, target: Target, auth: Extract<Authorization, { ok: false }>) => {
    if (auth.status === 'deny') counters.denied++;
    else counters.failed++;
    publish({
      entry,
      host: target.host,
      port: target.port,
      verdict: auth.status,
      reason: auth.reason,
      pattern: auth.pattern,
      address: null,
      ...noTraffic,
    });
  };
  /** Counts and records an allowed target whose dial failed. */
  const recordUnreachable = (
    entry: Entry,
    target: Target,
    auth: Extract<Authorization, { ok: true }>,
    error: unknown,
  ) => {
    counters.failed++;
    publish({
      entry,
      host: target.host,
      port: target.port,
      verdict: 'unreachable',
      reason: (error as Error).message,
      pattern: auth.pattern,
      address: auth.address,
      ...noTraffic,
    });
  };

  const authorize = async (target: Target): Promise<Authorization> => {
    const verdict = allowlist.decide(target);
    if (!verdict.allowed)
      return { ok: false, status: 'deny', reason: verdict.reason, pattern: verdict.pattern ?? null };
    const pattern = verdict.pattern ?? null;
    if (target.kind === 'ip') return { ok: true, address: target.host, family: target.family, pattern };
    let addresses: readonly string[];
    try {
      addresses = await withTimeout(
        resolver(target.host),
        limits.connectTimeoutMs,
        `resolving ${target.host}`,
      );
    } catch (error) {
      return {
        ok: false,
        status: 'unreachable',
        reason: `cannot resolve ${target.host}: ${(error as Error).message}`,
        pattern,
      };
    }
    const ips: { host: string; family: 4 | 6 }[] = [];
    for (const a of addresses) {
      try {
        const n = normalizeHost(a);
        if (n.kind === 'ip') ips.push({ host: n.host, family: n.family as 4 | 6 });
      } catch {
        // Not an address; ignore it.
      }
    }
    if (ips.length === 0) {
      return { ok: false, status: 'unreachable', reason: `${target.host} resolved to no address`, pattern };
    }
    // Every address the name resolves to must be acceptable (no rebinding to a private address).
    for (const ip of ips) {
      const ipTarget: Target = { kind: 'ip', host: ip.host, family: ip.family, port: target.port };
      const denied = allowlist.deny.find(
        (p) => p.kind === 'ip' && (p.port === undefined || p.port === target.port) && p.host === ip.host,
      );
      if (denied)
        return {
          ok: false,
          status: 'deny',
          reason: `${target.host} resolves to ${ip.host}, denied by ${denied.source}`,
          pattern: denied.source,
        };
      const why = forbiddenReason(ip.host, ip.family);
      if (why !== undefined && !allowlist.allowsAddressExplicitly(ipTarget.host, target.port)) {
        return {
          ok: false,
          status: 'deny',
          reason: `${target.host} resolves to ${ip.host}, ${why}`,
          pattern,
        };
      }
    }
    const chosen = ips[0] as { host: string; family: 4 | 6 };
    return { ok: true, address: chosen.host, family: chosen.family, pattern };
  };

  /** Opens the upstream connection to the exact checked address (through the parent proxy, if any). */
  const dial = (address: string, family: 4 | 6, port: number): Promise<Upstream> =>
    options.parent === undefined
      ? dialDirect(address, family, port)
      : dialParent(options.parent, address, port);

  const dialDirect = (address: string, family: 4 | 6, port: number): Promise<Upstream> =>
    new Promise((resolve, reject) => {
      const reader = new DownstreamReader();
      const upstream = net.connect({
        host: address,
        family,
        port,
        allowHalfOpen: true,
        noDelay: true,
        onread: reader.onread,
      });
      track(upstream);
      const timer = setTimeout(() => {
        upstream.destroy();
        reject(
          Object.assign(new Error(`connect to ${formatTarget({ host: address, port })} timed out`), {
            code: 'ETIMEDOUT',
          }),
        );
      }, limits.connectTimeoutMs);
      upstream.once('connect', () => {
        clearTimeout(timer);
        resolve({ socket: upstream, reader });
      });
      upstream.once('error', (error) => {
        clearTimeout(timer);
        reject(error);
      });
    });

  /** Asks the parent proxy for a tunnel to `address:port`; resolves once it answered 2xx. */
  const dialParent = (parent: ParentProxy, address: string, port: number): Promise<Upstream> =>
    new Promise((resolve, reject) => {
      const where = formatTarget({ host: address, port });
      const via = formatTarget(parent);
      const socket = net.connect({
        host: parent.host,
        port: parent.port,
        allowHalfOpen: true,
        noDelay: true,
      });
      track(socket);
      let head = Buffer.alloc(0);
      const fail = (message: string, code: string) => {
        clearTimeout(timer);
        socket.destroy();
        reject(Object.assign(new Error(message), { code }));
      };
      const timer = setTimeout(
        () => fail(`connect to ${where} through parent proxy ${via} timed out`, 'ETIMEDOUT'),
        limits.connectTimeoutMs,
      );
      const onData = (chunk: Buffer) => {
        head = Buffer.concat([head, chunk]);
        const end = head.indexOf('\r\n\r\n');
        if (end < 0) {
          if (head.length > limits.maxHeaderBytes)
            fail(`parent proxy ${via} sent an oversized reply`, 'EPROTO');
          return;
        }
        socket.removeListener('data', onData);
        socket.removeListener('end', onEnd);
        const status = head.subarray(0, head.indexOf('\r\n')).toString('latin1');
        if (!/^HTTP\/1\.[01] 2\d\d(?: |$)/.test(status)) {
          fail(`parent proxy ${via} refused ${where}: ${status.slice(0, 100)}`, 'EPARENT');
          return;
        }
        clearTimeout(timer);
        socket.pause();
        if (end + 4 < head.length) socket.unshift(head.subarray(end + 4));
        resolve({ socket, reader: { forward: (source, sink) => source.pipe(sink) } });
      };
      const onEnd = () => fail(`parent proxy ${via} closed before answering`, 'ECONNRESET');
      socket.once('connect', () => socket.write(`CONNECT ${where} HTTP/1.1\r\nHost: ${where}\r\n\r\n`));
      socket.on('data', onData);
      socket.once('end', onEnd);
      socket.once('error', (error) => fail(`parent proxy ${via}: ${error.message}`, 'EPARENT'));
    });

  /** Pipes both ways with half-close, an idle timeout, and one audit record when both sides are done. */
  const relay = (
    client: net.Socket,
    { socket: upstream, reader }: Upstream,
    record: Omit<ProxyRecord, 'type' | 'bytesUp' | 'bytesDown'>,
  ) => {
    counters.tunnels++;
    // Bytes relayed = what was written to each side from here on (no per-chunk listeners).
    const upFrom = upstream.bytesWritten;
    const downFrom = client.bytesWritten;
    const idle = () => {
      client.destroy();
      upstream.destroy();
    };
    client.setTimeout(limits.idleTimeoutMs, idle);
    upstream.setTimeout(limits.idleTimeoutMs, idle);
    client.pipe(upstream);
    reader.forward(upstream, client);
    let open = 2;
    const done = () => {
      if (--open > 0) {
        // One side is gone: the other cannot be used any more.
        client.destroy();
        upstream.destroy();
        return;
      }
      counters.tunnels--;
      const up = upstream.bytesWritten - upFrom;
      const down = client.bytesWritten - downFrom;
      counters.bytesUp += up;
      counters.bytesDown += down;
      publish({ ...record, bytesUp: up, bytesDown: down });
    };
    client.once('close', done);
    upstream.once('close', done);
  };

  // ── HTTP (CONNECT and absolute-URI requests) ──────────────────────────────────────────────
  const httpServer = http.createServer({
    maxHeaderSize: limits.maxHeaderBytes,
    headersTimeout: limits.handshakeTimeoutMs,
    requestTimeout: 0,
    keepAliveTimeout: 5_000,
    connectionsCheckingInterval: Math.max(50, Math.min(1000, Math.floor(limits.handshakeTimeoutMs / 4))),
  });

  // The request head must arrive within the handshake timeout (slowloris). http.Server's own
  // headersTimeout sweep only runs for servers that listen, and this one is fed sockets by the sniffer.
  const headTimers = new WeakMap<net.Socket, NodeJS.Timeout>();
  const armHeadTimer = (socket: net.Socket) => {
    clearTimeout(headTimers.get(socket));
    const timer = setTimeout(() => socket.destroy(), limits.handshakeTimeoutMs);
    headTimers.set(socket, timer);
    socket.once('close', () => clearTimeout(timer));
  };
  const headArrived = (socket: net.Socket) => clearTimeout(headTimers.get(socket));

  const rawReply = (socket: net.Socket, version: string, status: number, text: string, reason: string) => {
    const body = `${status} ${text}: ${reason}\n`;
    socket.end(
      `HTTP/${version} ${status} ${text}\r\nX-Aleph-Proxy-Reason: ${headerSafe(reason)}\r\nContent-Type: text/plain\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  };

  /** Handles `CONNECT authority HTTP/x` once its head has arrived; `head` is what followed it. */
  const handleConnect = (client: net.Socket, authority: string, version: string, head: Buffer) => {
    headArrived(client);
    let target: Target;
    try {
      const text = fromWire(authority);
      if (text === undefined) throw new TargetError(`${JSON.stringify(authority)} is not UTF-8`);
      target = parseAuthority(text);
    } catch (error) {
      recordMalformed('connect', authority.slice(0, 200), 0, (error as Error).message);
      rawReply(client, version, 400, 'Bad Request', (error as Error).message);
      return;
    }
    client.pause();
    void (async () => {
      const auth = await authorize(target);
      if (!auth.ok) {
        recordRefused('connect', target, auth);
        if (auth.status === 'deny') rawReply(client, version, 403, 'Forbidden', auth.reason);
        else rawReply(client, version, 502, 'Bad Gateway', auth.reason);
        return;
      }
      if (counters.tunnels >= limits.maxTunnels) {
        rawReply(
          client,
          version,
          503,
          'Service Unavailable',
          `proxy is at its limit of ${limits.maxTunnels} tunnels`,
        );
        return;
      }
      let upstream: Upstream;
      try {
        upstream = await dial(auth.address, auth.family, target.port);
      } catch (error) {
        recordUnreachable('connect', target, auth, error);
        rawReply(
          client,
          version,
          502,
          'Bad Gateway',
          `${formatTarget(target)} is unreachable: ${(error as Error).message}`,
        );
        return;
      }
      if (client.destroyed) {
        upstream.socket.destroy();
        return;
      }
      counters.allowed++;
      client.write(CONNECT_ESTABLISHED.get(version) ?? `HTTP/${version} 200 Connection Established\r\n\r\n`);
      if (head.length > 0) upstream.socket.write(head);
      relay(client, upstream, {
        entry: 'connect',
        host: target.host,
        port: target.port,
        verdict: 'allow',
        reason: auth.pattern ? `allowed by ${auth.pattern}` : 'allowed',
        pattern: auth.pattern,
        address: auth.address,
      });
      client.resume();
    })();
  };

  /**
   * Reads a CONNECT request head straight off the socket (no http.Server on the tunnel path): the request
   * line, header lines up to the blank line, within the header size limit.
   */
  const readConnectHead = (client: net.Socket, first: Buffer) => {
    let buf = first;
    const onData = (chunk: Buffer) => {
      buf = Buffer.concat([buf, chunk]);
      check();
    };
    const check = () => {
      const end = buf.indexOf('\r\n\r\n');
      if (end < 0) {
        if (buf.length > limits.maxHeaderBytes) {
          client.removeListener('data', onData);
          counters.malformed++;
          client.end(
            'HTTP/1.1 431 Request Header Fields Too Large\r\nConnection: close\r\nContent-Length: 0\r\n\r\n',
          );
        }
        return;
      }
      client.removeListener('data', onData);
      if (end > limits.maxHeaderBytes) {
        counters.malformed++;
        client.end(
          'HTTP/1.1 431 Request Header Fields Too Large\r\nConnection: close\r\nContent-Length: 0\r\n\r\n',
        );
        return;
      }
      const lines = buf.subarray(0, end).toString('latin1').split('\r\n');
      const m = /^CONNECT ([^\s]+) HTTP\/(1\.[01])$/.exec(lines[0] ?? '');
      const badHeader = lines.slice(1).some((l) => !/^[!#$%&'*+.^_`|~0-9A-Za-z-]+:/.test(l));
      if (!m || badHeader) {
        counters.malformed++;
        rawReply(client, '1.1', 400, 'Bad Request', 'malformed CONNECT request');
        return;
      }
      handleConnect(client, m[1] as string, m[2] as string, buf.subarray(end + 4));
    };
    client.on('data', onData);
    client.resume();
    check();
  };

  httpServer.on('connect', (req: http.IncomingMessage, client: net.Socket, head: Buffer) => {
    handleConnect(client, req.url ?? '', req.httpVersion === '1.0' ? '1.0' : '1.1', head);
  });

  httpServer.on('request', (req: http.IncomingMessage, res: http.ServerResponse) => {
    headArrived(req.socket);
    // A kept-alive connection gets a fresh deadline for its next request head.
    res.once('finish', () => {
      if (!req.socket.destroyed) armHeadTimer(req.socket);
    });
    const fail = (status: number, reason: string) => {
      if (res.headersSent) {
        res.destroy();
        return;
      }
      res.writeHead(status, {
        'X-Aleph-Proxy-Reason': headerSafe(reason),
        'Content-Type': 'text/plain',
        Connection: 'close',
      });
      res.end(`${status} ${http.STATUS_CODES[status]}: ${reason}\n`);
    };
    // (Node's parser refuses a request-target that is not ASCII with 400 before this runs.)
    const rawUrl = req.url ?? '';
    if (!/^http:\/\//i.test(rawUrl)) {
      counters.malformed++;
      fail(
        400,
        /^https:\/\//i.test(rawUrl)
          ? 'use CONNECT for https:// URLs'
          : 'not a proxy request (expected an absolute http:// URL)',
      );
      return;
    }
    let url: URL;
    let target: Target;
    try {
      const authority = /^http:\/\/([^/?#]*)/i.exec(rawUrl)?.[1] ?? '';
      if (authority.includes('@')) throw new TargetError('userinfo in the URL is not allowed');
      url = new URL(rawUrl);
      target = parseAuthority(`${url.hostname}:${url.port === '' ? '80' : url.port}`);
    } catch (error) {
      recordMalformed('http', rawUrl.slice(0, 200), 0, (error as Error).message);
      fail(400, (error as Error).message);
      return;
    }
    req.pause();
    void (async () => {
      const auth = await authorize(target);
      if (!auth.ok) {
        recordRefused('http', target, auth);
        fail(auth.status === 'deny' ? 403 : 502, auth.reason);
        return;
      }
      if (counters.tunnels >= limits.maxTunnels) {
        fail(503, `proxy is at its limit of ${limits.maxTunnels} tunnels`);
        return;
      }
      const headers: http.OutgoingHttpHeaders = {};
      const connectionTokens = new Set(
        String(req.headers.connection ?? '')
          .split(',')
          .map((t) => t.trim().toLowerCase()),
      );
      for (let i = 0; i < req.rawHeaders.length; i += 2) {
        const name = req.rawHeaders[i] as string;
        const lower = name.toLowerCase();
        if (HOP_BY_HOP.has(lower) || connectionTokens.has(lower) || lower === 'host') continue;
        const prev = headers[name];
        const value = req.rawHeaders[i + 1] as string;
        headers[name] =
          prev === undefined ? value : [...(Array.isArray(prev) ? prev : [String(prev)]), value];
      }
      headers.Host = url.host;
      counters.tunnels++;
      counters.allowed++;
      let up = 0;
      let down = 0;
      const finish = (verdict: ProxyRecord['verdict'], reason: string) => {
        counters.tunnels--;
        counters.bytesUp += up;
        counters.bytesDown += down;
        publish({
          entry: 'http',
          host: target.host,
          port: target.port,
          verdict,
          reason,
          pattern: auth.pattern,
          address: auth.address,
          bytesUp: up,
          bytesDown: down,
        });
      };
      // Through a parent proxy, the request goes down a tunnel to the checked address.
      let tunnel: net.Socket | undefined;
      if (options.parent !== undefined) {
        try {
          tunnel = (await dialParent(options.parent, auth.address, target.port)).socket;
        } catch (error) {
          counters.allowed--;
          counters.failed++;
          finish('unreachable', (error as Error).message);
          fail(502, `${formatTarget(target)} is unreachable: ${(error as Error).message}`);
          return;
        }
      }
      // (Node uses createConnection only when no agent is given, not even `agent: false`.)
      const connectTo =
        tunnel === undefined
          ? { host: auth.address, family: auth.family, port: target.port, agent: false as const }
          : {
              // The tunnel comes paused; nothing arrives on it before the request is sent.
              createConnection: () => (tunnel as net.Socket).resume(),
            };
      const upstreamReq = http.request({
        ...connectTo,
        method: req.method,
        path: `${url.pathname}${url.search}`,
        headers,
        setHost: false,
        timeout: limits.connectTimeoutMs,
      });
      upstreamReq.on('socket', (s) => track(s));
      upstreamReq.on('timeout', () => upstreamReq.destroy(new Error('upstream timed out')));
      upstreamReq.on('error', (error) => {
        counters.allowed--;
        counters.failed++;
        finish('unreachable', error.message);
        fail(502, `${formatTarget(target)} is unreachable: ${error.message}`);
      });
      upstreamReq.on('response', (upstreamRes) => {
        const out: http.OutgoingHttpHeaders = {};
        const tokens = new Set(
          String(upstreamRes.headers.connection ?? '')
            .split(',')
            .map((t) => t.trim().toLowerCase()),
        );
        for (let i = 0; i < upstreamRes.rawHeaders.length; i += 2) {
          const name = upstreamRes.rawHeaders[i] as string;
          const lower = name.toLowerCase();
          if (HOP_BY_HOP.has(lower) || tokens.has(lower)) continue;
          const prev = out[name];
          const value = upstreamRes.rawHeaders[i + 1] as string;
          out[name] = prev === undefined ? value : [...(Array.isArray(prev) ? prev : [String(prev)]), value];
        }
        res.writeHead(upstreamRes.statusCode ?? 502, upstreamRes.statusMessage, out);
        upstreamRes.on('data', (c: Buffer) => {
          down += c.length;
        });
        upstreamRes.pipe(res);
        upstreamRes.once('end', () => finish('allow', `allowed by ${auth.pattern}`));
        upstreamRes.once('error', () => res.destroy());
      });
      req.on('data', (c: Buffer) => {
        up += c.length;
      });
      req.pipe(upstreamReq);
      req.resume();
      res.once('close', () => {
        if (!upstreamReq.destroyed) upstreamReq.destroy();
      });
    })();
  });

  httpServer.on('clientError', (error: NodeJS.ErrnoException, socket: net.Socket) => {
    counters.malformed++;
    if (socket.writable && !socket.destroyed) {
      const tooBig = error.code === 'HPE_HEADER_OVERFLOW';
      const timedOut = error.code === 'ERR_HTTP_REQUEST_TIMEOUT';
      const status = tooBig ? 431 : timedOut ? 408 : 400;
      const text = tooBig ? 'Request Header Fields Too Large' : timedOut ? 'Request Timeout' : 'Bad Request';
      socket.end(`HTTP/1.1 ${status} ${text}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`);
    }
    socket.destroy();
  });

  // ── SOCKS5 ───────────────────────────────────────────────────────────────────────────────
  const socks5 = (client: net.Socket, first: Buffer) => {
    let buf = first;
    let stage: 'greeting' | 'request' | 'busy' = 'greeting';
    const handshake = setTimeout(() => client.destroy(), limits.handshakeTimeoutMs);
    client.once('close', () => clearTimeout(handshake));
    const reply = (code: number, bound?: { address: string; port: number; family: 4 | 6 }) => {
      const addr = bound
        ? bound.family === 4
          ? Buffer.from(bound.address.split('.').map(Number))
          : ipv6Bytes(bound.address)
        : Buffer.alloc(4);
      const port = Buffer.alloc(2);
      port.writeUInt16BE(bound?.port ?? 0);
      return Buffer.concat([Buffer.from([5, code, 0, bound?.family === 6 ? 4 : 1]), addr, port]);
    };
    const failWith = (code: number) => {
      stage = 'busy';
      client.end(reply(code));
    };
    const onData = (chunk: Buffer) => {
      buf = buf.length === 0 ? chunk : Buffer.concat([buf, chunk]);
      if (buf.length > 1024 && stage !== 'busy') {
        counters.malformed++;
        client.destroy();
        return;
      }
      step();
    };
    const step = () => {
      if (stage === 'greeting') {
        if (buf.length < 2) return;
        const n = buf[1] as number;
        if (buf.length < 2 + n) return;
        const methods = buf.subarray(2, 2 + n);
        buf = buf.subarray(2 + n);
        if (!methods.includes(0)) {
          counters.malformed++;
          stage = 'busy';
          client.end(Buffer.from([5, 0xff]));
          return;
        }
        client.write(Buffer.from([5, 0]));
        stage = 'request';
      }
      if (stage !== 'request' || buf.length < 4) return;
      const [ver, cmd, , atyp] = buf as unknown as number[];
      let need: number;
      if (atyp === 1) need = 4 + 4 + 2;
      else if (atyp === 4) need = 4 + 16 + 2;
      else if (atyp === 3) {
        if (buf.length < 5) return;
        need = 4 + 1 + (buf[4] as number) + 2;
      } else need = -1;
      if (ver !== 5) {
        counters.malformed++;
        failWith(0x01);
        return;
      }
      if (need < 0) {
        counters.malformed++;
        failWith(0x08);
        return;
      }
      if (buf.length < need) return;
      if (cmd !== 1) {
        recordMalformed('socks5', '', 0, `command ${cmd} is not supported (only CONNECT)`);
        failWith(0x07);
        return;
      }
      let host: string;
      if (atyp === 1) host = [...buf.subarray(4, 8)].join('.');
      else if (atyp === 4) host = formatIPv6(buf.subarray(4, 20));
      else host = buf.subarray(5, 5 + (buf[4] as number)).toString('utf8');
      const port = buf.readUInt16BE(need - 2);
      const early = buf.subarray(need);
      buf = Buffer.alloc(0);
      stage = 'busy';
      client.removeListener('data', onData);
      client.pause();
      let target: Target;
      try {
        if (port === 0) throw new TargetError('port 0 is not a valid port');
        target = atyp === 4 ? parseAuthority(`[${host}]:${port}`) : parseAuthority(`${host}:${port}`);
      } catch (error) {
        recordMalformed('socks5', host, port, (error as Error).message);
        client.end(reply(0x01));
        return;
      }
      void (async () => {
        const auth = await authorize(target);
        if (!auth.ok) {
          recordRefused('socks5', target, auth);
          client.end(reply(auth.status === 'deny' ? 0x02 : 0x04));
          return;
        }
        if (counters.tunnels >= limits.maxTunnels) {
          client.end(reply(0x01));
          return;
        }
        let upstream: Upstream;
        try {
          upstream = await dial(auth.address, auth.family, target.port);
        } catch (error) {
          recordUnreachable('socks5', target, auth, error);
          const code = (error as NodeJS.ErrnoException).code === 'ECONNREFUSED' ? 0x05 : 0x04;
          client.end(reply(code));
          return;
        }
        if (client.destroyed) {
          upstream.socket.destroy();
          return;
        }
        clearTimeout(handshake);
        counters.allowed++;
        const local = upstream.socket.address() as net.AddressInfo;
        const localNorm = normalizeHost(local.address);
        client.write(
          reply(0, { address: localNorm.host, port: local.port, family: (localNorm.family ?? 4) as 4 | 6 }),
        );
        if (early.length > 0) upstream.socket.write(early);
        relay(client, upstream, {
          entry: 'socks5',
          host: target.host,
          port: target.port,
          verdict: 'allow',
          reason: `allowed by ${auth.pattern}`,
          pattern: auth.pattern,
          address: auth.address,
        });
        client.resume();
      })();
    };
    client.on('data', onData);
    client.resume();
    step();
  };

  // ── Listener: sniff the first byte ──────────────────────────────────────────────────────
  const onConnection = (client: net.Socket) => {
    if (closing || sockets.size >= limits.maxConnections) {
      client.destroy();
      return;
    }
    counters.connections++;
    track(client);
    client.setNoDelay(true);
    const timer = setTimeout(() => client.destroy(), limits.firstByteTimeoutMs);
    client.once('close', () => clearTimeout(timer));
    client.once('readable', () => {
      clearTimeout(timer);
      const first = client.read(1) as Buffer | null;
      if (first === null) {
        client.destroy();
        return;
      }
      if (first[0] === 0x05) {
        client.pause();
        socks5(client, first);
      } else if (first[0] === 0x04) {
        counters.malformed++;
        client.end(Buffer.from([0, 0x5b, 0, 0, 0, 0, 0, 0])); // SOCKS4: request rejected
      } else if (first[0] === 0x43 /* C */) {
        // Most likely CONNECT: read the head ourselves; anything else starting with C goes to http.Server.
        const more = (client.read(7) as Buffer | null) ?? Buffer.alloc(0);
        const start = Buffer.concat([first, more]);
        armHeadTimer(client);
        if (
          start.toString('latin1') === 'CONNECT ' ||
          (start.length < 8 && 'CONNECT '.startsWith(start.toString('latin1')))
        ) {
          readConnectHead(client, start);
        } else {
          client.unshift(start);
          httpServer.emit('connection', client);
        }
      } else {
        client.unshift(first);
        armHeadTimer(client);
        httpServer.emit('connection', client);
      }
    });
  };

  const servers: net.Server[] = [];
  const listen = (server: net.Server, arg: { host: string; port: number } | string) =>
    new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      const done = () => {
        server.removeListener('error', reject);
        resolve();
      };
      if (typeof arg === 'string') server.listen(arg, done);
      else server.listen(arg.port, arg.host, done);
    });

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
      const v4 = allowed.some((h) => h.startsWith('127.'));
      const v6 = allowed.includes('::1');
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
    close() {
      closed ??= (async () => {
        closing = true;
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

/** Removes a socket file nobody listens on; refuses to touch anything else. */
async function removeStaleSocket(path: string): Promise<void> {
  let stat: ReturnType<typeof lstatSync>;
  try {
    stat = lstatSync(path);
  } catch {
    const dir = dirname(path);
    if (!existsSync(dir)) {
      throw new Error(`${path}: the directory ${dir} does not exist; create it or choose another unixPath`);
    }
    return;
  }
  if (!stat.isSocket())
    throw new Error(`${path} exists and is not a socket; remove it or choose another unixPath`);
  const inUse = await new Promise<boolean>((resolve) => {
    const probe = net.connect(path);
    probe.once('connect', () => {
      probe.destroy();
      resolve(true);
    });
    probe.once('error', () => resolve(false));
  });
  if (inUse) throw new Error(`${path} is in use by another proxy`);
  unlinkSync(path);
}

function headerSafe(value: string): string {
  return value.replace(/[^\x20-\x7e]/g, '?').slice(0, 300);
}

function formatIPv6(bytes: Buffer): string {
  const words: string[] = [];
  for (let i = 0; i < 16; i += 2) words.push(bytes.readUInt16BE(i).toString(16));
  return words.join(':');
}

function ipv6Bytes(address: string): Buffer {
  const [head, tail] = address.split('::') as [string, string | undefined];
  const h = head === '' ? [] : head.split(':');
  const t = tail === undefined || tail === '' ? [] : tail.split(':');
  const words =
    tail === undefined ? h : [...h, ...Array.from({ length: 8 - h.length - t.length }, () => '0'), ...t];
  const out = Buffer.alloc(16);
  for (const [i, w] of words.entries()) out.writeUInt16BE(Number.parseInt(w, 16) || 0, i * 2);
  return out;
}
