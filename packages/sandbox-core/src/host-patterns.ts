/**
 * Host patterns as a capability names them (`name`, `*.suffix`, IP literals, CIDR ranges, each with an
 * optional `:port`): their shape checked at the edge, before a request goes to approval. The managed
 * proxy parses them again, fully.
 */
import { isIPv4, isIPv6 } from 'node:net';
import { z } from 'zod';

const HOST_LABEL = /^[\p{L}\p{M}\p{N}_-]{1,63}$/u;

/** `10.0.0.0/8`, `10.0.0.0/8:443`, `2001:db8::/32`, `[2001:db8::]/32:443`, `[2001:db8::/32]:443`. */
const CIDR_ENTRY =
  /^(?:\[([0-9a-fA-F:.]+)(?:\/([0-9]{1,3}))?\](?:\/([0-9]{1,3}))?|([0-9a-fA-F:.]+)\/([0-9]{1,3}))(?::([^:\]]*))?$/;

/** A CIDR entry's parts. */
export interface CidrEntry {
  readonly family: 4 | 6;
  readonly address: string;
  readonly prefix: number;
  readonly port: string | undefined;
}

/** A CIDR entry's parts, a problem in words, or undefined when `entry` is not CIDR-shaped. */
export function parseCidrEntry(entry: string): CidrEntry | string | undefined {
  const m = CIDR_ENTRY.exec(entry);
  if (m === null) return undefined;
  const address = (m[1] ?? m[4]) as string;
  const bits = m[2] ?? m[3] ?? m[5];
  if (bits === undefined || (m[2] !== undefined && m[3] !== undefined)) return undefined;
  if (m[6] !== undefined && m[4]?.includes(':')) {
    return 'puts a port after a bare IPv6 range; write it as [2001:db8::/32]:443';
  }
  const family = isIPv4(address) ? 4 : isIPv6(address) ? 6 : undefined;
  if (family === undefined) return `is not a CIDR range: ${JSON.stringify(address)} is not an IP address`;
  if (Number(bits) > (family === 4 ? 32 : 128)) return `has a prefix length above ${family === 4 ? 32 : 128}`;
  return { family, address, prefix: Number(bits), port: m[6] };
}

/**
 * Why `entry` is not a host pattern (`name`, `*.suffix`, an IPv4 literal, or an IPv6 literal bare or in
 * brackets, each but the bare IPv6 with an optional `:port`), or undefined when it is one. The managed
 * proxy parses patterns again, fully (IDN, numeric IPv4 spellings); this catches every malformed shape at
 * the edge, before a request goes to approval.
 */
function hostPatternProblem(entry: string): string | undefined {
  const shape = 'use name, *.suffix or an IP literal or CIDR range, optionally with :port';
  if (entry.includes('/') && !entry.includes('://')) {
    const cidr = parseCidrEntry(entry);
    if (typeof cidr === 'string') return cidr;
    if (cidr !== undefined) {
      const { port } = cidr;
      if (port !== undefined && !(/^[1-9][0-9]{0,4}$/.test(port) && Number(port) <= 65535)) {
        return `has a bad port ${JSON.stringify(port)}; use a port from 1 to 65535, or none for any port`;
      }
      return undefined;
    }
  }
  if (/[\s/\\@?#]/u.test(entry)) return `is not a host pattern (no scheme, path, user or spaces); ${shape}`;
  if (/^[0-9a-f]*:[0-9a-f]*:[0-9a-f:.]*$/i.test(entry)) return undefined; // a bare IPv6 literal
  const m = /^(\*\.)?(\[[0-9a-fA-F:.]+\]|[^:[\]]+)(?::([^:]*))?$/u.exec(entry);
  if (m === null) return `is not a host pattern; ${shape}`;
  const [, wildcard, host = '', port] = m;
  if (port !== undefined && !(/^[1-9][0-9]{0,4}$/.test(port) && Number(port) <= 65535)) {
    return `has a bad port ${JSON.stringify(port)}; use a port from 1 to 65535, or none for any port`;
  }
  if (host.startsWith('['))
    return wildcard === undefined ? undefined : 'combines * with an IP address; use the address alone';
  if (host.includes('*')) return 'uses * other than as a whole leading label; write it as *.example.com';
  const name = host.endsWith('.') ? host.slice(0, -1) : host;
  if (name.length > 253 || !name.split('.').every((label) => HOST_LABEL.test(label))) {
    return `is not a host pattern (empty, over-long or invalid label); ${shape}`;
  }
  // The URL standard's host parser, as the proxy uses: it rejects 256.1.1.1, 1.2.3.4.5, bad punycode.
  let parsed: string;
  try {
    parsed = new URL(`http://${name}/`).hostname;
  } catch {
    return `is not a valid host name or IP address; ${shape}`;
  }
  if (wildcard !== undefined && /^[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+$/.test(parsed)) {
    return 'combines * with an IP address; use the address alone';
  }
  return undefined;
}

/** One host pattern, its shape checked (the message says what is wrong and what to write). */
export const HostEntrySchema = z
  .string()
  .min(1, { message: 'is empty; use a host name such as api.example.com' })
  .superRefine((entry, ctx) => {
    const problem = hostPatternProblem(entry);
    if (problem !== undefined) ctx.addIssue({ code: 'custom', message: problem });
  });
