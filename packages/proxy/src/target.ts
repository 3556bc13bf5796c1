import { BlockList, isIPv4, isIPv6 } from 'node:net';

/** A connection target after normalisation: what the allowlist decides on and what gets dialled. */
export type Target =
  | { readonly kind: 'name'; readonly host: string; readonly port: number }
  | { readonly kind: 'ip'; readonly host: string; readonly family: 4 | 6; readonly port: number };

/** Why a host or port was rejected as malformed (→ HTTP 400 / SOCKS5 0x01). */
export class TargetError extends Error {}

/** Characters a host may carry before normalisation (letters incl. non-ASCII for IDN, digits, `.-_`). */
const HOST_CHARS = /^[\p{L}\p{M}\p{N}._-]+$/u;

/**
 * Parses a port strictly: decimal digits only, no sign, no leading zero, 1–65535.
 *
 * @throws {TargetError}
 */
export function parsePort(text: string): number {
  if (!/^[1-9][0-9]{0,4}$/.test(text))
    throw new TargetError(`port ${JSON.stringify(text)} is not a number from 1 to 65535`);
  const port = Number(text);
  if (port > 65535) throw new TargetError(`port ${text} is above 65535`);
  return port;
}

/**
 * Normalises a host once, the same way for every entry path: lowercase, one trailing dot removed, IDN →
 * punycode, IPv4 literals in any spelling (decimal `2130706433`, octal `0177.0.0.1`, hex `0x7f.1`, short
 * `127.1`) to dotted quads, IPv6 compressed, IPv4-mapped IPv6 to IPv4. Zone ids, userinfo, paths and
 * empty labels are rejected.
 *
 * @throws {TargetError}
 */
export function normalizeHost(raw: string): { kind: 'name' | 'ip'; host: string; family?: 4 | 6 } {
  let host = raw;
  if (host.startsWith('[') && host.endsWith(']')) {
    host = host.slice(1, -1);
    // Brackets hold an IPv6 literal and nothing else: `[example.com]` is malformed, not a name.
    if (!host.includes(':'))
      throw new TargetError(`host ${JSON.stringify(raw)} is bracketed but not an IPv6 literal`);
  }
  if (host.includes('%')) throw new TargetError(`host ${JSON.stringify(raw)} has an IPv6 zone id`);
  if (host.includes(':')) {
    if (!isIPv6(host)) throw new TargetError(`host ${JSON.stringify(raw)} is not a valid IPv6 address`);
    const canonical = new URL(`http://[${host}]/`).hostname.slice(1, -1);
    const mapped = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(canonical);
    if (mapped) {
      const hi = Number.parseInt(mapped[1] as string, 16);
      const lo = Number.parseInt(mapped[2] as string, 16);
      return { kind: 'ip', host: `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`, family: 4 };
    }
    return { kind: 'ip', host: canonical, family: 6 };
  }
  if (host.endsWith('.')) host = host.slice(0, -1);
  if (host === '' || !HOST_CHARS.test(host))
    throw new TargetError(`host ${JSON.stringify(raw)} is not a host name`);
  let parsed: string;
  try {
    parsed = new URL(`http://${host}/`).hostname;
  } catch {
    throw new TargetError(`host ${JSON.stringify(raw)} is not a valid host name or IP address`);
  }
  if (isIPv4(parsed)) return { kind: 'ip', host: parsed, family: 4 };
  if (parsed.length > 253 || parsed.split('.').some((label) => label.length === 0 || label.length > 63)) {
    throw new TargetError(`host ${JSON.stringify(raw)} has an empty or over-long label`);
  }
  return { kind: 'name', host: parsed };
}

const NON_ASCII = /[^\x00-\x7f]/;

/**
 * A request head as it came off the wire, read one character per byte (latin1, as Node's HTTP parser
 * and this proxy read heads), read again as the UTF-8 it is: a client may send an IDN unencoded
 * (`CONNECT bücher.example:443`). Undefined when the bytes are not UTF-8.
 */
export function fromWire(text: string): string | undefined {
  if (!NON_ASCII.test(text)) return text;
  const utf8 = Buffer.from(text, 'latin1').toString('utf8');
  return utf8.includes('\uFFFD') ? undefined : utf8;
}

/** Normalises `host` + `port` into a {@link Target}. @throws {TargetError} */
export function normalizeTarget(host: string, port: number | string): Target {
  const p =
    typeof port === 'number'
      ? Number.isInteger(port) && port >= 1 && port <= 65535
        ? port
        : -1
      : parsePort(port);
  if (p < 0) throw new TargetError(`port ${port} is not a number from 1 to 65535`);
  const h = normalizeHost(host);
  return h.kind === 'ip'
    ? { kind: 'ip', host: h.host, family: h.family as 4 | 6, port: p }
    : { kind: 'name', host: h.host, port: p };
}

/**
 * Splits `host:port` (CONNECT authority form, `[v6]:port` too).
 *
 * @throws {TargetError}
 */
export function parseAuthority(authority: string): Target {
  const m = /^(\[[^\]]*\]|[^:[\]]+):([^:]*)$/.exec(authority);
  if (!m) throw new TargetError(`${JSON.stringify(authority)} is not host:port`);
  return normalizeTarget(m[1] as string, m[2] as string);
}

/** The address ranges a name may not resolve to, built on first use: loading this module stays cheap. */
let forbiddenList: BlockList | undefined;

function forbidden(): BlockList {
  if (forbiddenList !== undefined) return forbiddenList;
  const list = new BlockList();
  // IPv4: this-network, private, CGNAT (incl. 100.100.100.200 metadata), loopback, link-local (incl.
  // 169.254.169.254 metadata), IETF, TEST-NETs, benchmarking, multicast, reserved, broadcast.
  for (const [net, bits] of [
    ['0.0.0.0', 8],
    ['10.0.0.0', 8],
    ['100.64.0.0', 10],
    ['127.0.0.0', 8],
    ['169.254.0.0', 16],
    ['172.16.0.0', 12],
    ['192.0.0.0', 24],
    ['192.0.2.0', 24],
    ['192.168.0.0', 16],
    ['198.18.0.0', 15],
    ['198.51.100.0', 24],
    ['203.0.113.0', 24],
    ['224.0.0.0', 4],
    ['240.0.0.0', 4],
  ] as const) {
    list.addSubnet(net, bits, 'ipv4');
  }
  list.addAddress('168.63.129.16', 'ipv4'); // Azure wire server (metadata)
  // IPv6: unspecified, loopback and the deprecated IPv4-compatible ::a.b.c.d (all in ::/96), discard,
  // local-use NAT64, IETF protocol assignments (incl. Teredo), documentation, ULA (incl. fd00:ec2::254
  // metadata), link-local, site-local, multicast.
  for (const [net, bits] of [
    ['::', 96],
    ['100::', 64],
    ['64:ff9b:1::', 48],
    ['2001::', 23],
    ['2001:db8::', 32],
    ['fc00::', 7],
    ['fe80::', 10],
    ['fec0::', 10],
    ['ff00::', 8],
  ] as const) {
    list.addSubnet(net, bits, 'ipv6');
  }
  forbiddenList = list;
  return list;
}

/** The IPv4 address embedded in a NAT64 (64:ff9b::/96) or 6to4 (2002::/16) address, if any. */
function embeddedIPv4(ipv6: string): string | undefined {
  const full = expandIPv6(ipv6);
  if (full === undefined) return undefined;
  const words = full.map((w) => Number.parseInt(w, 16));
  const quad = (hi: number, lo: number) => `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
  if (words[0] === 0x64 && words[1] === 0xff9b && words.slice(2, 6).every((w) => w === 0)) {
    return quad(words[6] as number, words[7] as number);
  }
  if (words[0] === 0x2002) return quad(words[1] as number, words[2] as number);
  return undefined;
}

function expandIPv6(ip: string): string[] | undefined {
  const [head, tail] = ip.split('::') as [string, string | undefined];
  const h = head === '' ? [] : head.split(':');
  const t = tail === undefined || tail === '' ? [] : tail.split(':');
  if (tail === undefined) return h.length === 8 ? h : undefined;
  const fill = 8 - h.length - t.length;
  return fill < 0 ? undefined : [...h, ...Array.from({ length: fill }, () => '0'), ...t];
}

/**
 * Why an address must not be dialled unless an IP entry allows it explicitly: loopback, unspecified,
 * link-local, multicast, cloud metadata, private and reserved ranges (also when embedded in NAT64/6to4).
 * `undefined` for an ordinary public address.
 */
export function forbiddenReason(address: string, family: 4 | 6): string | undefined {
  if (family === 4)
    return forbidden().check(address, 'ipv4')
      ? 'a loopback, private, link-local, metadata or reserved address'
      : undefined;
  if (forbidden().check(address, 'ipv6')) return 'a loopback, private, link-local or reserved IPv6 address';
  const v4 = embeddedIPv4(address);
  if (v4 !== undefined && forbidden().check(v4, 'ipv4')) return `an IPv6 address embedding ${v4}`;
  return undefined;
}

/** Formats a target for logs and headers (`[v6]:port`). */
export function formatTarget(t: { host: string; port: number; family?: 4 | 6 }): string {
  return t.host.includes(':') ? `[${t.host}]:${t.port}` : `${t.host}:${t.port}`;
}
