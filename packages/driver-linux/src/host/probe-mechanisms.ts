/**
 * The probe's steps, one mechanism each, found by using it: the architecture, bubblewrap, the helper and
 * the kernel features it exercises (seccomp, Landlock), user namespaces, the cgroup and the identity.
 * `probe.ts` runs them in order.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import type { ProbeMechanism } from '@aleph/sandbox-core';
import { hostSeccompArch } from '../seccomp/seccomp-program.js';
import { type CgroupInfo, CgroupManager, detectCgroup, exerciseCgroup, launcherRunIn } from './cgroup.js';
import { GVISOR_LANDLOCK_FIX, gvisorUsernsFix } from './gvisor-facts.js';
import type { HelperCheck } from './helper-check.js';
import type { HostFacts } from './host-facts.js';
import { onGvisor } from './host-traits.js';
import { usernsFix } from './userns-fix.js';
import { which } from './which.js';

const run = promisify(execFile);

/** This architecture has seccomp tables (x86_64, aarch64). */
export function architectureMechanism(): ProbeMechanism {
  const arch = hostSeccompArch();
  return arch === undefined
    ? {
        available: false,
        detail: `${process.arch} has no seccomp tables here`,
        fix: 'run on x86_64 or aarch64',
      }
    : { available: true, detail: arch };
}

/** bubblewrap on PATH (or at `name`), and its version. */
export async function findBubblewrap(
  name: string,
): Promise<{ path: string | null; mechanism: ProbeMechanism }> {
  const bwrapPath = which(name);
  let bwrapVersion = '';
  if (bwrapPath !== null) {
    try {
      bwrapVersion = (await run(bwrapPath, ['--version'])).stdout.trim();
    } catch {
      bwrapVersion = 'unknown version';
    }
  }
  return {
    path: bwrapPath,
    mechanism:
      bwrapPath === null
        ? {
            available: false,
            detail: 'bwrap not found on PATH',
            fix: 'apt-get install -y bubblewrap (Debian/Ubuntu) or dnf install bubblewrap',
          }
        : { available: true, detail: `${bwrapPath} (${bwrapVersion})` },
  };
}

/** What the helper and the kernel features it exercised (`--probe`) came to. */
export interface KernelByHelper {
  /** The Landlock ABI, when a ruleset was enforced (else 0). */
  readonly landlockAbi: number;
  readonly helper: ProbeMechanism;
  readonly seccomp: ProbeMechanism;
  readonly landlock: ProbeMechanism;
}

/**
 * The kernel's answers come from the helper, so a helper that cannot run says nothing about the kernel:
 * its own problem is reported, and seccomp/Landlock are "unknown", never blamed on the kernel.
 */
export function kernelByHelper(
  helper: HelperCheck,
  helperPath: string,
  landlock: 'best-effort' | 'required',
): KernelByHelper {
  let reportedAbi = 0;
  let seccompDetail = '';
  let landlockDetail = '';
  if (helper.ok && helper.probe !== undefined) {
    reportedAbi = helper.probe.landlock_abi;
    seccompDetail = helper.probe.seccomp_detail ?? 'the helper did not say';
    landlockDetail = helper.probe.landlock ?? 'the helper did not exercise it';
  }
  // Only a ruleset that was enforced counts: the ABI the kernel reports is not proof.
  const landlockAbi = landlockDetail === 'ok' ? reportedAbi : 0;
  const helperMechanism: ProbeMechanism = helper.ok
    ? { available: true, detail: `${helperPath} (${process.arch}, --probe ok)` }
    : { available: false, detail: helper.problem, fix: helper.fix };
  if (!helper.ok)
    return {
      landlockAbi,
      helper: helperMechanism,
      seccomp: unknown('seccomp-BPF support'),
      landlock: unknown('the Landlock ABI'),
    };
  return {
    landlockAbi,
    helper: helperMechanism,
    seccomp: seccompMechanism(helper.probe?.seccomp === true, seccompDetail),
    landlock: landlockMechanism(landlockAbi, reportedAbi, landlockDetail, landlock),
  };
}

function unknown(what: string): ProbeMechanism {
  return {
    available: false,
    detail: `unknown: ${what} is checked by the helper, which could not run (see helper)`,
    fix: 'fix the helper first',
  };
}

function seccompMechanism(loaded: boolean, detail: string): ProbeMechanism {
  return loaded
    ? {
        available: true,
        detail: 'a seccomp-BPF filter was loaded and refused the syscall it names (in a child of the helper)',
      }
    : {
        available: false,
        detail: `a seccomp-BPF filter does not work here: ${detail}`,
        fix: /EINVAL|Invalid argument/.test(detail)
          ? 'use a kernel built with CONFIG_SECCOMP_FILTER'
          : "allow nested seccomp filters: the host's own filter or an LSM refuses seccomp(2) and prctl(PR_SET_SECCOMP) (Docker: a seccomp profile that allows them)",
      };
}

function landlockMechanism(
  landlockAbi: number,
  reportedAbi: number,
  detail: string,
  mode: 'best-effort' | 'required',
): ProbeMechanism {
  return landlockAbi > 0
    ? {
        available: true,
        detail: `ABI ${landlockAbi} (${mode}): a ruleset was enforced and refused a listing of / (in a child of the helper)`,
      }
    : {
        available: false,
        detail:
          reportedAbi > 0
            ? `the kernel reports Landlock ABI ${reportedAbi}, but enforcing a ruleset failed: ${detail}`
            : `Landlock does not work here: ${detail}`,
        fix:
          reportedAbi > 0
            ? "allow landlock_create_ruleset, landlock_add_rule and landlock_restrict_self: the host's seccomp profile or an LSM refuses them (Docker: a seccomp profile that allows them)"
            : onGvisor()
              ? GVISOR_LANDLOCK_FIX
              : 'boot a kernel >= 5.13 with Landlock enabled (`lsm=landlock,…` on the kernel command line)',
      };
}

/** User namespaces: what a non-root host runs in, and tier 2 of a root host (tried on both). */
export async function userNamespacesMechanism(
  bwrapPath: string,
  helper: HelperCheck,
  host: HostFacts,
): Promise<ProbeMechanism> {
  let ok = false;
  let error = '';
  try {
    await run(bwrapPath, ['--unshare-user', '--ro-bind', '/', '/', 'true']);
    ok = true;
  } catch (e) {
    error = String((e as { stderr?: string }).stderr ?? e).trim();
  }
  const gvisor = onGvisor();
  const fix = gvisor ? gvisorUsernsFix(gvisor) : usernsFix(helper.ok ? helper.probe?.userns : undefined);
  // gVisor makes the namespace; bwrap stops before it asks for one.
  const failed = gvisor ? 'bwrap cannot start under gVisor' : 'bwrap cannot create a user namespace';
  return ok
    ? { available: true, detail: `bwrap made a user namespace and ran \`true\` in it (as uid ${host.uid})` }
    : { available: false, detail: `${failed}: ${error}`, fix };
}

/** The cgroup check the caller made, else one made here (detected, then exercised if it looks delegated). */
export async function checkedCgroup(
  given: CgroupInfo | undefined,
  cgroupRoot: string | undefined,
  helperOk: boolean,
  helperPath: string,
): Promise<CgroupInfo> {
  let cgroup = given ?? detectCgroup(cgroupRoot);
  if (given === undefined && cgroup.available)
    cgroup = helperOk
      ? await exerciseCgroup(new CgroupManager(cgroup), launcherRunIn(helperPath))
      : {
          ...cgroup,
          available: false,
          detail: `${cgroup.detail}; not used: the helper cannot run (see helper)`,
        };
  return cgroup;
}

/** The cgroup check as a mechanism. */
export function cgroupMechanism(cgroup: CgroupInfo): ProbeMechanism {
  return cgroup.available
    ? { available: true, detail: cgroup.detail }
    : { available: false, detail: cgroup.detail, ...(cgroup.fix ? { fix: cgroup.fix } : {}) };
}

/** Who commands run as. */
export function identityMechanism(host: HostFacts): ProbeMechanism {
  return {
    available: true,
    detail: host.isRoot
      ? 'host is root: commands run as a dedicated unprivileged uid'
      : `commands run as uid ${host.uid} in a user namespace`,
  };
}

/**
 * Tier 2's namespace limits (`profile/ns-limits.ts`), as the helper's `--probe` found them: pid_max of a
 * PID namespace of its own, which bounds a command keeping uid 0 (RLIMIT_NPROC does not bind it) to
 * max_pids at a time once its PIDs have wrapped, and the user namespace's own inotify and fanotify counts.
 */
export function namespaceLimitMechanisms(helper: HelperCheck): {
  readonly pidMax: ProbeMechanism;
  readonly userns: ProbeMechanism;
} {
  const said = helper.ok ? helper.probe : undefined;
  const pidMax = said?.pid_max_ns ?? 'the helper did not say';
  const userns = said?.userns_limits ?? 'the helper did not say';
  return {
    pidMax:
      pidMax === 'ok'
        ? {
            available: true,
            detail:
              'a PID namespace takes a pid_max of its own: tier 2 bounds a command keeping uid 0 (300 + max_pids + 1: up to max_pids + 299 before its PIDs first wrap, then max_pids at a time); other uids are bound by RLIMIT_NPROC exactly',
          }
        : {
            available: false,
            detail: `no pid_max per PID namespace: ${pidMax}; a command keeping uid 0 (tier 2 on a root host) has no process limit but a delegated cgroup v2's`,
            fix: 'Linux 6.14 or later, or a delegated cgroup v2 (`systemd-run --user --scope -p Delegate=yes <command>`)',
          },
    userns:
      userns === 'ok'
        ? {
            available: true,
            detail:
              "a user namespace takes counts of its own: tier 2 gives a command half the user's inotify and fanotify counts and no namespaces",
          }
        : {
            available: false,
            detail: `a user namespace's own counts cannot be set: ${userns}; a command can use up the user's inotify instances`,
            fix: onGvisor()
              ? 'none inside gVisor (runsc): it has no /proc/sys/user limits to set in a user namespace'
              : 'allow unprivileged user namespaces (see user-namespaces)',
          },
  };
}

/** What change recording does not see (doctor, README): said wherever it is on. */
export const NOT_RECORDED =
  'Not recorded nor undone: extended attributes (setxattr, removexattr) and a directory\u2019s own times; a file\u2019s modification time is (touch -d, utimensat)';

/**
 * The change recording (issue 38): every run's changes recorded for `details.changes` and undo, through a
 * seccomp filter whose user-notification listener the launcher answers (the helper exercised it). Where
 * it does not work, runs go on unrecorded and undo is unavailable.
 */
export function changesMechanism(helper: HelperCheck, enabled: boolean): ProbeMechanism {
  if (!enabled)
    return {
      available: false,
      detail: 'change recording is off (changes.enabled: false): runs are unrecorded, undo unavailable',
    };
  if (!helper.ok) return unknown('seccomp user notification');
  const said = helper.probe?.changes;
  if (said === 'ok')
    return {
      available: true,
      detail:
        'seccomp user notification: each run\u2019s changes to its writable roots recorded before they happen (copy before write), undo available; a host-side observer sees every write when the command makes it. ' +
        NOT_RECORDED,
    };
  return {
    available: false,
    detail: `seccomp user notification does not work here (${said ?? 'the helper did not say'}): runs are unrecorded, undo unavailable`,
    fix: 'a kernel of 5.5 or later without a seccomp filter of its own that keeps a listener (e.g. not in gVisor)',
  };
}
