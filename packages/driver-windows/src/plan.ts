import { existsSync, lstatSync } from 'node:fs';
import { isIP } from 'node:net';
import path from 'node:path';
import { InvalidInputError, type SandboxCapabilities, type SandboxProfile } from '@aleph/sandbox-core';
import { ACCESS, type JobLimits, SID, UI_RESTRICT_ALL } from './win32.js';

/** The tiers, strongest first. */
export type Tier = 'appcontainer' | 'restricted' | 'host';

/** Protected sub-paths of writable roots on Windows, by default: all of `.git` and the agents' own dirs. */
export const DEFAULT_WINDOWS_PROTECTED_PATHS = ['.git', '.aleph', '.codex', '.agents'] as const;

/** The Windows profile: the tier chain and every ACL, label and job setting it will apply. */
export interface WindowsProfile extends SandboxProfile {
  readonly driver: 'windows';
  /** Tried in order; a tier that cannot be set up hands over to the next (see the driver docs). */
  readonly tiers: readonly Tier[];
  readonly network: 'none' | 'all';
  /** AppContainer capability SIDs (tier 1). */
  readonly capabilitySids: readonly string[];
  /** ACEs granted to the AppContainer SID for the run (tier 1), revoked afterwards. */
  readonly grants: readonly {
    readonly path: string;
    readonly access: 'read' | 'read-write';
    readonly mask: number;
  }[];
  /** Writable roots: labelled low integrity for the run (tier 2). */
  readonly writableRoots: readonly string[];
  /** Protected paths: denied to the AppContainer (tier 1), kept at medium integrity (tier 2). */
  readonly protected: { readonly existing: readonly string[]; readonly stubs: readonly string[] };
  readonly job: JobLimits & { readonly uiRestrictions: number };
}

/** Options of {@link planWindowsProfile}. */
export interface WindowsPlanOptions {
  readonly protectedPaths: readonly string[];
  /** Process limit when subprocesses are allowed (JobObject ActiveProcessLimit). */
  readonly maxProcesses: number;
  /** Start at tier 1 (and refuse to go further when `requireAppContainer`). */
  readonly tiers: readonly Tier[];
}

/**
 * Refuses a writable path one of whose components is a symbolic link or junction: an ACL or label set on
 * it would land on whatever it points to.
 */
export function assertNoLinkComponents(field: string, p: string): void {
  const resolved = path.resolve(p);
  const { root } = path.parse(resolved);
  let current = root;
  for (const part of resolved.slice(root.length).split(path.sep).filter(Boolean)) {
    current = path.join(current, part);
    let isLink = false;
    try {
      isLink = lstatSync(current).isSymbolicLink();
    } catch {
      return; // the rest does not exist yet
    }
    if (isLink) {
      throw new InvalidInputError(
        'ALEPH_INVALID_COMMAND',
        field,
        p,
        `has a symbolic link or junction at ${current}; ACLs set through it would land on its target`,
        'grant the real path (fs.realpathSync) instead',
      );
    }
  }
}

/**
 * Plans one execution: tiers, AppContainer capabilities from the network policy, ACL grants, protected
 * paths (existing ones denied, missing ones stubbed) and the job limits.
 *
 * @throws {InvalidInputError} for a writable path with a link component
 */
export function planWindowsProfile(
  caps: SandboxCapabilities,
  cwd: string,
  workspace: string,
  options: WindowsPlanOptions,
): WindowsProfile {
  if (caps.network.kind === 'allowHosts') {
    throw new InvalidInputError(
      'ALEPH_INVALID_COMMAND',
      'capabilities.network',
      'allowHosts',
      'cannot be enforced by the Windows driver',
      'use network none or allowAll (see the ALEPH_CAPABILITY_UNSUPPORTED message for the addresses it would need)',
    );
  }
  assertNoLinkComponents('workspace', workspace);
  caps.fsWrite.forEach((p, i) => {
    assertNoLinkComponents(`capabilities.fsWrite[${i}]`, p);
  });
  const writableRoots = [...new Set([workspace, ...caps.fsWrite].map((p) => path.resolve(p)))];
  const grants = [
    ...writableRoots.map((p) => ({ path: p, access: 'read-write' as const, mask: ACCESS.readWrite })),
    ...caps.fsRead
      .map((p) => path.resolve(p))
      .filter((p) => !writableRoots.includes(p))
      .map((p) => ({ path: p, access: 'read' as const, mask: ACCESS.read })),
  ];
  const existing: string[] = [];
  const stubs: string[] = [];
  for (const root of writableRoots) {
    for (const rel of options.protectedPaths) {
      const abs = path.join(root, rel);
      (existsSync(abs) ? existing : stubs).push(abs);
    }
  }
  const network = caps.network.kind === 'allowAll' ? 'all' : 'none';
  const capabilitySids = network === 'all' ? [SID.internetClient, SID.privateNetworkClientServer] : [];
  const job = {
    activeProcessLimit: caps.spawnSubprocess ? options.maxProcesses : 1,
    processMemoryLimit: caps.maxMemoryMb === undefined ? null : caps.maxMemoryMb * 1024 * 1024,
    killOnJobClose: true,
    dieOnUnhandledException: true,
    uiRestrictions: UI_RESTRICT_ALL,
  };
  const summary = [
    `tiers: ${options.tiers.join(' → ')} (each inside a JobObject)`,
    `AppContainer capabilities: ${capabilitySids.length === 0 ? 'none (no network)' : 'internetClient, privateNetworkClientServer'}`,
    ...grants.map((g) => `grant ${g.access}: ${g.path}`),
    `protected (denied to the sandbox): ${[...existing, ...stubs].join(', ') || 'nothing'}${stubs.length > 0 ? ` (stubs created for ${stubs.length} missing)` : ''}`,
    `processes: ${job.activeProcessLimit === 1 ? 'the command only' : `at most ${job.activeProcessLimit}`}`,
    `memory: ${job.processMemoryLimit === null ? 'no limit' : `${caps.maxMemoryMb} MiB per process`}`,
    `cwd: ${path.resolve(cwd)}`,
  ];
  return {
    driver: 'windows',
    summary,
    tiers: options.tiers,
    network,
    capabilitySids,
    grants,
    writableRoots,
    protected: { existing, stubs },
    job,
  };
}

/** Resolves host names to addresses (injectable for tests). */
export type HostResolver = (name: string) => Promise<readonly string[]>;

/**
 * The readable refusal for `allowHosts`: Windows can only filter by address (WFP, which needs an
 * administrator), so say exactly which addresses the allowlist would need.
 */
export async function explainAllowHosts(hosts: readonly string[], resolve: HostResolver): Promise<string> {
  const lines = await Promise.all(
    hosts.map(async (entry) => {
      const host = entry.replace(/^\[(.*)\](?::\d+)?$/, '$1').replace(/^([^:]+):\d+$/, '$1');
      if (isIP(host) !== 0) return `${entry} → ${host}`;
      if (host.startsWith('*.')) return `${entry} → cannot be resolved in advance (a wildcard)`;
      try {
        const addresses = await resolve(host);
        return `${entry} → ${addresses.length === 0 ? 'no addresses' : addresses.join(', ')}`;
      } catch (error) {
        return `${entry} → does not resolve (${(error as Error).message})`;
      }
    }),
  );
  return `Windows can restrict the network only by address, through the Windows Filtering Platform, which needs administrator rights and is out of scope; allowHosts would need: ${lines.join('; ')}. Use network none, or allowAll.`;
}
