#!/usr/bin/env node
import { parseArgs } from 'node:util';
import { PatternError } from './allowlist.js';
import { parseParentProxy } from './parent.js';
import { type ParentProxy, startProxy } from './proxy.js';
import { createStaticResolver } from './resolver.js';
import { normalizeHost, TargetError } from './target.js';

const HELP = `aleph-proxy: the Aleph managed egress proxy (HTTP CONNECT, HTTP and SOCKS5 on one port)

Usage:
  aleph-proxy [--allow PATTERN]... [--deny PATTERN]... [--listen HOST:PORT] [--unix PATH] [--resolve NAME=IP]...
              [--parent HOST:PORT]

PATTERN: name, *.suffix (subdomains only), IPv4, [IPv6], or a CIDR range (10.0.0.0/8, 2001:db8::/32,
  [2001:db8::/32]:443), each with an optional :port. Deny entries win over allow entries.
  Names never match addresses: an IP or CIDR entry matches IP literals and the addresses names resolve to.
  Loopback, private, link-local, metadata and reserved addresses are refused unless an IP or CIDR --allow
  covers them: --allow 10.0.0.0/8 is the explicit permission that lets that private range through, both
  for IP literals and for allowed names that resolve into it.
--parent: reach allowed hosts through this HTTP proxy (CONNECT), e.g. a corporate proxy.
Prints one JSON line {"listen": "HOST:PORT", "unix": PATH|null} when ready; runs until SIGTERM or SIGINT.
Denied: HTTP 403 / SOCKS5 0x02. Allowed but unreachable: 502 / SOCKS5 0x04 or 0x05. Malformed: 400 / 0x01.
Exit codes: 0 after a clean shutdown, 2 for usage errors (a malformed pattern names the pattern and why).`;

class UsageError extends Error {}

function parseListen(value: string): { host: string; port: number } {
  const m = /^(\[[^\]]+\]|[^:]+):(\d+)$/.exec(value);
  if (!m) throw new UsageError(`--listen ${JSON.stringify(value)} must be HOST:PORT, e.g. 127.0.0.1:0`);
  const host = (m[1] as string).replace(/^\[|\]$/g, '');
  const port = Number(m[2]);
  if (port > 65535) throw new UsageError(`--listen port ${port} is above 65535`);
  return { host, port };
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    args: process.argv.slice(2),
    options: {
      allow: { type: 'string', multiple: true, default: [] },
      deny: { type: 'string', multiple: true, default: [] },
      listen: { type: 'string' },
      unix: { type: 'string' },
      resolve: { type: 'string', multiple: true, default: [] },
      parent: { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
    strict: true,
  });
  if (values.help) {
    process.stdout.write(`${HELP}\n`);
    return;
  }
  const table: Record<string, string[]> = {};
  for (const entry of values.resolve) {
    const m = /^([^=]+)=(.+)$/.exec(entry);
    if (!m) throw new UsageError(`--resolve ${JSON.stringify(entry)} must be NAME=IP`);
    try {
      const ip = normalizeHost(m[2] as string);
      if (ip.kind !== 'ip') throw new TargetError(`${m[2]} is not an IP address`);
      const name = m[1] as string;
      table[name] = [...(table[name] ?? []), ip.host];
    } catch (error) {
      throw new UsageError(`--resolve ${JSON.stringify(entry)}: ${(error as Error).message}`);
    }
  }
  const listen = values.listen === undefined ? { host: '127.0.0.1', port: 0 } : parseListen(values.listen);
  let parent: ParentProxy | undefined;
  try {
    parent = values.parent === undefined ? undefined : parseParentProxy(values.parent);
  } catch (error) {
    throw new UsageError(`--parent: ${(error as Error).message}`);
  }
  const proxy = await startProxy({
    allow: values.allow,
    deny: values.deny,
    listen,
    ...(values.unix === undefined ? {} : { unixPath: values.unix }),
    ...(values.resolve.length === 0 ? {} : { resolver: createStaticResolver(table) }),
    ...(parent === undefined ? {} : { parent }),
  });
  // Before the ready line: whoever reads it may send SIGTERM at once.
  const stop = () => {
    void proxy.close().then(() => process.exit(0));
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
  const a = proxy.address;
  if (a !== null && !/^(127\.|::1$|::ffff:127\.)/.test(a.host)) {
    process.stderr.write(
      `aleph-proxy: warning: listening on ${a.host}, not loopback: anyone who can reach this host can use the proxy to reach the allowed hosts\n`,
    );
  }
  process.stdout.write(
    `${JSON.stringify({
      listen: a === null ? null : a.host.includes(':') ? `[${a.host}]:${a.port}` : `${a.host}:${a.port}`,
      unix: proxy.unixPath ?? null,
      allow: values.allow,
      deny: values.deny,
    })}\n`,
  );
}

// Whoever started the proxy may stop reading once it has the ready line; the proxy serves on.
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code !== 'EPIPE') throw error;
});

main().catch((error: unknown) => {
  const usage =
    error instanceof UsageError ||
    error instanceof PatternError ||
    (error as { code?: string }).code?.startsWith('ERR_PARSE_ARGS');
  process.stderr.write(`aleph-proxy: ${(error as Error).message}\n`);
  process.exit(usage ? 2 : 1);
});
