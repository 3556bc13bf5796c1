/**
 * The granted part of a tier 1–2 plan: `fsRead` read-only, `fsWrite` and the workspace read-write, the
 * session HOME at `INNER_HOME`, each mounted from a descriptor the launcher opens without following
 * symlinks.
 */
import { InvalidInputError, type SandboxCapabilities } from '@aleph/sandbox-core';
import { INNER_HOME } from '../options.js';
import type { HostTrust } from './host-trust.js';
import { exists, type PlanDraft } from './plan-draft.js';

/**
 * Adds the grants, the workspace and the session HOME, with their Landlock rules.
 *
 * @throws {InvalidInputError} for a granted path that does not exist.
 */
export function addGrants(
  draft: PlanDraft,
  caps: SandboxCapabilities,
  workspace: string,
  sessionHome: string | undefined,
): void {
  const { plan, mounts, landlock, fs } = draft;
  caps.fsRead.forEach((p, i) => {
    const kind = exists(fs, p);
    if (kind === undefined) throw missingPath('fsRead', i, p);
    mounts.push({ op: 'ro-bind', src: p, dest: p, fd: plan.open(p), kind });
    landlock.push({ path: p, access: 'read-exec' });
  });
  caps.fsWrite.forEach((p, i) => {
    const kind = exists(fs, p);
    if (kind === undefined) throw missingPath('fsWrite', i, p);
    mounts.push({ op: 'bind', src: p, dest: p, fd: plan.open(p), kind });
    landlock.push({ path: p, access: 'read-write-exec' });
  });
  mounts.push({ op: 'bind', src: workspace, dest: workspace, fd: plan.open(workspace) });
  landlock.push({ path: workspace, access: 'read-write-exec' });
  if (sessionHome !== undefined) {
    mounts.push({ op: 'bind', src: sessionHome, dest: INNER_HOME, fd: plan.open(sessionHome) });
    landlock.push({ path: INNER_HOME, access: 'read-write-exec' });
  }
}

/**
 * Adds the host's CA files (`host-trust.ts`) read-only at their places inside, mounted from descriptors as
 * read grants are, for a command with a network: the variables naming them inside, and in words for the
 * summary.
 */
export function addTrust(
  draft: PlanDraft,
  caps: SandboxCapabilities,
  trust: HostTrust | undefined,
): { env: Record<string, string>; words: string[] } {
  if (trust === undefined || caps.network.kind === 'none') return { env: {}, words: [] };
  const env = { ...trust.env };
  for (const f of trust.files) {
    // A file removed since the driver looked is left out, its variables with it.
    if (exists(draft.fs, f.src) !== 'file') {
      for (const v of f.variables) delete env[v];
      continue;
    }
    draft.mounts.push({ op: 'ro-bind', src: f.src, dest: f.dest, fd: draft.plan.open(f.src), kind: 'file' });
    draft.landlock.push({ path: f.dest, access: 'read-exec' });
  }
  return { env, words: Object.entries(env).map(([k, v]) => `${k}=${v}`) };
}

function missingPath(field: 'fsRead' | 'fsWrite', index: number, p: string): InvalidInputError {
  return new InvalidInputError(
    'ALEPH_INVALID_COMMAND',
    `capabilities.${field}[${index}]`,
    p,
    'does not exist',
    'create it first or remove it from the grant',
  );
}
