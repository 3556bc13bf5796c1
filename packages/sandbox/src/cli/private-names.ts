/**
 * Allowed names that resolve to a loopback, private or reserved address, which the managed proxy refuses
 * unless the address is allowed too: found before a command runs into the refusal, for `profile` and
 * `doctor`, with the exact `--net` value that allows them.
 */
import type { NetworkPolicy } from '@aleph/sandbox-core';

/** One such name, as `profile --json` and `doctor --json` give it. */
export interface PrivateNameReport {
  readonly entry: string;
  readonly addresses: readonly { readonly address: string; readonly reason: string }[];
  readonly allowEntries: readonly string[];
  /** In words: where it leads and the `--net` value that allows it. */
  readonly summary: string;
}

/** The private names of `network` (an allowHosts policy; none for any other), resolved by the system. */
export async function privateNamesOf(
  network: NetworkPolicy,
  deny: readonly string[],
): Promise<PrivateNameReport[]> {
  if (network.kind !== 'allowHosts') return [];
  const { findPrivateNames } = await import('@aleph/proxy');
  const hosts = network.hosts;
  return (await findPrivateNames(hosts, { deny })).map(({ entry, addresses, allowEntries }) => {
    const all = [...hosts, ...allowEntries.filter((e) => !hosts.includes(e))];
    const where = addresses.map((a) => `${a.address} (${a.reason})`).join(', ');
    const summary = `private: ${entry} resolves to ${where}: the proxy refuses it unless the address is allowed too: --net ${all.join(',')} (or add ${allowEntries.map((e) => `"${e}"`).join(', ')} to [sandbox.network] allow)`;
    return { entry, addresses, allowEntries, summary };
  });
}
