import { BlockList, isIPv4, isIPv6 } from 'node:net';
import { normalizeHost, parsePort, type Target, type TargetError } from './target.js';

/** One parsed allow/deny entry. */
export type Pattern =
  | {
      readonly kind: 'name';
      readonly wildcard: boolean;
      readonly host: string;
      readonly port?: number;
      readonly source: string;
    }
  | { readonly kind: 'ip'; readonly host: string; readonly port?: number; readonly source: string }
  | {
      readonly kind: 'cidr';
      /** The network address as written (normalised) and the prefix length: `10.0.0.0` and 8. */
      readonly host: string;
      readonly prefix: number;
      readonly family: 4 | 6;
      readonly port?: number;
      readonly source: string;
      /** The range, for membership checks. */
      readonly range: BlockList;
    };

/** `10.0.0.0/8`, `10.0.0.0/8:443`, `2001:db8::/32`, `[2001:db8::]/32:443`, `[2001:db8::/32]:443`. */
const CIDR =
  /^(?:\[([0-9a-fA-F:.]+)(?:\/([0-9]{1,3}))?\](?:\/([0-9]{1,3}))?|([0-9a-fA-F:.]+)\/([0-9]{1,3}))(?::([^:\]]*))?$/;

/** Parses a CIDR pattern, or returns undefined when `source` is not CIDR-shaped. @throws {PatternError} */
function parseCidr(source: string, text: string): Pattern | undefined {
  if (!text.includes('/')) return undefined;
  const m = CIDR.exec(text);
  if (m === null) return undefined;
  const address = (m[1] ?? m[4]) as string;
  const bitsText = m[2] ?? m[3] ?? m[5];
  if (bitsText === undefined || (m[2] !== undefined && m[3] !== undefined)) return undefined;
  // A bare IPv6 range with a port is ambiguous (`2001:db8::/32:443`): brackets make it plain.
  if (m[6] !== undefined && m[4]?.includes(':')) {
    throw new PatternError(source, 'puts a port after a bare IPv6 range; write it as [2001:db8::/32]:443');
  }
  const family = isIPv4(address) ? 4 : isIPv6(address) ? 6 : undefined;
  if (family === undefined) {
    throw new PatternError(source, `is not a CIDR range: ${JSON.stringify(address)} is not an IP address`);
  }
  const prefix = Number(bitsText);
  if (prefix > (family === 4 ? 32 : 128)) {
    throw new PatternError(source, `has a prefix length above ${family === 4 ? 32 : 128}`);
  }
  const host = normalizeHost(family === 6 ? `[${address}]` : address).host;
  // An IPv4-mapped IPv6 network normalises to IPv4; its prefix would then mean something else.
  if ((host.includes(':') ? 6 : 4) !== family) {
    throw new PatternError(source, 'is an IPv4-mapped IPv6 range; write the IPv4 range instead');
  }
  const range = new BlockList();
  range.addSubnet(host, prefix, family === 4 ? 'ipv4' : 'ipv6');
  const port = m[6] === undefined ? undefined : portOf(source, m[6]);
  return port === undefined
    ? { kind: 'cidr', host, prefix, family, source, range }
    : { kind: 'cidr', host, prefix, family, port, source, range };
}

/** A malformed allow/deny pattern (the CLI turns it into a usage error). */
export class PatternError extends Error {
  constructor(
    readonly pattern: string,
    why: string,
  ) {
    super(`pattern ${JSON.stringify(pattern)} ${why}`);
  }
}

/**
 * Parses an allowlist entry: `name`, `*.suffix` (strict subdomains at any depth, never the apex), an IPv4
 * or bracketed IPv6 literal, or a CIDR range (`10.0.0.0/8`, `2001:db8::/32`), each with an optional
 * `:port` (no port = any port). Names and IPs are normalised exactly like targets, so `0x7f.1` means
 * 127.0.0.1 and `Example.COM.` means example.com.
 *
 * @throws {PatternError} naming the pattern and why.
 */
export function parsePattern(source: string): Pattern {
  let rest = source.trim();
  if (rest === '') throw new PatternError(source, 'is empty; use a host such as api.example.com');
  const cidr = parseCidr(source, rest);
  if (cidr !== undefined) return cidr;
  if (/[/\\@?#\s]/.test(rest) || rest.includes('://')) {
    throw new PatternError(source, 'must be a host[:port], not a URL (no scheme, path, user or spaces)');
  }
  let port: number | undefined;
  const bracket = /^(\[[^\]]+\])(?::(.*))?$/.exec(rest);
  if (bracket) {
    rest = bracket[1] as string;
    if (bracket[2] !== undefined) port = portOf(source, bracket[2]);
  } else {
    const colons = rest.split(':').length - 1;
    if (colons === 1) {
      const [h, p] = rest.split(':') as [string, string];
      rest = h;
      port = portOf(source, p);
    } else if (colons > 1) {
      // A bare IPv6 literal without a port.
      rest = `[${rest}]`;
    }
  }
  let wildcard = false;
  if (rest.startsWith('*.')) {
    wildcard = true;
    rest = rest.slice(2);
  }
  if (rest.includes('*')) {
    throw new PatternError(source, 'may only use * as a whole leading label (*.example.com)');
  }
  let host: ReturnType<typeof normalizeHost>;
  try {
    host = normalizeHost(rest);
  } catch (error) {
    throw new PatternError(source, `is not a valid host: ${(error as TargetError).message}`);
  }
  if (host.kind === 'ip') {
    if (wildcard) throw new PatternError(source, 'cannot combine * with an IP address');
    return port === undefined
      ? { kind: 'ip', host: host.host, source }
      : { kind: 'ip', host: host.host, port, source };
  }
  if (wildcard && !host.host.includes('.') && host.host.length === 0) {
    throw new PatternError(source, 'needs a suffix after *.');
  }
  return port === undefined
    ? { kind: 'name', wildcard, host: host.host, source }
    : { kind: 'name', wildcard, host: host.host, port, source };
}

function portOf(source: string, text: string): number {
  try {
    return parsePort(text);
  } catch (error) {
    throw new PatternError(source, `has a bad port: ${(error as TargetError).message}`);
  }
}

/** True when `pattern` covers `target` (names never match IPs, nor IPs or ranges names). */
export function patternMatches(pattern: Pattern, target: Target): boolean {
  if (pattern.port !== undefined && pattern.port !== target.port) return false;
  if (pattern.kind === 'ip') return target.kind === 'ip' && target.host === pattern.host;
  if (pattern.kind === 'cidr') {
    return (
      target.kind === 'ip' &&
      target.family === pattern.family &&
      pattern.range.check(target.host, pattern.family === 4 ? 'ipv4' : 'ipv6')
    );
  }
  if (target.kind !== 'name') return false;
  if (pattern.wildcard) return target.host.endsWith(`.${pattern.host}`);
  return target.host === pattern.host;
}

/** The verdict on a target before resolution. */
export interface Verdict {
  readonly allowed: boolean;
  /** The pattern that decided it (the deny entry, or the allow entry). */
  readonly pattern?: string;
  readonly reason: string;
}

/** A compiled allow/deny list; deny entries win over allow entries. */
export interface Allowlist {
  readonly allow: readonly Pattern[];
  readonly deny: readonly Pattern[];
  decide(target: Target): Verdict;
  /**
   * True when an IP or CIDR allow entry covers `address:port` explicitly, and no deny entry does: the
   * permission that lets a loopback, private or reserved address through.
   */
  allowsAddressExplicitly(address: string, port: number): boolean;
}

/**
 * Compiles allow and deny patterns.
 *
 * @throws {PatternError} for the first malformed pattern.
 */
export function compileAllowlist(allow: readonly string[], deny: readonly string[] = []): Allowlist {
  const allowPatterns = allow.map(parsePattern);
  const denyPatterns = deny.map(parsePattern);
  return {
    allow: allowPatterns,
    deny: denyPatterns,
    decide(target) {
      const denied = denyPatterns.find((p) => patternMatches(p, target));
      if (denied) return { allowed: false, pattern: denied.source, reason: `denied by ${denied.source}` };
      const allowed = allowPatterns.find((p) => patternMatches(p, target));
      if (allowed) return { allowed: true, pattern: allowed.source, reason: `allowed by ${allowed.source}` };
      return { allowed: false, reason: 'not on the allowlist' };
    },
    allowsAddressExplicitly(address, port) {
      const target: Target = { kind: 'ip', host: address, family: address.includes(':') ? 6 : 4, port };
      return (
        !denyPatterns.some((p) => patternMatches(p, target)) &&
        allowPatterns.some((p) => patternMatches(p, target))
      );
    },
  };
}
