import { lookup } from 'node:dns/promises';
import type { Resolver } from './proxy.js';
import { normalizeHost } from './target.js';

/**
 * A resolver answering from a fixed table (`NAME=IP`, as `--resolve` gives), falling back to
 * `fallback` (default: the system resolver) for other names, or failing when `fallback` is `false`.
 *
 * @example
 * ```ts
 * startProxy({ allow: ['api.test', '127.0.0.1'], resolver: createStaticResolver({ 'api.test': ['127.0.0.1'] }, false) })
 * ```
 */
export function createStaticResolver(
  table: Readonly<Record<string, readonly string[]>>,
  fallback: Resolver | false = (name) =>
    lookup(name, { all: true, verbatim: true }).then((l) => l.map((a) => a.address)),
): Resolver {
  const map = new Map<string, readonly string[]>();
  for (const [name, ips] of Object.entries(table)) map.set(normalizeHost(name).host, ips);
  return async (hostname) => {
    const hit = map.get(hostname);
    if (hit !== undefined) return hit;
    if (fallback === false) throw new Error(`${hostname} is not in the resolver table`);
    return fallback(hostname);
  };
}
