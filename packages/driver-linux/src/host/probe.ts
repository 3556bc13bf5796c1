import { execFile } from 'node:child_process';
import { accessSync, constants, existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import type { ProbeMechanism, ProbeResult } from '@aleph/sandbox-core';
import { hostSeccompArch } from '../seccomp/seccomp-program.js';
import { linuxNotEnforced } from '../tiers/not-enforced.js';
import type { LinuxTierId } from '../tiers/tiers.js';
import { type CgroupInfo, CgroupManager, detectCgroup, exerciseCgroup, launcherRunIn } from './cgroup.js';
import { checkHelper } from './helper.js';
import type { HostFacts } from './host-facts.js';

const run = promisify(execFile);

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

/** Finds an executable on PATH. */
export function which(name: string): string | null {
  if (name.includes('/')) return existsSync(name) ? name : null;
  for (const dir of (process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin').split(':')) {
    const candidate = path.join(dir || '.', name);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // keep looking
    }
  }
  return null;
}

function readSysctl(p: string): string | undefined {
  try {
    return readFileSync(p, 'utf8').trim();
  } catch {
    return undefined;
  }
}

/**
 * What makes user namespaces work here: from `exercised` (the helper's attempt: the step that failed and
 * its error) where it says, else from the kernel's settings.
 */
export function usernsFix(exercised?: string): string {
  const restricted = readSysctl('/proc/sys/kernel/apparmor_restrict_unprivileged_userns');
  if (restricted !== undefined && restricted !== '0')
    return 'AppArmor restricts them (Ubuntu 24.04 and later): `sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0`, or an AppArmor profile for bwrap with `userns,` (see /etc/apparmor.d/bwrap-userns-restrict)';
  if (readSysctl('/proc/sys/kernel/unprivileged_userns_clone') === '0')
    return '`sudo sysctl -w kernel.unprivileged_userns_clone=1`';
  if (readSysctl('/proc/sys/user/max_user_namespaces') === '0' || /No space left/.test(exercised ?? ''))
    return '`sudo sysctl -w user.max_user_namespaces=15000` (in a container: on the host, or the namespace it runs in)';
  if (/creating a user namespace: Operation not permitted/.test(exercised ?? ''))
    return "a seccomp filter refuses unshare/clone with CLONE_NEWUSER (a container runtime's default profile): allow them (Docker: `--security-opt seccomp=unconfined`, or a profile permitting them)";
  if (/mount namespace inside/.test(exercised ?? ''))
    return 'the user namespace gets no capabilities (an LSM such as AppArmor or SELinux confines this program): allow bwrap user namespaces in its policy';
  return 'enable unprivileged user namespaces (kernel.unprivileged_userns_clone=1, user.max_user_namespaces > 0) and allow unshare with CLONE_NEWUSER';
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
}): Promise<LinuxProbe> {
  const mechanisms: Record<string, ProbeMechanism> = {};
  const problems: string[] = [];
  const note = (name: string, m: ProbeMechanism, fatal: boolean) => {
    mechanisms[name] = m;
    if (!m.available && fatal) problems.push(`${name}: ${m.detail}${m.fix ? ` — fix: ${m.fix}` : ''}`);
  };

  const arch = hostSeccompArch();
  note(
    'architecture',
    arch === undefined
      ? {
          available: false,
          detail: `${process.arch} has no seccomp tables here`,
          fix: 'run on x86_64 or aarch64',
        }
      : { available: true, detail: arch },
    true,
  );

  const bwrapPath = which(options.bwrap);
  let bwrapVersion = '';
  if (bwrapPath !== null) {
    try {
      bwrapVersion = (await run(bwrapPath, ['--version'])).stdout.trim();
    } catch {
      bwrapVersion = 'unknown version';
    }
  }
  note(
    'bubblewrap',
    bwrapPath === null
      ? {
          available: false,
          detail: 'bwrap not found on PATH',
          fix: 'apt-get install -y bubblewrap (Debian/Ubuntu) or dnf install bubblewrap',
        }
      : { available: true, detail: `${bwrapPath} (${bwrapVersion})` },
    true,
  );

  // The kernel's answers come from the helper, so a helper that cannot run says nothing about the
  // kernel: its own problem is reported, and seccomp/Landlock are "unknown", never blamed on the kernel.
  let reportedAbi = 0;
  let seccomp = false;
  let seccompDetail = '';
  let landlockDetail = '';
  const helper = await checkHelper(options.helperPath, { probe: true });
  if (helper.ok && helper.probe !== undefined) {
    reportedAbi = helper.probe.landlock_abi;
    seccomp = helper.probe.seccomp;
    seccompDetail = helper.probe.seccomp_detail ?? 'the helper did not say';
    landlockDetail = helper.probe.landlock ?? 'the helper did not exercise it';
  }
  // Only a ruleset that was enforced counts: the ABI the kernel reports is not proof.
  const landlockAbi = landlockDetail === 'ok' ? reportedAbi : 0;
  note(
    'helper',
    helper.ok
      ? { available: true, detail: `${options.helperPath} (${process.arch}, --probe ok)` }
      : { available: false, detail: helper.problem, fix: helper.fix },
    true,
  );
  const unknown = (what: string): ProbeMechanism => ({
    available: false,
    detail: `unknown: ${what} is checked by the helper, which could not run (see helper)`,
    fix: 'fix the helper first',
  });
  if (!helper.ok) {
    // Not a problem of its own: the helper's problem already stops the driver.
    note('seccomp', unknown('seccomp-BPF support'), false);
    note('landlock', unknown('the Landlock ABI'), false);
  } else {
    note(
      'seccomp',
      seccomp
        ? {
            available: true,
            detail:
              'a seccomp-BPF filter was loaded and refused the syscall it names (in a child of the helper)',
          }
        : {
            available: false,
            detail: `a seccomp-BPF filter does not work here: ${seccompDetail}`,
            fix: /EINVAL|Invalid argument/.test(seccompDetail)
              ? 'use a kernel built with CONFIG_SECCOMP_FILTER'
              : "allow nested seccomp filters: the host's own filter or an LSM refuses seccomp(2) and prctl(PR_SET_SECCOMP) (Docker: a seccomp profile that allows them)",
          },
      true,
    );
    note(
      'landlock',
      landlockAbi > 0
        ? {
            available: true,
            detail: `ABI ${landlockAbi} (${options.landlock}): a ruleset was enforced and refused a listing of / (in a child of the helper)`,
          }
        : {
            available: false,
            detail:
              reportedAbi > 0
                ? `the kernel reports Landlock ABI ${reportedAbi}, but enforcing a ruleset failed: ${landlockDetail}`
                : `Landlock does not work here: ${landlockDetail}`,
            fix:
              reportedAbi > 0
                ? "allow landlock_create_ruleset, landlock_add_rule and landlock_restrict_self: the host's seccomp profile or an LSM refuses them (Docker: a seccomp profile that allows them)"
                : 'boot a kernel >= 5.13 with Landlock enabled (`lsm=landlock,…` on the kernel command line)',
          },
      options.landlock === 'required',
    );
  }

  // User namespaces: what a non-root host runs in, and tier 2 of a root host (tried on both).
  if (bwrapPath !== null) {
    let ok = false;
    let error = '';
    try {
      await run(bwrapPath, ['--unshare-user', '--ro-bind', '/', '/', 'true']);
      ok = true;
    } catch (e) {
      error = String((e as { stderr?: string }).stderr ?? e).trim();
    }
    const fix = usernsFix(helper.ok ? helper.probe?.userns : undefined);
    note(
      'user-namespaces',
      ok
        ? {
            available: true,
            detail: `bwrap made a user namespace and ran \`true\` in it (as uid ${options.host.uid})`,
          }
        : { available: false, detail: `bwrap cannot create a user namespace: ${error}`, fix },
      !options.host.isRoot,
    );
  }

  let cgroup = options.cgroup ?? detectCgroup(options.cgroupRoot);
  if (options.cgroup === undefined && cgroup.available)
    cgroup = helper.ok
      ? await exerciseCgroup(new CgroupManager(cgroup), launcherRunIn(options.helperPath))
      : {
          ...cgroup,
          available: false,
          detail: `${cgroup.detail}; not used: the helper cannot run (see helper)`,
        };
  note(
    'cgroup-v2',
    cgroup.available
      ? { available: true, detail: cgroup.detail }
      : { available: false, detail: cgroup.detail, ...(cgroup.fix ? { fix: cgroup.fix } : {}) },
    false,
  );
  note(
    'identity',
    {
      available: true,
      detail: options.host.isRoot
        ? 'host is root: commands run as a dedicated unprivileged uid'
        : `commands run as uid ${options.host.uid} in a user namespace`,
    },
    false,
  );

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
    bwrapPath,
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
    }),
  };
}
