/**
 * Allowed names that lead where the proxy will not go: each name entry of an allowlist resolved once, as
 * the proxy would resolve it, and those whose addresses are loopback, private, link-local or reserved
 * (and not allowed by an address entry) listed with the entry that would let them through. `doctor` and
 * `aleph-sandbox profile` show them before a command runs into the refusal.
 */
import { compileAllowlist } from './allowlist.js';
import { addressEntry } from './denial.js';
import { defaultResolver } from './internal/authorize.js';
import type { Resolver } from './proxy.js';
import { forbiddenReason, normalizeHost } from './target.js';

/** An allowed name whose addresses the proxy refuses. */
export interface PrivateName {
  /** The allowlist entry (`registry.corp`, `registry.corp:8443`). */
  readonly entry: string;
  readonly name: string;
  /** The refused addresses, each with why. */
  readonly addresses: readonly { readonly address: string; readonly reason: string }[];
  /** The entries that would allow them (one per address). */
  readonly allowEntries: readonly string[];
}

/**
 * The name entries of `allow` (not wildcards: they name no host to resolve) whose addresses the proxy
 * would refuse. A name that does not resolve within `timeoutMs` (default 3 s) is left out.
 *
 * @example
 * ```ts
 * await findPrivateNames(['registry.corp', 'pypi.org']) // [{ entry: 'registry.corp', addresses: [{ address: '10.1.2.3', … }], allowEntries: ['10.1.2.3'] }]
 * ```
 */
export async function findPrivateNames(
  allow: readonly string[],
  options: {
    readonly resolver?: Resolver;
    readonly deny?: readonly string[];
    readonly timeoutMs?: number;
  } = {},
): Promise<PrivateName[]> {
  const allowlist = compileAllowlist(allow, options.deny ?? []);
  const resolver = options.resolver ?? defaultResolver;
  const names = allowlist.allow.filter((p) => p.kind === 'name' && !p.wildcard);
  const found = await Promise.all(
    names.map(async (p): Promise<PrivateName | undefined> => {
      let resolved: readonly string[];
      try {
        resolved = await withTimeout(resolver(p.host), options.timeoutMs ?? 3000);
      } catch {
        return undefined;
      }
      const addresses: { address: string; reason: string }[] = [];
      for (const raw of resolved) {
        let ip: ReturnType<typeof normalizeHost>;
        try {
          ip = normalizeHost(raw);
        } catch {
          continue;
        }
        if (ip.kind !== 'ip') continue;
        const why = forbiddenReason(ip.host, ip.family as 4 | 6);
        const port = p.port ?? 443;
        if (why !== undefined && !allowlist.allowsAddressExplicitly(ip.host, port))
          addresses.push({ address: ip.host, reason: why });
      }
      if (addresses.length === 0) return undefined;
      const allowEntries = [...new Set(addresses.map((a) => addressEntry(a.address)))];
      return { entry: p.source, name: p.host, addresses, allowEntries };
    }),
  );
  return found.filter((f): f is PrivateName => f !== undefined);
}

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    p,
    new Promise<T>((_r, reject) => {
      timer = setTimeout(() => reject(new Error('timed out')), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}
