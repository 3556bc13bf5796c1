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
  | { readonly kind: 'ip'; readonly host: string; readonly port?: number; readonly source: string };

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
 * or bracketed IPv6 literal, each with an optional `:port` (no port = any port). Names and IPs are
 * normalised exactly like targets, so `0x7f.1` means 127.0.0.1 and `Example.COM.` means example.com.
 *
 * @throws {PatternError} naming the pattern and why.
 */
export function parsePattern(source: string): Pattern {
  let rest = source.trim();
  if (rest === '') throw new PatternError(source, 'is empty; use a host such as api.example.com');
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

/** True when `pattern` covers `target` (names never match IPs, nor IPs names). */
export function patternMatches(pattern: Pattern, target: Target): boolean {
  if (pattern.port !== undefined && pattern.port !== target.port) return false;
  if (pattern.kind === 'ip') return target.kind === 'ip' && target.host === pattern.host;
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
  /** True when an IP allow entry covers `address:port` explicitly (lets a private address through). */
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
