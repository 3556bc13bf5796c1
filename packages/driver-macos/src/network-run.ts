/**
 * An allowHosts run's network on macOS: the run's own entrance of the shared managed proxy (a loopback
 * port the profile allows and nothing else), the proxy variables naming it, and afterwards the proxy's
 * refusals of that run as `details.denials`, typed as on Linux.
 *
 * What it cannot do on macOS: Seatbelt confines a process but gives it no network of its own, so there is
 * no resolver inside and no transparent egress. Only clients that use the proxy variables reach the
 * allowed hosts; any other connection is refused by the profile (EPERM), and names do not resolve inside.
 * No port can be published either (`net.publish` is not declared): a server of the command would listen
 * on the host's own network.
 */
import type { ProxyLease, ProxyPool } from '@aleph/proxy/pool';
import { networkDenial, type SandboxDenial } from '@aleph/sandbox-core';

/** What the macOS driver says it does not enforce for the network (see the module comment). */
export const MACOS_NETWORK_GAP =
  'transparent-egress: Seatbelt gives a command no network of its own: no resolver inside and no transparent egress, so with allowHosts only clients that use the proxy variables reach the allowed hosts (others get EPERM), and no port can be published';

/** One run's view of the managed proxy. */
export interface RunNetwork {
  /** The run's entrance port on 127.0.0.1 (the only one the profile lets it connect to). */
  readonly port: number;
  /** The proxy variables, naming that port. */
  readonly env: Readonly<Record<string, string>>;
  /** Once the run has ended: its refusals, as denials whose `allowWith` names the fix. */
  denials(): Promise<SandboxDenial[]>;
  /** Closes the entrance and releases the proxy (idempotent). */
  release(): void;
}

/** Opens the network of a run allowed `hosts`. */
export async function openRunNetwork(pool: ProxyPool, hosts: readonly string[]): Promise<RunNetwork> {
  const lease: ProxyLease = await pool.acquire(hosts, { entrance: true });
  const port = lease.entrance?.address?.port;
  if (port === undefined) {
    lease.release();
    throw new Error('the managed proxy opened no loopback entrance for the run');
  }
  return {
    port,
    env: lease.proxy.env({ host: '127.0.0.1', port }),
    async denials() {
      const refused = (await lease.entrance?.settle()) ?? [];
      return refused.map((d) => networkDenial(d, hosts));
    },
    release: () => lease.release(),
  };
}
