/**
 * Network refusals as `details.denials` entries: what the managed proxy (or the sandbox's resolver)
 * refused, with `allowWith` naming the exact capability, CLI flag and config line that would allow it.
 * Shared by the drivers, so the text is the same on every platform.
 */
import type { SandboxDenial } from './output.js';

/** A typed refusal of the egress proxy (the shape of `@aleph/proxy`'s `ProxyDenial`). */
export interface NetworkRefusal {
  readonly kind: string;
  readonly target: string;
  readonly reason: string;
  /** The allowlist entry that would allow it. */
  readonly allowEntry: string;
  /** The deny-list entry that refused it, when one did. */
  readonly deniedBy?: string;
  /** What allows it where no allowlist entry does (a UDP datagram): the denial's `allowWith` as it is. */
  readonly allowWith?: string;
}

/**
 * The refusal `r` of a run whose allowlist was `hosts`, as a {@link SandboxDenial}.
 *
 * @example
 * ```ts
 * networkDenial({ kind: 'network.host', target: 'evil.test:443', reason: 'evil.test is not on the allowlist', allowEntry: 'evil.test' }, ['api.test'])
 * // allowWith: 'add "evil.test" to the allowed hosts: aleph-sandbox run --net api.test,evil.test (capabilities.network = { kind: "allowHosts", hosts: ["api.test", "evil.test"] }; config [sandbox.network] allow)'
 * ```
 */
export function networkDenial(r: NetworkRefusal, hosts: readonly string[]): SandboxDenial {
  if (r.allowWith !== undefined)
    return { kind: r.kind, target: r.target, reason: r.reason, allowWith: r.allowWith };
  if (r.deniedBy !== undefined) {
    return {
      kind: r.kind,
      target: r.target,
      reason: r.reason,
      allowWith: `remove "${r.deniedBy}" from the proxy's deny list (config [sandbox.network] deny; Linux and macOS driver option proxy.deny)`,
    };
  }
  const all = hosts.includes(r.allowEntry) ? hosts : [...hosts, r.allowEntry];
  return {
    kind: r.kind,
    target: r.target,
    reason: r.reason,
    allowWith: `add "${r.allowEntry}" to the allowed hosts: aleph-sandbox run --net ${all.join(',')} (capabilities.network = { kind: "allowHosts", hosts: ${JSON.stringify(all).replaceAll('","', '", "')} }; config [sandbox.network] allow)`,
  };
}

const ALLOW_ENTRY = /^add "([^"]+)" to the allowed hosts: /;

/**
 * The allowlist entry that would allow a denial {@link networkDenial} made (its `allowWith` names it), or
 * undefined for any other denial (a deny-list refusal, another kind).
 *
 * @example
 * ```ts
 * networkAllowEntry(networkDenial({ kind: 'network.port', target: 'api.test:80', reason: '…', allowEntry: 'api.test:80' }, ['api.test']))
 * // 'api.test:80'
 * ```
 */
export function networkAllowEntry(denial: SandboxDenial): string | undefined {
  if (!denial.kind.startsWith('network.')) return undefined;
  return ALLOW_ENTRY.exec(denial.allowWith)?.[1];
}

/** `details.denials` of an output, when it has any (each checked for its shape). */
export function denialsOf(details: Readonly<Record<string, unknown>> | undefined): SandboxDenial[] {
  const list = details?.denials;
  if (!Array.isArray(list)) return [];
  return list.filter(
    (d): d is SandboxDenial =>
      typeof d === 'object' &&
      d !== null &&
      ['kind', 'target', 'reason', 'allowWith'].every(
        (k) => typeof (d as Record<string, unknown>)[k] === 'string',
      ),
  );
}
