/**
 * The host folder: what this host offers, found by using it. Its facts (`host-facts.ts`), the helper's
 * location and checks (`helper-path.ts`, `helper-check.ts`), cgroup v2 (`cgroup.ts`), bubblewrap on PATH
 * (`which.ts`), kernel settings (`sysctl.ts`, `userns-fix.ts`). This file: the probe, every mechanism the
 * driver relies on (`probe-mechanisms.ts`), what this host leaves unbounded, and — once the driver folds
 * the preflight in (`tiers/with-tiers.ts`) — the tier.
 */
import type { ProbeMechanism, ProbeResult } from '@aleph/sandbox-core';
import { linuxNotEnforced } from '../tiers/not-enforced.js';
import type { LinuxTierId } from '../tiers/tiers.js';
import type { CgroupInfo } from './cgroup.js';
import { checkHelper } from './helper-check.js';
import type { HostFacts } from './host-facts.js';
import {
  architectureMechanism,
  cgroupMechanism,
  changesMechanism,
  checkedCgroup,
  findBubblewrap,
  identityMechanism,
  kernelByHelper,
  namespaceLimitMechanisms,
  userNamespacesMechanism,
} from './probe-mechanisms.js';

/** What `probe()` found, with the details the driver needs at run time. */
export interface LinuxProbe extends ProbeResult {
  readonly bwrapPath: string | null;
  readonly helperPath: string;
  /** The Landlock ABI, when a ruleset was enforced (else 0). */
  readonly landlockAbi: number;
  /** The cgroup check: detected, then exercised (`exerciseCgroup`) where a delegated subtree seemed present. */
  readonly cgroup: CgroupInfo;
  /** What making a user namespace (and a mount namespace in it) did for this process: `ok` or the failure. */
  readonly userns?: string;
  /** What this host leaves unbounded with the driver's settings (`linuxNotEnforced`), and, once the
   * driver folded the preflight in, what the chosen tier does not enforce (each `name: sentence`). */
  readonly notEnforced: readonly string[];
  /** The tier the preflight chose (`null`: none ran), once the driver folded it in. */
  readonly tierId?: LinuxTierId | null;
}

/**
 * Probes everything the Linux driver relies on by using it, and says which enforcement tier applies: the
 * helper runs (`--probe`) and, each in a child of its own, loads a seccomp filter that must refuse a
 * syscall, enforces a Landlock ruleset that must refuse a listing of /, and makes a user namespace with a
 * mount namespace inside; bwrap makes a user namespace; a delegated cgroup gets a leaf with limits and a
 * process (`exerciseCgroup`). Nothing degrades silently: each missing mechanism is listed with what
 * failed and the command that fixes it.
 */
export async function probeLinux(options: {
  host: HostFacts;
  bwrap: string;
  helperPath: string;
  landlock: 'best-effort' | 'required';
  cgroupRoot?: string;
  /** The cgroup check the caller made (`exerciseCgroup`); else this probe makes one. */
  cgroup?: CgroupInfo;
  /** The uid commands run as on a root host. Default 65533. */
  sandboxUid?: number;
  /** The driver's RLIMIT_FSIZE in MiB, if any. */
  maxFileMb?: number | undefined;
  cpuQuotaPercent?: number | undefined;
  /** Change recording on (default) or off (`changes.enabled: false`). */
  changes?: boolean;
}): Promise<LinuxProbe> {
  const mechanisms: Record<string, ProbeMechanism> = {};
  const problems: string[] = [];
  const note = (name: string, m: ProbeMechanism, fatal: boolean) => {
    mechanisms[name] = m;
    if (!m.available && fatal) problems.push(`${name}: ${m.detail}${m.fix ? ` — fix: ${m.fix}` : ''}`);
  };

  note('architecture', architectureMechanism(), true);
  const bwrap = await findBubblewrap(options.bwrap);
  note('bubblewrap', bwrap.mechanism, true);
  const helper = await checkHelper(options.helperPath, { probe: true });
  const kernel = kernelByHelper(helper, options.helperPath, options.landlock);
  note('helper', kernel.helper, true);
  // Without the helper these are unknown, not a problem of their own: the helper's stops the driver.
  note('seccomp', kernel.seccomp, helper.ok);
  note('landlock', kernel.landlock, helper.ok && options.landlock === 'required');
  if (bwrap.path !== null)
    note(
      'user-namespaces',
      await userNamespacesMechanism(bwrap.path, helper, options.host),
      !options.host.isRoot,
    );
  const cgroup = await checkedCgroup(options.cgroup, options.cgroupRoot, helper.ok, options.helperPath);
  note('cgroup-v2', cgroupMechanism(cgroup), false);
  note('identity', identityMechanism(options.host), false);
  const nsLimits = namespaceLimitMechanisms(helper);
  note('pid-max', nsLimits.pidMax, false);
  note('userns-limits', nsLimits.userns, false);
  note('changes', changesMechanism(helper, options.changes !== false), false);

  const { landlockAbi } = kernel;
  const available = problems.length === 0;
  const parts = [
    'bubblewrap namespaces',
    landlockAbi > 0 ? `Landlock ABI ${landlockAbi}` : 'no Landlock',
    'seccomp-BPF',
    cgroup.available ? 'cgroup v2 limits' : 'rlimit limits (no delegated cgroup v2)',
    options.host.isRoot ? 'root dropped to a sandbox uid' : 'user namespace',
  ];
  return {
    driver: 'linux',
    available,
    tier: available ? parts.join(' + ') : 'unavailable',
    mechanisms,
    problems,
    bwrapPath: bwrap.path,
    helperPath: options.helperPath,
    landlockAbi,
    cgroup,
    ...(helper.ok && helper.probe?.userns !== undefined ? { userns: helper.probe.userns } : {}),
    notEnforced: linuxNotEnforced({
      cgroup: cgroup.available,
      isRoot: options.host.isRoot,
      uid: options.host.isRoot ? (options.sandboxUid ?? 'per-run') : options.host.uid,
      maxFileMb: options.maxFileMb,
      cpuQuota: options.cpuQuotaPercent !== undefined,
      landlock: landlockAbi > 0,
      // A host user's commands run in a user namespace of their own (tier 2), which takes its own counts.
      usernsLimits: !options.host.isRoot && nsLimits.userns.available,
      ownUserNamespace: !options.host.isRoot,
    }),
  };
}
