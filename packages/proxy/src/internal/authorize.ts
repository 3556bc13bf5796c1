import { lookup } from 'node:dns/promises';
import { type Allowlist, patternMatches } from '../allowlist.js';
import type { Refusal } from '../audit.js';
import { listDenial, privateAddressDenial } from '../denial.js';
import type { Resolver } from '../proxy.js';
import { forbiddenReason, normalizeHost, type Target } from '../target.js';

/** Where an allowed target is dialled, or why it is not. */
export type Authorization =
  | { ok: true; address: string; family: 4 | 6; pattern: string | null }
  | ({ ok: false } & Refusal);

/** Decides one target: allowlist first, then (for a name) one resolution and the address checks. */
export type Authorize = (target: Target) => Promise<Authorization>;

/** The system resolver, every address in the order it returns them. */
export function defaultResolver(hostname: string): Promise<readonly string[]> {
  return lookup(hostname, { all: true, verbatim: true }).then((list) => list.map((a) => a.address));
}

function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    p,
    new Promise<T>((_r, reject) => {
      timer = setTimeout(() => reject(new Error(`${what} timed out after ${ms} ms`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

/**
 * The decision function every entry path asks: the allowlist decides the target; an allowed name is
 * resolved once, and every address it resolves to must pass the deny list and the forbidden-address
 * checks (loopback, private, metadata, …) unless an IP allow entry names it. The first address is the one
 * dialled: no second lookup.
 */
export function createAuthorizer(allowlist: Allowlist, resolver: Resolver, timeoutMs: number): Authorize {
  return async (target) => {
    const verdict = allowlist.decide(target);
    if (!verdict.allowed)
      return {
        ok: false,
        status: 'deny',
        reason: verdict.reason,
        pattern: verdict.pattern ?? null,
        denial: listDenial(allowlist, target, verdict.pattern),
      };
    const pattern = verdict.pattern ?? null;
    if (target.kind === 'ip') return { ok: true, address: target.host, family: target.family, pattern };
    let addresses: readonly string[];
    try {
      addresses = await withTimeout(resolver(target.host), timeoutMs, `resolving ${target.host}`);
    } catch (error) {
      return {
        ok: false,
        status: 'unreachable',
        reason: `cannot resolve ${target.host}: ${(error as Error).message}`,
        pattern,
      };
    }
    const ips: { host: string; family: 4 | 6 }[] = [];
    for (const a of addresses) {
      try {
        const n = normalizeHost(a);
        if (n.kind === 'ip') ips.push({ host: n.host, family: n.family as 4 | 6 });
      } catch {
        // Not an address; ignore it.
      }
    }
    if (ips.length === 0) {
      return { ok: false, status: 'unreachable', reason: `${target.host} resolved to no address`, pattern };
    }
    // Every address the name resolves to must be acceptable (no rebinding to a private address).
    for (const ip of ips) {
      const ipTarget: Target = { kind: 'ip', host: ip.host, family: ip.family, port: target.port };
      // IP and CIDR deny entries apply to resolved addresses too.
      const denied = allowlist.deny.find((p) => p.kind !== 'name' && patternMatches(p, ipTarget));
      if (denied)
        return {
          ok: false,
          status: 'deny',
          reason: `${target.host} resolves to ${ip.host}, denied by ${denied.source}`,
          pattern: denied.source,
          denial: {
            ...listDenial(allowlist, target, denied.source),
            reason: `${target.host} resolves to ${ip.host}, denied by ${denied.source}`,
            address: ip.host,
          },
        };
      const why = forbiddenReason(ip.host, ip.family);
      if (why !== undefined && !allowlist.allowsAddressExplicitly(ipTarget.host, target.port)) {
        return {
          ok: false,
          status: 'deny',
          reason: `${target.host} resolves to ${ip.host}, ${why}`,
          pattern,
          denial: privateAddressDenial(target, ip.host, why),
        };
      }
    }
    const chosen = ips[0] as { host: string; family: 4 | 6 };
    return { ok: true, address: chosen.host, family: chosen.family, pattern };
  };
}
