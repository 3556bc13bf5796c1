/**
 * The granted part of a tier 1–2 plan: `fsRead` read-only, `fsWrite` and the workspace read-write, the
 * session HOME at `INNER_HOME`, each mounted from a descriptor the launcher opens without following
 * symlinks, with its Landlock rule made on that descriptor. A write grant inside the workspace or inside
 * another write grant gets no mount of its own: it is writable through the one it lies in.
 */
import { InvalidInputError, isPathWithin, type SandboxCapabilities } from '@aleph/sandbox-core';
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
    const fd = plan.open(p);
    mounts.push({ op: 'ro-bind', src: p, dest: p, fd, kind });
    landlock.push({ path: p, access: 'read-exec', fd });
  });
  const writable = [workspace, ...caps.fsWrite];
  caps.fsWrite.forEach((p, i) => {
    const kind = exists(fs, p);
    if (kind === undefined) throw missingPath('fsWrite', i, p);
    // Inside another writable root it is mounted with it already: no mount of its own, which bwrap would
    // make by the path it reads back from the descriptor, and a command could swap meanwhile.
    if (writable.some((root) => root !== p && isPathWithin(p, root))) return;
    const fd = plan.open(p);
    mounts.push({ op: 'bind', src: p, dest: p, fd, kind });
    landlock.push({ path: p, access: 'read-write-exec', fd });
  });
  const ws = plan.open(workspace);
  mounts.push({ op: 'bind', src: workspace, dest: workspace, fd: ws });
  landlock.push({ path: workspace, access: 'read-write-exec', fd: ws });
  if (sessionHome !== undefined) {
    const home = plan.open(sessionHome);
    mounts.push({ op: 'bind', src: sessionHome, dest: INNER_HOME, fd: home });
    landlock.push({ path: INNER_HOME, access: 'read-write-exec', fd: home });
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
