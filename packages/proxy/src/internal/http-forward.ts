import http from 'node:http';
import type net from 'node:net';
import type { ProxyRecord } from '../audit.js';
import {
  formatTarget,
  fromWire,
  normalizeHost,
  parseAuthority,
  type Target,
  TargetError,
} from '../target.js';
import type { ProxyContext } from './context.js';
import { dialParent } from './dial.js';
import type { ConnectHandler } from './http-connect.js';
import { forbiddenText, type HeadTimers, headerSafe } from './http-head.js';

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

/** The end-to-end headers of a message: hop-by-hop ones and those its `Connection` names left out. */
function endToEndHeaders(
  rawHeaders: readonly string[],
  connection: string | string[] | undefined,
  skipHost: boolean,
): http.OutgoingHttpHeaders {
  const out: http.OutgoingHttpHeaders = {};
  const tokens = new Set(
    String(connection ?? '')
      .split(',')
      .map((t) => t.trim().toLowerCase()),
  );
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i] as string;
    const lower = name.toLowerCase();
    if (HOP_BY_HOP.has(lower) || tokens.has(lower) || (skipHost && lower === 'host')) continue;
    const prev = out[name];
    const value = rawHeaders[i + 1] as string;
    out[name] = prev === undefined ? value : [...(Array.isArray(prev) ? prev : [String(prev)]), value];
  }
  return out;
}

/**
 * The HTTP server of the proxy, fed sockets by the listener: CONNECT requests it parsed go to the CONNECT
 * handler, absolute-URI requests are forwarded, and unparseable ones get 400 / 408 / 431.
 */
export function createHttpServer(ctx: ProxyContext, heads: HeadTimers, connect: ConnectHandler): http.Server {
  const { limits, counters } = ctx;
  const server = http.createServer({
    maxHeaderSize: limits.maxHeaderBytes,
    headersTimeout: limits.handshakeTimeoutMs,
    requestTimeout: 0,
    keepAliveTimeout: 5_000,
    connectionsCheckingInterval: Math.max(50, Math.min(1000, Math.floor(limits.handshakeTimeoutMs / 4))),
  });
  server.on('connect', (req: http.IncomingMessage, client: net.Socket, head: Buffer) => {
    connect.handle(client, req.url ?? '', req.httpVersion === '1.0' ? '1.0' : '1.1', head);
  });
  server.on('request', (req: http.IncomingMessage, res: http.ServerResponse) => {
    heads.arrived(req.socket);
    // A kept-alive connection gets a fresh deadline for its next request head.
    res.once('finish', () => {
      if (!req.socket.destroyed) heads.arm(req.socket);
    });
    forwardRequest(ctx, req, res);
  });
  server.on('clientError', (error: NodeJS.ErrnoException, socket: net.Socket) => {
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
  return server;
}

const NON_ASCII = /[^\x00-\x7f]/;
const ABSOLUTE_URI = /^([A-Za-z]+ )([A-Za-z][A-Za-z0-9+.-]*:\/\/)([^/?#\s]*)(\S*)( HTTP\/\d\.\d\r?)$/;

/**
 * A request line whose absolute URI carries raw UTF-8 (`GET http://bücher.example/ä HTTP/1.1`), read as
 * the UTF-8 it is and made ASCII as a client should have sent it: the host normalised (IDN → punycode),
 * the rest percent-encoded. Node's parser refuses raw non-ASCII outright. Any other line comes back as it
 * is (one that is not UTF-8, or whose host is malformed, is then refused by the parser or the target
 * check, as before).
 */
export function asciiRequestLine(line: string): string {
  if (!NON_ASCII.test(line)) return line;
  const text = fromWire(line);
  const m = text === undefined ? null : ABSOLUTE_URI.exec(text);
  if (m === null) return line;
  const [, method, scheme, authority = '', rest = '', version] = m;
  const at = /^(\[[^\]]*\]|[^:]*)(:[0-9]*)?$/.exec(authority);
  if (at === null) return line;
  let host: string;
  try {
    host = normalizeHost(at[1] as string).host;
  } catch {
    return line;
  }
  const encoded = rest.replace(/[^\x00-\x7f]+/g, (run) => encodeURIComponent(run));
  const hostPart = host.includes(':') ? `[${host}]` : host;
  return `${method}${scheme}${hostPart}${at[2] ?? ''}${encoded}${version}`;
}

/**
 * Hands a connection to the HTTP server once its request line is in (its first line rewritten by
 * {@link asciiRequestLine}), reading it without putting the socket into flowing mode. A line longer than
 * the header limit goes on unread: the parser answers 431.
 */
export function handOver(
  server: http.Server,
  client: net.Socket,
  first: Buffer,
  maxHeaderBytes: number,
): void {
  let buf = first;
  const give = () => {
    const eol = buf.indexOf('\n');
    if (eol > 0 && buf.subarray(0, eol).some((b) => b >= 0x80)) {
      const line = buf.subarray(0, eol).toString('latin1');
      const rewritten = asciiRequestLine(line);
      if (rewritten !== line) buf = Buffer.concat([Buffer.from(rewritten, 'latin1'), buf.subarray(eol)]);
    }
    client.unshift(buf);
    server.emit('connection', client);
  };
  const more = () => {
    for (let chunk = client.read() as Buffer | null; chunk !== null; chunk = client.read() as Buffer | null) {
      buf = buf.length === 0 ? chunk : Buffer.concat([buf, chunk]);
    }
    if (buf.includes(0x0a) || buf.length > maxHeaderBytes || client.readableEnded) give();
    else client.once('readable', more);
  };
  more();
}

/** Replies to a forwarded request that failed, or drops the response if it already started. */
function failResponse(res: http.ServerResponse, status: number, reason: string, statusText?: string): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  res.writeHead(status, statusText ?? (http.STATUS_CODES[status] as string), {
    'X-Aleph-Proxy-Reason': headerSafe(reason),
    'Content-Type': 'text/plain',
    Connection: 'close',
  });
  res.end(`${status} ${http.STATUS_CODES[status]}: ${reason}\n`);
}

/** Parses the absolute `http://` URI of a request into the URL and the target, or says why not. */
function requestTarget(rawUrl: string): { url: URL; target: Target } {
  const authority = /^http:\/\/([^/?#]*)/i.exec(rawUrl)?.[1] ?? '';
  if (authority.includes('@')) throw new TargetError('userinfo in the URL is not allowed');
  const url = new URL(rawUrl);
  return { url, target: parseAuthority(`${url.hostname}:${url.port === '' ? '80' : url.port}`) };
}

/** The absolute-URI HTTP entry path: one request, authorised, sent to the checked address. */
function forwardRequest(ctx: ProxyContext, req: http.IncomingMessage, res: http.ServerResponse): void {
  const { counters, limits, audit } = ctx;
  const fail = (status: number, reason: string) => failResponse(res, status, reason);
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
    ({ url, target } = requestTarget(rawUrl));
  } catch (error) {
    audit.malformed('http', rawUrl.slice(0, 200), 0, (error as Error).message);
    fail(400, (error as Error).message);
    return;
  }
  req.pause();
  void (async () => {
    const auth = await ctx.authorize(target);
    ctx.decided(req.socket, auth.ok ? undefined : auth);
    if (!auth.ok) {
      audit.refused('http', target, auth);
      if (auth.status === 'deny')
        failResponse(res, 403, auth.denial?.reason ?? auth.reason, forbiddenText(auth));
      else fail(502, auth.reason);
      return;
    }
    if (counters.tunnels >= limits.maxTunnels) {
      fail(503, `proxy is at its limit of ${limits.maxTunnels} tunnels`);
      return;
    }
    const headers = endToEndHeaders(req.rawHeaders, req.headers.connection, true);
    headers.Host = url.host;
    counters.tunnels++;
    counters.allowed++;
    let up = 0;
    let down = 0;
    const finish = (verdict: ProxyRecord['verdict'], reason: string) => {
      counters.tunnels--;
      counters.bytesUp += up;
      counters.bytesDown += down;
      audit.publish({
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
    const unreachable = (error: Error) => {
      counters.allowed--;
      counters.failed++;
      finish('unreachable', error.message);
      fail(502, `${formatTarget(target)} is unreachable: ${error.message}`);
    };
    // Through a parent proxy, the request goes down a tunnel to the checked address.
    let tunnel: net.Socket | undefined;
    if (ctx.parent !== undefined) {
      try {
        tunnel = (await dialParent(ctx, ctx.parent, auth.address, target.port)).socket;
      } catch (error) {
        unreachable(error as Error);
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
    upstreamReq.on('socket', (s) => ctx.track(s));
    upstreamReq.on('timeout', () => upstreamReq.destroy(new Error('upstream timed out')));
    upstreamReq.on('error', unreachable);
    upstreamReq.on('response', (upstreamRes) => {
      const out = endToEndHeaders(upstreamRes.rawHeaders, upstreamRes.headers.connection, false);
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
}
