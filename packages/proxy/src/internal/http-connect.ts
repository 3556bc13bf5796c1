import type net from 'node:net';
import { formatTarget, fromWire, parseAuthority, type Target, TargetError } from '../target.js';
import type { ProxyContext } from './context.js';
import { dial, type Upstream } from './dial.js';
import { forbiddenText, type HeadTimers, rawReply } from './http-head.js';
import { relay } from './relay.js';

/** The CONNECT success reply, encoded once: every tunnel sends it. */
const CONNECT_ESTABLISHED = new Map(
  ['1.0', '1.1'].map((v) => [v, Buffer.from(`HTTP/${v} 200 Connection Established\r\n\r\n`, 'latin1')]),
);

const TOO_LARGE =
  'HTTP/1.1 431 Request Header Fields Too Large\r\nConnection: close\r\nContent-Length: 0\r\n\r\n';

/** The HTTP CONNECT entry path: a tunnel to an authorised `host:port`. */
export interface ConnectHandler {
  /** Handles `CONNECT authority HTTP/x` once its head has arrived; `head` is what followed it. */
  handle(client: net.Socket, authority: string, version: string, head: Buffer): void;
  /**
   * Reads a CONNECT request head straight off the socket (no http.Server on the tunnel path): the
   * request line, header lines up to the blank line, within the header size limit.
   */
  readHead(client: net.Socket, first: Buffer): void;
}

export function createConnectHandler(ctx: ProxyContext, heads: HeadTimers): ConnectHandler {
  const { counters, limits, audit } = ctx;

  const handle = (client: net.Socket, authority: string, version: string, head: Buffer) => {
    heads.arrived(client);
    let target: Target;
    try {
      const text = fromWire(authority);
      if (text === undefined) throw new TargetError(`${JSON.stringify(authority)} is not UTF-8`);
      target = parseAuthority(text);
    } catch (error) {
      audit.malformed('connect', authority.slice(0, 200), 0, (error as Error).message);
      ctx.decided(client);
      rawReply(client, version, 400, 'Bad Request', (error as Error).message);
      return;
    }
    client.pause();
    void (async () => {
      const auth = await ctx.authorize(target);
      ctx.decided(client, auth.ok ? undefined : auth);
      if (!auth.ok) {
        audit.refused('connect', target, auth);
        if (auth.status === 'deny')
          rawReply(client, version, 403, forbiddenText(auth), auth.denial?.reason ?? auth.reason);
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
        upstream = await dial(ctx, auth.address, auth.family, target.port);
      } catch (error) {
        audit.unreachable('connect', target, auth, error);
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
      relay(ctx, client, upstream, {
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

  const readHead = (client: net.Socket, first: Buffer) => {
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
          client.end(TOO_LARGE);
        }
        return;
      }
      client.removeListener('data', onData);
      if (end > limits.maxHeaderBytes) {
        counters.malformed++;
        client.end(TOO_LARGE);
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
      handle(client, m[1] as string, m[2] as string, buf.subarray(end + 4));
    };
    client.on('data', onData);
    client.resume();
    check();
  };

  return { handle, readHead };
}
