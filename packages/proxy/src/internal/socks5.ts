import type net from 'node:net';
import { normalizeHost, parseAuthority, type Target, TargetError } from '../target.js';
import type { ProxyContext } from './context.js';
import { dial, type Upstream } from './dial.js';
import { relay } from './relay.js';

/** A SOCKS5 reply with `code`, carrying the bound address of a granted request. */
function socksReply(code: number, bound?: { address: string; port: number; family: 4 | 6 }): Buffer {
  const addr = bound
    ? bound.family === 4
      ? Buffer.from(bound.address.split('.').map(Number))
      : ipv6Bytes(bound.address)
    : Buffer.alloc(4);
  const port = Buffer.alloc(2);
  port.writeUInt16BE(bound?.port ?? 0);
  return Buffer.concat([Buffer.from([5, code, 0, bound?.family === 6 ? 4 : 1]), addr, port]);
}

/** The SOCKS5 entry path (no authentication, CONNECT only); `first` holds the bytes already read. */
export function createSocks5Handler(ctx: ProxyContext): (client: net.Socket, first: Buffer) => void {
  const { counters, limits, audit } = ctx;

  /** Authorises, dials and relays a parsed CONNECT request; `early` is what the client sent after it. */
  const connect = async (client: net.Socket, target: Target, early: Buffer, handshake: NodeJS.Timeout) => {
    const auth = await ctx.authorize(target);
    ctx.decided(client, auth.ok ? undefined : auth);
    if (!auth.ok) {
      audit.refused('socks5', target, auth);
      client.end(socksReply(auth.status === 'deny' ? 0x02 : 0x04));
      return;
    }
    if (counters.tunnels >= limits.maxTunnels) {
      client.end(socksReply(0x01));
      return;
    }
    let upstream: Upstream;
    try {
      upstream = await dial(ctx, auth.address, auth.family, target.port);
    } catch (error) {
      audit.unreachable('socks5', target, auth, error);
      const code = (error as NodeJS.ErrnoException).code === 'ECONNREFUSED' ? 0x05 : 0x04;
      client.end(socksReply(code));
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
      socksReply(0, { address: localNorm.host, port: local.port, family: (localNorm.family ?? 4) as 4 | 6 }),
    );
    if (early.length > 0) upstream.socket.write(early);
    relay(ctx, client, upstream, {
      entry: 'socks5',
      host: target.host,
      port: target.port,
      verdict: 'allow',
      reason: `allowed by ${auth.pattern}`,
      pattern: auth.pattern,
      address: auth.address,
    });
    client.resume();
  };

  return (client, first) => {
    let buf = first;
    let stage: 'greeting' | 'request' | 'busy' = 'greeting';
    const handshake = setTimeout(() => client.destroy(), limits.handshakeTimeoutMs);
    client.once('close', () => clearTimeout(handshake));
    const failWith = (code: number) => {
      stage = 'busy';
      client.end(socksReply(code));
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
        audit.malformed('socks5', '', 0, `command ${cmd} is not supported (only CONNECT)`);
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
        audit.malformed('socks5', host, port, (error as Error).message);
        client.end(socksReply(0x01));
        return;
      }
      void connect(client, target, early, handshake);
    };
    client.on('data', onData);
    client.resume();
    step();
  };
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
