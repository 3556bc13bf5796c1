/**
 * The tier is chosen for the workspace too, not only for the host: a tier 1 plan whose workspace or write
 * grant lies on a filesystem that cannot be idmapped (`idmap-check.ts`) runs in the strongest weaker tier
 * that ran its own preflight here, named in the plan (`tierFallback`, and a `workspace-tier` entry in
 * `notEnforced`), or is refused with the reason and the fix when `minimum_tier` allows none.
 */
import { DriverError } from '@aleph/sandbox-core';
import type { LinuxProfile } from '../profile/profile-types.js';
import { candidateTiers, type LinuxTierId, type LinuxTierNumber, linuxTier } from '../tiers/tiers.js';
import { clonedPaths, type IdmapCheck, type IdmapRefusal } from './idmap-check.js';

/** What the fallback needs of the tier choice. */
export interface FallbackParts {
  readonly isRoot: boolean;
  readonly minimumTier: LinuxTierNumber;
  readonly idmap: IdmapCheck;
  /** Whether `tier` runs a sandboxed `true` here (its preflight, once). */
  readonly tierRuns: (tier: LinuxTierId) => Promise<{ ok: boolean; detail: string; hostProc?: boolean }>;
  /** The same command's plan in `tier` (with this host's /proc where its preflight needed it). */
  readonly buildIn: (tier: LinuxTierId, hostProc: boolean) => Promise<LinuxProfile>;
}

function describe(refused: readonly IdmapRefusal[]): string {
  return refused.map((r) => `${r.path} (${r.fs}: ${r.reason})`).join(', ');
}

/**
 * `profile` itself when its tier can serve its user paths; else the plan of the strongest weaker tier
 * that runs here, saying why.
 *
 * @throws {DriverError} `ALEPH_DRIVER_UNAVAILABLE` when no tier allowed by `minimum_tier` can serve them.
 */
export async function fitWorkspace(profile: LinuxProfile, parts: FallbackParts): Promise<LinuxProfile> {
  if (profile.tier !== 'namespaces' || !parts.isRoot) return profile;
  const refused = await parts.idmap.refused(clonedPaths(profile.launch));
  if (refused.length === 0) return profile;
  const why = `tier 1 cannot serve ${describe(refused)}: on a root host it gives the command the workspace and write grants through idmapped mounts, which this filesystem refuses`;
  const tried: string[] = [];
  for (const tier of candidateTiers(true, parts.minimumTier).filter((t) => t !== 'namespaces')) {
    const r = await parts.tierRuns(tier);
    if (!r.ok) {
      tried.push(`tier ${linuxTier(tier).number}: ${r.detail}`);
      continue;
    }
    const weaker = await parts.buildIn(tier, r.hostProc === true);
    const note = `${why}; this run is tier ${linuxTier(tier).number}'s (${linuxTier(tier).label})`;
    return { ...weaker, tierFallback: note, notEnforced: [...weaker.notEnforced, `workspace-tier: ${note}`] };
  }
  throw new DriverError(
    'ALEPH_DRIVER_UNAVAILABLE',
    'linux',
    `the command is refused: ${why}, and ${
      tried.length === 0
        ? `minimum_tier = ${parts.minimumTier} allows no weaker tier`
        : `no weaker tier runs here (${tried.join('; ')})`
    }; fix: put the workspace and write grants on a filesystem that supports idmapped mounts (ext4, xfs, btrfs, tmpfs on Linux >= 6.3, not mounted inside a user namespace)${
      parts.minimumTier === 1 ? ', or allow tier 2 or 3 (`[sandbox.linux] minimum_tier = 2`)' : ''
    }`,
    { details: { refused } },
  );
}
