/**
 * The protected part of a tier 1–2 plan: the protected sub-paths of every writable root, and of every
 * home directory a writable root holds, mounted read-only (see `mounts/protected-paths.ts`).
 */
import type { SandboxCapabilities } from '@aleph/sandbox-core';
import { homesWithin, type ProtectionPlan, planProtectedPaths } from '../mounts/protected-paths.js';
import { exists, type PlanDraft } from './plan-draft.js';
import type { ProfileInputs } from './profile-types.js';

/** The writable roots, and what protects them and the homes they hold. */
export interface WritableRootsProtection {
  readonly writableRoots: readonly string[];
  readonly protection: ProtectionPlan;
  readonly homeProtection: ProtectionPlan;
}

/**
 * Adds the read-only mounts of the protected paths.
 *
 * @throws {InvalidInputError} for a symlinked protected path.
 */
export function protectWritableRoots(
  draft: PlanDraft,
  caps: SandboxCapabilities,
  workspace: string,
  inputs: ProfileInputs,
): WritableRootsProtection {
  const { plan, fs } = draft;
  const writableRoots = [workspace, ...caps.fsWrite.filter((p) => exists(fs, p) === 'dir')];
  const protection = planProtectedPaths(plan, writableRoots, inputs.protectedPaths, fs);
  draft.mounts.push(...protection.mounts);
  // Home directories a writable root holds (the host user's, and /root and /home/* under a wide grant):
  // what the host runs from them next (shell startup, git and ssh config, ~/.aleph, …) stays read-only.
  const homes = homesWithin(writableRoots, inputs.host.home, fs);
  const homeProtection = planProtectedPaths(plan, homes, inputs.homeProtectedPaths, fs);
  draft.mounts.push(...homeProtection.mounts);
  return { writableRoots, protection, homeProtection };
}
