/**
 * Typed refusals: what the proxy refused and what would allow it, in the shape a sandbox reports in its
 * output (`details.denials`). Built where the decision is made (the authorizer, the resolver's reports),
 * so the record says exactly what the decision was.
 */
import { type Allowlist, type Pattern, patternMatches } from './allowlist.js';
import { formatTarget, normalizeHost, parseAuthority, type Target } from './target.js';

/** One refusal of the proxy (or of the sandbox's resolver, which reports to it). */
export interface ProxyDenial {
  /**
   * `network.host`: the host is not on the allowlist (or a deny entry names it); `network.port`: the host
   * is, but only for other ports; `network.private-address`: an allowed name resolved to a loopback,
   * private, link-local or reserved address; `network.dns`: the sandbox's resolver refused the name;
   * `network.udp`: a UDP datagram to `target`, which the sandbox does not relay (its resolver aside).
   */
  readonly kind: 'network.host' | 'network.port' | 'network.private-address' | 'network.dns' | 'network.udp';
  /** `host:port` (a name for `network.dns`). */
  readonly target: string;
  readonly reason: string;
  /**
   * The allowlist entry that would allow it: `api.example.com`, `api.example.com:8443`, `10.0.0.5`
   * (`network.udp`: the entry that allows the host over TCP, which does not allow the datagram).
   */
  readonly allowEntry: string;
  /** What allows it where no allowlist entry does (`network.udp`), in the words of `details.denials`. */
  readonly allowWith?: string;
  /** The deny entry that refused it: allowing it means removing that entry. */
  readonly deniedBy?: string;
  /** `network.private-address`: the address the name resolved to. */
  readonly address?: string;
}

/** An address as an allowlist entry (IPv6 in brackets). */
export function addressEntry(address: string): string {
  return address.includes(':') ? `[${address}]` : address;
}

/** The allow entries that cover `target` but for its port. */
function otherPorts(allowlist: Allowlist, target: Target): Pattern[] {
  return allowlist.allow.filter(
    (p) => p.port !== undefined && p.port !== target.port && patternMatches(p, { ...target, port: p.port }),
  );
}

/** The denial of `target`, which the allowlist refused (`deniedBy`: the deny entry that did, if one). */
export function listDenial(allowlist: Allowlist, target: Target, deniedBy: string | undefined): ProxyDenial {
  const where = formatTarget(target);
  const host = addressEntry(target.host);
  if (deniedBy !== undefined) {
    return {
      kind: 'network.host',
      target: where,
      reason: `${target.host} is on the deny list (${deniedBy})`,
      allowEntry: host,
      deniedBy,
    };
  }
  const ports = otherPorts(allowlist, target);
  if (ports.length > 0) {
    return {
      kind: 'network.port',
      target: where,
      reason: `${target.host} is allowed only on port ${[...new Set(ports.map((p) => p.port))].join(', ')}, not ${target.port}`,
      allowEntry: `${host}:${target.port}`,
    };
  }
  return {
    kind: 'network.host',
    target: where,
    reason: `${target.host} is not on the allowlist`,
    allowEntry: host,
  };
}

/** The denial of the allowed name `target` that resolved to the forbidden `address`. */
export function privateAddressDenial(target: Target, address: string, why: string): ProxyDenial {
  return {
    kind: 'network.private-address',
    target: formatTarget(target),
    reason: `${target.host} resolves to ${address}, ${why}`,
    allowEntry: addressEntry(address),
    address,
  };
}

/**
 * The denial of a name the sandbox's resolver refused (`ALEPH dns-refused NAME`), checked against this
 * allowlist: `undefined` when the name is not one (malformed) or is in fact allowed on some port, so a
 * report can only record what is true.
 */
export function dnsDenial(allowlist: Allowlist, name: string): ProxyDenial | undefined {
  let host: string;
  try {
    const n = normalizeHost(name);
    if (n.kind !== 'name') return undefined;
    host = n.host;
  } catch {
    return undefined;
  }
  const anyPort = (p: Pattern) => patternMatches(p, { kind: 'name', host, port: p.port ?? 1 });
  const denied = allowlist.deny.find((p) => p.port === undefined && anyPort(p));
  if (denied === undefined && allowlist.allow.some(anyPort)) return undefined;
  return {
    kind: 'network.dns',
    target: host,
    reason:
      denied === undefined
        ? `${host} is not on the allowlist: the sandbox's resolver answered NXDOMAIN`
        : `${host} is on the deny list (${denied.source}): the sandbox's resolver answered NXDOMAIN`,
    allowEntry: host,
    ...(denied === undefined ? {} : { deniedBy: denied.source }),
  };
}

/**
 * The denial of a connection the sandbox's kernel refused on the transparent path (`ALEPH port-refused
 * TARGET`, an address or an allowed name with its port: nothing listens on that port in the sandbox's network namespace, as it is not among the
 * egress ports), checked against this allowlist: the list's own denial when it refuses the target, else a
 * `network.port` denial whose entry (the address with that port) adds the port to the egress ports.
 * The bridge names an allowed name's synthetic address by the name. `undefined` for a malformed target.
 */
export function transparentPortDenial(allowlist: Allowlist, text: string): ProxyDenial | undefined {
  let target: Target;
  try {
    target = parseAuthority(text);
  } catch {
    return undefined;
  }
  const verdict = allowlist.decide(target);
  if (!verdict.allowed) return listDenial(allowlist, target, verdict.pattern);
  const where = formatTarget(target);
  return {
    kind: 'network.port',
    target: where,
    reason: `${target.host} is allowed, but port ${target.port} is not among the sandbox's transparent egress ports, so the connection was refused inside (a client using the proxy variables reaches it)`,
    allowEntry: `${addressEntry(target.host)}:${target.port}`,
  };
}

/** What allows a UDP datagram to another host: no allowlist entry, only the host's whole network. */
export const UDP_ALLOW_WITH =
  'no allowlist entry allows UDP: the sandbox relays TCP (through the managed proxy) and DNS (to its resolver, 127.0.0.53) only; the host\'s whole network, UDP included: aleph-sandbox run --net all (capabilities.network = { kind: "allowAll" }; Linux driver)';

/**
 * The denial of a UDP datagram the sandbox's kernel refused on the transparent path (`ALEPH udp-refused
 * TARGET`: an address, or an allowed name for its synthetic address, with the datagram's port): only the
 * sandbox's resolver takes datagrams there. `undefined` for a malformed target.
 */
export function udpDenial(allowlist: Allowlist, text: string): ProxyDenial | undefined {
  let target: Target;
  try {
    target = parseAuthority(text);
  } catch {
    return undefined;
  }
  const allowed = allowlist.decide(target).allowed;
  return {
    kind: 'network.udp',
    target: formatTarget(target),
    reason: `${allowed ? `${target.host} is allowed, but only over TCP` : `${target.host} is not on the allowlist`}: the sandbox relays no UDP datagrams (DNS goes to its own resolver), so the datagram to port ${target.port} was refused inside`,
    allowEntry: addressEntry(target.host),
    allowWith: UDP_ALLOW_WITH,
  };
}
