import net from 'node:net';
import { DownstreamReader } from '../downstream.js';
import type { ParentProxy } from '../proxy.js';
import { formatTarget } from '../target.js';
import type { ProxyContext } from './context.js';

/** An open upstream connection and how its data reaches the client. */
export interface Upstream {
  readonly socket: net.Socket;
  /** Moves what the upstream sends to the client. */
  readonly reader: { forward(source: net.Socket, sink: net.Socket): void };
}

/** Opens the upstream connection to the exact checked address (through the parent proxy, if any). */
export function dial(ctx: ProxyContext, address: string, family: 4 | 6, port: number): Promise<Upstream> {
  return ctx.parent === undefined
    ? dialDirect(ctx, address, family, port)
    : dialParent(ctx, ctx.parent, address, port);
}

/** Connects to `address:port` itself, within the connect timeout. */
export function dialDirect(
  ctx: ProxyContext,
  address: string,
  family: 4 | 6,
  port: number,
): Promise<Upstream> {
  return new Promise((resolve, reject) => {
    const reader = new DownstreamReader();
    const upstream = net.connect({
      host: address,
      family,
      port,
      allowHalfOpen: true,
      noDelay: true,
      onread: reader.onread,
    });
    ctx.track(upstream);
    const timer = setTimeout(() => {
      upstream.destroy();
      reject(
        Object.assign(new Error(`connect to ${formatTarget({ host: address, port })} timed out`), {
          code: 'ETIMEDOUT',
        }),
      );
    }, ctx.limits.connectTimeoutMs);
    upstream.once('connect', () => {
      clearTimeout(timer);
      resolve({ socket: upstream, reader });
    });
    upstream.once('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
  });
}

/** Asks the parent proxy for a tunnel to `address:port`; resolves once it answered 2xx. */
export function dialParent(
  ctx: ProxyContext,
  parent: ParentProxy,
  address: string,
  port: number,
): Promise<Upstream> {
  return new Promise((resolve, reject) => {
    const where = formatTarget({ host: address, port });
    const via = formatTarget(parent);
    const socket = net.connect({
      host: parent.host,
      port: parent.port,
      allowHalfOpen: true,
      noDelay: true,
    });
    ctx.track(socket);
    let head = Buffer.alloc(0);
    const fail = (message: string, code: string) => {
      clearTimeout(timer);
      socket.destroy();
      reject(Object.assign(new Error(message), { code }));
    };
    const timer = setTimeout(
      () => fail(`connect to ${where} through parent proxy ${via} timed out`, 'ETIMEDOUT'),
      ctx.limits.connectTimeoutMs,
    );
    const onData = (chunk: Buffer) => {
      head = Buffer.concat([head, chunk]);
      const end = head.indexOf('\r\n\r\n');
      if (end < 0) {
        if (head.length > ctx.limits.maxHeaderBytes)
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
}
