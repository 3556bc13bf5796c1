import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { detectCgroup, type LinuxTierId, resolveHelperPath, tierGaps } from '@aleph/driver-linux';
import { afterAll } from 'vitest';
import { canSwitchUid, repoRoot } from '../support.js';

/**
 * The identities the Linux e2e suites run as: the current user, an unprivileged uid (through setpriv, when
 * this is root), and three simulated container hosts (root only; they need nothing beyond util-linux and a
 * C compiler): root without CAP_SYS_ADMIN (tier 2), namespace creation refused by a seccomp filter
 * (tier 3) and user namespaces unavailable (tier 3). Each names the tier the preflight must pick there.
 */

export const UNPRIVILEGED = 65534;

export interface Identity {
  /** Short and stable, for log lines and per-identity lists (`root`, `unprivileged`, `no-sys-admin`, …). */
  key: string;
  name: string;
  uid: number;
  /** The tier the preflight must pick there. */
  tier: LinuxTierId;
  /** The command prefix that runs a program on this (simulated) host; empty on the real one. */
  wrap: readonly string[];
  /** Why this identity cannot run on this machine; its suite is then skipped with this reason. */
  skip: string | undefined;
}

/**
 * Every identity, those this machine cannot provide included (with `skip` saying why). Call it at the
 * top of a test file: it builds the no-namespaces launcher (root only) into a temp directory removed
 * when the file ends.
 */
export function identities(): Identity[] {
  const self = process.getuid?.() ?? 0;
  const isRoot = self === 0;
  const needsRoot = isRoot ? undefined : 'needs root';
  const launcher = isRoot ? buildNoNamespaces() : { path: '', problem: 'needs root' };
  return [
    {
      key: 'root',
      name: isRoot ? 'root' : `the current user (uid ${self})`,
      uid: self,
      tier: isRoot ? 'namespaces' : 'user-namespace',
      wrap: [],
      skip: undefined,
    },
    {
      key: 'unprivileged',
      name: `unprivileged uid ${UNPRIVILEGED} (setpriv)`,
      uid: UNPRIVILEGED,
      tier: 'user-namespace',
      wrap: [],
      skip: canSwitchUid() ? undefined : 'needs root and setpriv',
    },
    {
      key: 'no-sys-admin',
      name: 'root without CAP_SYS_ADMIN (setpriv --bounding-set -sys_admin)',
      uid: 0,
      tier: 'user-namespace',
      wrap: ['setpriv', '--bounding-set', '-sys_admin', '--inh-caps', '-sys_admin', '--'],
      skip: needsRoot,
    },
    {
      key: 'seccomp-no-namespaces',
      name: 'namespace creation refused by a seccomp filter',
      uid: 0,
      tier: 'direct',
      wrap: [launcher.path],
      skip: launcher.problem,
    },
    {
      key: 'no-userns',
      name: 'user namespaces unavailable (user.max_user_namespaces=0 in a user namespace of our own)',
      uid: 0,
      tier: 'direct',
      wrap: [
        'unshare',
        '-U',
        '-r',
        'sh',
        '-c',
        'echo 0 > /proc/sys/user/max_user_namespaces && exec "$0" "$@"',
      ],
      skip: needsRoot,
    },
  ];
}

let built: { path: string; problem: string | undefined } | undefined;

/**
 * Compiles `e2e/linux/no-namespaces.c` (the seccomp launcher) into a temp directory of this file's, once
 * per test process; the directory goes when the file's suites end, or at the latest with the process.
 */
function buildNoNamespaces(): { path: string; problem: string | undefined } {
  built ??= compileNoNamespaces();
  return built;
}

function compileNoNamespaces(): { path: string; problem: string | undefined } {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'aleph-e2e-hosts-'));
  const remove = () => rmSync(dir, { recursive: true, force: true });
  process.once('exit', remove);
  afterAll(remove);
  const out = path.join(dir, 'no-namespaces');
  const cc = spawnSync('cc', ['-O2', '-o', out, path.join(repoRoot, 'e2e/linux/no-namespaces.c')], {
    encoding: 'utf8',
  });
  if (cc.status === 0) return { path: out, problem: undefined };
  return { path: out, problem: `cannot build e2e/linux/no-namespaces.c with cc: ${cc.error ?? cc.stderr}` };
}

/** `describe`'s title for the suite of `identity`, the skip reason included. */
export const asIdentityTitle = (identity: Identity) =>
  `as ${identity.name}${identity.skip === undefined ? '' : ` [skipped: ${identity.skip}]`}`;

const helperFacts = (() => {
  try {
    const out = spawnSync(resolveHelperPath(), ['--probe']);
    return JSON.parse(String(out.stdout)) as { landlock_abi: number; pid_max_ns?: string };
  } catch {
    return { landlock_abi: 0 } as { landlock_abi: number; pid_max_ns?: string };
  }
})();

/**
 * The gaps the tier of `identity` declares on this machine, as the driver computes them, for a driver with
 * `maxPids` (default 200: tier 2 keeping uid 0 names its pid_max bound in `limit.pids (uid 0)`).
 */
export function declaredGaps(identity: Identity, maxPids = 200): string[] {
  return tierGaps(identity.tier, {
    maxPids,
    isRoot: identity.uid === 0,
    cgroup: detectCgroup().available,
    landlockAbi: helperFacts.landlock_abi,
    directUid: undefined,
    pidNamespaceLimit: helperFacts.pid_max_ns === 'ok',
  });
}
