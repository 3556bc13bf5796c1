import type { ParentProxy } from './proxy.js';
import { parsePort, TargetError } from './target.js';

/**
 * Reads a parent proxy address as users write it: `HOST:PORT`, `[IPv6]:PORT` or `http://HOST:PORT`
 * (a trailing `/` allowed). Only plain HTTP proxies that accept CONNECT are supported, so `https://`,
 * `socks5://`, credentials and paths are refused with a message that says so.
 *
 * @throws {TargetError} naming the value and what to write instead.
 */
export function parseParentProxy(value: string): ParentProxy {
  const example = 'e.g. proxy.example.com:3128 or http://10.0.0.1:8080';
  const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(value)?.[1]?.toLowerCase();
  if (scheme !== undefined && scheme !== 'http') {
    throw new TargetError(
      `parent proxy ${JSON.stringify(value)}: only an http:// proxy that accepts CONNECT is supported, not ${scheme}://; ${example}`,
    );
  }
  const rest = scheme === undefined ? value : value.slice(value.indexOf('://') + 3).replace(/\/$/, '');
  if (rest.includes('@')) {
    throw new TargetError(`parent proxy ${JSON.stringify(value)}: credentials are not supported; ${example}`);
  }
  const m = /^(\[[0-9a-fA-F:.]+\]|[^:/[\]]+):([^:/]+)$/.exec(rest);
  if (m === null)
    throw new TargetError(`parent proxy ${JSON.stringify(value)} must be HOST:PORT; ${example}`);
  const host = (m[1] as string).replace(/^\[|\]$/g, '');
  try {
    return { host, port: parsePort(m[2] as string) };
  } catch (error) {
    throw new TargetError(`parent proxy ${JSON.stringify(value)}: ${(error as Error).message}; ${example}`);
  }
}
