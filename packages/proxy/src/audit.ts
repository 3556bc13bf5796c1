import diagnosticsChannel from 'node:diagnostics_channel';
import type { ProxyDenial } from './denial.js';
import type { Target } from './target.js';

/** The diagnostics channel every proxy decision is published on. */
export const PROXY_CHANNEL = 'aleph:proxy';
const channel = diagnosticsChannel.channel(PROXY_CHANNEL);

/** The record published on `aleph:proxy` for every decision. */
export interface ProxyRecord {
  readonly type: 'proxy';
  /** The entry path; `dns` for a name the sandbox's resolver refused and reported. */
  readonly entry: 'connect' | 'http' | 'socks5' | 'dns';
  readonly host: string;
  readonly port: number;
  readonly verdict: 'allow' | 'deny' | 'unreachable' | 'malformed';
  readonly reason: string;
  readonly pattern: string | null;
  /** The address dialled (allowed connections). */
  readonly address: string | null;
  readonly bytesUp: number;
  readonly bytesDown: number;
}

/** The entry path a request came in by. */
export type ProxyEntry = ProxyRecord['entry'];

/** The counters the audit keeps with its records (the proxy's stats read them). */
export interface ProxyCounters {
  connections: number;
  allowed: number;
  denied: number;
  failed: number;
  malformed: number;
  bytesUp: number;
  bytesDown: number;
  tunnels: number;
}

/** A refusal before dialling: denied by the allowlist or an address check, or not resolvable. */
export interface Refusal {
  readonly status: 'deny' | 'unreachable';
  readonly reason: string;
  readonly pattern: string | null;
  /** A denial (`status: 'deny'`), typed: what was refused and what would allow it. */
  readonly denial?: ProxyDenial;
}

/** Counts and publishes each outcome of a request. */
export interface ProxyAudit {
  publish(record: Omit<ProxyRecord, 'type'>): void;
  /** A request that could not be parsed into a target. */
  malformed(entry: ProxyEntry, host: string, port: number, reason: string): void;
  /** A target the allowlist denied or that could not be resolved. */
  refused(entry: ProxyEntry, target: Target, refusal: Refusal): void;
  /** An allowed target whose dial failed. */
  unreachable(
    entry: ProxyEntry,
    target: Target,
    via: { pattern: string | null; address: string },
    error: unknown,
  ): void;
}

const noTraffic = { bytesUp: 0, bytesDown: 0 } as const;

/** The audit of one proxy: records go to `aleph:proxy` (only when someone subscribes), counts to `counters`. */
export function createAudit(counters: ProxyCounters): ProxyAudit {
  const publish = (record: Omit<ProxyRecord, 'type'>) => {
    if (channel.hasSubscribers) channel.publish({ type: 'proxy', ...record });
  };
  return {
    publish,
    malformed(entry, host, port, reason) {
      counters.malformed++;
      publish({
        entry,
        host,
        port,
        verdict: 'malformed',
        reason,
        pattern: null,
        address: null,
        ...noTraffic,
      });
    },
    refused(entry, target, refusal) {
      if (refusal.status === 'deny') counters.denied++;
      else counters.failed++;
      publish({
        entry,
        host: target.host,
        port: target.port,
        verdict: refusal.status,
        reason: refusal.reason,
        pattern: refusal.pattern,
        address: null,
        ...noTraffic,
      });
    },
    unreachable(entry, target, via, error) {
      counters.failed++;
      publish({
        entry,
        host: target.host,
        port: target.port,
        verdict: 'unreachable',
        reason: (error as Error).message,
        pattern: via.pattern,
        address: via.address,
        ...noTraffic,
      });
    },
  };
}
