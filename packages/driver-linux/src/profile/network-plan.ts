/**
 * The network part of a tier 1–2 plan, beyond the namespace itself: for allowHosts, the resolver inside
 * (a generated /etc/resolv.conf naming 127.0.0.53, where the bridge answers for the allowlist's names,
 * and a generated /etc/hosts with localhost alone, so every other name goes to that resolver) and
 * transparent egress (every address routes to the namespace's loopback; the bridge listens on the egress
 * ports: 80, 443, those the allowlist names and those configured, for names and addresses alike); for any network of its own, the ports published on the host's loopback. What it
 * adds to bwrap's, the helper's and the launcher's arguments, and to the profile's network section.
 */

import { parsePattern } from '@aleph/proxy/patterns';
import { InvalidInputError, type SandboxCapabilities } from '@aleph/sandbox-core';
import { BRIDGE_PORT } from '../options.js';
import type { HostTrust } from './host-trust.js';

/** Egress ports when none are configured. */
export const DEFAULT_EGRESS_PORTS: readonly number[] = [80, 443];
/** The bridge holds at most this many egress ports (`--egress-port`). */
const MAX_EGRESS_PORTS = 64;
/** Where the sandbox's resolver listens. */
export const RESOLVER_ADDRESS = '127.0.0.53';
/** The descriptor bwrap reads the generated resolv.conf from (after the seccomp program and the env). */
export const RESOLV_CONF_FD = 5;
/** What the sandbox's /etc/resolv.conf says. */
export const RESOLV_CONF = `# aleph-sandbox: the sandbox's own resolver, which answers only for the names allowHosts allows\nnameserver ${RESOLVER_ADDRESS}\noptions timeout:2 attempts:2\n`;

/** The descriptor bwrap reads the generated hosts file from (after the resolv.conf). */
export const HOSTS_FD = 6;
/**
 * What the sandbox's /etc/hosts says: localhost alone. The host's own entries would resolve inside to
 * addresses the bridge does not know, and take names past the allowlist's resolver; every other name goes
 * to that resolver, which answers allowed ones.
 */
export const HOSTS_FILE =
  "# aleph-sandbox: localhost alone; every other name goes to the sandbox's resolver (/etc/resolv.conf)\n127.0.0.1 localhost\n::1 localhost ip6-localhost ip6-loopback\n";

/** What the network plan is built from besides the capabilities. */
export interface NetworkInputs {
  /** The configured egress ports (`proxy.egressPorts`); default {@link DEFAULT_EGRESS_PORTS}. */
  readonly egressPorts?: readonly number[] | undefined;
  /** The proxy's deny patterns: names among them the resolver refuses too. */
  readonly proxyDeny?: readonly string[] | undefined;
  /** Where /etc/resolv.conf really is inside (the target of a symlink, e.g. systemd-resolved's). */
  readonly resolvConfPath?: string | undefined;
  /** Where /etc/hosts really is inside; undefined when the host has none (nothing to shadow). */
  readonly hostsPath?: string | undefined;
  /** The host's TLS trust, given to commands with a network (`host-trust.ts`). */
  readonly trust?: HostTrust | undefined;
}

/** The network plan of one execution. */
export interface NetworkPlan {
  /**
   * bwrap arguments after the mounts (the resolv.conf from descriptor {@link RESOLV_CONF_FD}, the hosts
   * file from {@link HOSTS_FD}).
   */
  readonly bwrap: readonly string[];
  /** bwrap keeps CAP_NET_BIND_SERVICE for the helper, which binds the bridge's ports below 1024. */
  readonly bindLowPorts: boolean;
  /** The bridge's helper arguments. */
  readonly helper: readonly string[];
  /** The launcher's arguments (`--publish PORT`). */
  readonly launcher: readonly string[];
  /** The resolver, in the profile (allowHosts only). */
  readonly resolver: {
    readonly address: string;
    readonly names: readonly string[];
    readonly deny: readonly string[];
  } | null;
  readonly egressPorts: readonly number[];
  /** Ports published on the host's 127.0.0.1 (none with allowAll: the command is on the host's network). */
  readonly publish: readonly number[];
}

/** The resolver's name patterns of an allowlist: `name` and `*.suffix`, normalised as the proxy does. */
function namePatterns(entries: readonly string[], withPort: boolean): string[] {
  const out: string[] = [];
  for (const entry of entries) {
    const p = parsePattern(entry);
    if (p.kind !== 'name' || (!withPort && p.port !== undefined)) continue;
    out.push(p.wildcard ? `*.${p.host}` : p.host);
  }
  return [...new Set(out)];
}

/**
 * The egress ports of an allowlist: the configured ones and every port an entry names, but 53 and the
 * bridge's own port (the resolver and the proxy variables' address hold those).
 *
 * @throws {InvalidInputError} when that makes more than 64.
 */
export function egressPortsOf(hosts: readonly string[], configured: readonly number[]): number[] {
  const ports = new Set(configured);
  for (const entry of hosts) {
    const port = parsePattern(entry).port;
    if (port !== undefined) ports.add(port);
  }
  ports.delete(53);
  ports.delete(BRIDGE_PORT);
  const list = [...ports].sort((a, b) => a - b);
  if (list.length > MAX_EGRESS_PORTS)
    throw new InvalidInputError(
      'ALEPH_INVALID_COMMAND',
      'capabilities.network.hosts',
      hosts.join(','),
      `names ${list.length} ports, more than the ${MAX_EGRESS_PORTS} the sandbox's transparent egress listens on`,
      'name fewer ports (an entry without a port allows every port through the proxy variables)',
    );
  return list;
}

/**
 * The network plan of `caps` in a tier 1–2 plan. Tier 2 (`privileged` false) binds the bridge's low ports
 * in a network namespace the helper makes (`--own-netns`): bwrap's belongs to a user namespace outside the
 * sandbox's, where nothing of it holds CAP_NET_BIND_SERVICE.
 */
export function planNetwork(
  caps: SandboxCapabilities,
  inputs: NetworkInputs,
  privileged: boolean,
): NetworkPlan {
  const net = caps.network;
  const publish = net.kind === 'allowAll' ? [] : [...new Set(caps.publishPorts ?? [])].sort((a, b) => a - b);
  const launcher = publish.flatMap((p) => ['--publish', String(p)]);
  const publishArgs = publish.length > 0 ? ['--publish-fd', '@PUBLISH'] : [];
  if (net.kind !== 'allowHosts') {
    return {
      bwrap: [],
      bindLowPorts: false,
      helper: publishArgs,
      launcher,
      resolver: null,
      egressPorts: [],
      publish,
    };
  }
  const names = namePatterns(net.hosts, true);
  const deny = namePatterns(inputs.proxyDeny ?? [], false);
  // Nothing allowed (no network, routed): no egress port either, so a connection anywhere is refused by
  // the kernel as with no bridge (a client sees ECONNREFUSED, not a proxy's answer), and still reported.
  const egressPorts =
    net.hosts.length === 0 ? [] : egressPortsOf(net.hosts, inputs.egressPorts ?? DEFAULT_EGRESS_PORTS);
  const helper = [
    ...(privileged ? [] : ['--own-netns', 'on']),
    '--dns',
    'on',
    ...names.flatMap((n) => ['--dns-allow', n]),
    ...deny.flatMap((n) => ['--dns-deny', n]),
    ...egressPorts.flatMap((p) => ['--egress-port', String(p)]),
    ...publishArgs,
  ];
  return {
    bwrap: [
      '--perms',
      '0644',
      '--ro-bind-data',
      String(RESOLV_CONF_FD),
      inputs.resolvConfPath ?? '/etc/resolv.conf',
      ...(inputs.hostsPath === undefined
        ? []
        : ['--perms', '0644', '--ro-bind-data', String(HOSTS_FD), inputs.hostsPath]),
    ],
    bindLowPorts: true,
    helper,
    launcher,
    resolver: { address: RESOLVER_ADDRESS, names, deny },
    egressPorts,
    publish,
  };
}

/** The network plan in words, for the profile's summary. */
export function networkPlanInWords(plan: NetworkPlan): string[] {
  const lines: string[] = [];
  if (plan.resolver !== null) {
    lines.push(
      `dns: /etc/hosts has localhost alone; /etc/resolv.conf names ${plan.resolver.address}, the bridge's resolver: ${plan.resolver.names.join(', ') || 'no name'} resolve to addresses of 127.77.0.0/16 (IPv4 only), any other name is NXDOMAIN at once and reported`,
      `egress: every address routes to the namespace's loopback; connections on port ${plan.egressPorts.join(', ')} go to the managed proxy as CONNECT name:port for those addresses and CONNECT address:port for any other (the proxy's allowlist and address checks decide, and record each refusal); other ports are refused by the kernel; the proxy variables stay set`,
    );
  }
  if (plan.publish.length > 0)
    lines.push(
      `publish: the host's 127.0.0.1:${plan.publish.join(', 127.0.0.1:')} reach the same ports of the sandbox's loopback while the command runs`,
    );
  return lines;
}
