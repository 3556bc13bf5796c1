import { existsSync, lstatSync, unlinkSync } from 'node:fs';
import type http from 'node:http';
import net from 'node:net';
import { dirname } from 'node:path';
import type { ProxyContext } from './context.js';
import type { ConnectHandler } from './http-connect.js';
import { handOver } from './http-forward.js';
import type { HeadTimers } from './http-head.js';
import { readReport } from './report.js';

/** Where the listener hands each connection once its first byte says which protocol it speaks. */
export interface Protocols {
  readonly socks5: (client: net.Socket, first: Buffer) => void;
  readonly connect: ConnectHandler;
  readonly http: http.Server;
  readonly heads: HeadTimers;
}

/**
 * The connection handler of every listening socket: at the connection limit (or closing) a connection is
 * closed on accept; otherwise the first byte picks the protocol. `0x05` is SOCKS5, `0x04` (SOCKS4) is
 * refused, `CONNECT ` is read by the CONNECT handler itself, anything else goes to the HTTP server.
 */
export function createSniffer(
  ctx: ProxyContext,
  protocols: Protocols,
  closing: () => boolean,
): (client: net.Socket) => void {
  const { counters, limits } = ctx;
  return (client) => {
    if (closing() || ctx.sockets.size >= limits.maxConnections) {
      client.destroy();
      return;
    }
    counters.connections++;
    ctx.track(client);
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
        protocols.socks5(client, first);
      } else if (first[0] === 0x04) {
        counters.malformed++;
        client.end(Buffer.from([0, 0x5b, 0, 0, 0, 0, 0, 0])); // SOCKS4: request rejected
      } else if (first[0] === 0x43 /* C */) {
        // Most likely CONNECT: read the head ourselves; anything else starting with C goes to http.Server.
        const more = (client.read(7) as Buffer | null) ?? Buffer.alloc(0);
        const start = Buffer.concat([first, more]);
        protocols.heads.arm(client);
        if (
          start.toString('latin1') === 'CONNECT ' ||
          (start.length < 8 && 'CONNECT '.startsWith(start.toString('latin1')))
        ) {
          protocols.connect.readHead(client, start);
        } else {
          handOver(protocols.http, client, start, limits.maxHeaderBytes);
        }
      } else if (first[0] === 0x41 /* A */ && ctx.entranceOf.has(client)) {
        // An entrance may carry a report of the sandbox's resolver (`ALEPH dns-refused NAME`).
        protocols.heads.arm(client);
        readReport(ctx, client, first, (start) =>
          handOver(protocols.http, client, start, limits.maxHeaderBytes),
        );
      } else {
        protocols.heads.arm(client);
        handOver(protocols.http, client, first, limits.maxHeaderBytes);
      }
    });
  };
}

/** Starts `server` listening on a TCP address or a Unix socket path. */
export function listen(server: net.Server, arg: { host: string; port: number } | string): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    const done = () => {
      server.removeListener('error', reject);
      resolve();
    };
    if (typeof arg === 'string') server.listen(arg, done);
    else server.listen(arg.port, arg.host, done);
  });
}

/** Removes a socket file nobody listens on; refuses to touch anything else. */
export async function removeStaleSocket(path: string): Promise<void> {
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
