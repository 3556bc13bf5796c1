/**
 * The limits of a tier 2 sandbox's own namespaces, which hold whatever uid the command has (the helper sets
 * them, `native/linux/helper/ns-limits.c`):
 * - pid_max of its PID namespace (Linux 6.14+). The kernel does not apply RLIMIT_NPROC to uid 0, and in tier 2
 *   on a root host the command keeps kernel uid 0: pid_max bounds it instead. Once a PID namespace has handed
 *   out PID 300 (RESERVED_PIDS), the kernel allocates new PIDs only from 300 up to pid_max − 1, so pid_max is
 *   300 + max_pids + 1: max_pids processes at a time always fit, however many the command started before
 *   (a build starts tens of thousands), and at most pid_max − 2 live at once (before the PIDs first wrap).
 *   Where the command's kernel uid is not 0, RLIMIT_NPROC (counted per uid in the sandbox's own user
 *   namespace) is the exact bound, and this pid_max never binds before it.
 * - the per-user counts of its user namespace (`/proc/sys/user`): inotify and fanotify at half the user's,
 *   namespaces at none, so one command cannot use up what the user's editor and watchers share with it.
 * The launcher opens the host's /proc/sys/kernel and /proc/sys/user and hands the helper the descriptors
 * (bwrap's /proc/sys is read-only); a sysctl is looked up in the namespace of whoever opens it, so the helper
 * reaches its own. bwrap keeps CAP_SYS_RESOURCE (the user counts need it) and CAP_SETPCAP (to empty the
 * bounding set after) for the helper, which drops both before anything of the command runs.
 */
import { readFileSync } from 'node:fs';
import type { LaunchPlan } from '../mounts/launch-plan.js';

/** The namespace limits of a plan; `undefined` where this host cannot set one. */
export interface NamespaceLimits {
  /** pid_max of the PID namespace, when the kernel has it per namespace. */
  readonly pidMax: number | undefined;
  /** `/proc/sys/user` name → value, when the user namespace's counts can be set (else empty). */
  readonly userns: Readonly<Record<string, number>>;
}

/**
 * PIDs below this are handed out only until a PID namespace first wraps (the kernel's RESERVED_PIDS); it is
 * also the lowest pid_max the kernel accepts, minus one.
 */
export const RESERVED_PIDS = 300;

/**
 * pid_max for `maxPids` processes of the command at a time: after the first wrap new PIDs come only from
 * {@link RESERVED_PIDS} to pid_max − 1, which leaves `maxPids` + 1 of them (bwrap's init keeps PID 1).
 *
 * @example
 * ```ts
 * pidMaxFor(200) // 501
 * ```
 */
export function pidMaxFor(maxPids: number): number {
  return RESERVED_PIDS + maxPids + 1;
}

/**
 * What pid_max `pidMax` lets the command's processes and threads do: `always` at a time, however many it
 * started before (the PIDs from {@link RESERVED_PIDS} to pid_max − 1, less bwrap's init's none), and at most
 * `atMost` at once (every PID but 0 and init's, before the PIDs first wrap).
 */
export function pidMaxBounds(pidMax: number): { readonly always: number; readonly atMost: number } {
  return { always: pidMax - RESERVED_PIDS - 1, atMost: pidMax - 2 };
}

/** The per-user counts set at half the user's. */
const HALVED = ['max_inotify_instances', 'max_inotify_watches', 'max_fanotify_groups', 'max_fanotify_marks'];
/** The namespace counts set to none (seccomp refuses every namespace flag already). */
const NONE = [
  'max_user_namespaces',
  'max_mnt_namespaces',
  'max_pid_namespaces',
  'max_net_namespaces',
  'max_ipc_namespaces',
  'max_uts_namespaces',
  'max_cgroup_namespaces',
  'max_time_namespaces',
];

/**
 * The values for the sandbox's user namespace, from the host user's (`readUserLimits`): half of each
 * inotify and fanotify count (at least 1), no namespace of any kind; a count this kernel lacks is left out.
 */
export function usernsLimitsFrom(user: Readonly<Record<string, number>>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const name of HALVED) {
    const v = user[name];
    if (v !== undefined) out[name] = Math.max(1, Math.floor(v / 2));
  }
  for (const name of NONE) if (user[name] !== undefined) out[name] = 0;
  return out;
}

/** This process's `/proc/sys/user` counts (those it can read). */
export function readUserLimits(): Record<string, number> {
  const out: Record<string, number> = {};
  for (const name of [...HALVED, ...NONE]) {
    try {
      const n = Number(readFileSync(`/proc/sys/user/${name}`, 'utf8').trim());
      if (Number.isSafeInteger(n) && n >= 0) out[name] = n;
    } catch {
      // not in this kernel
    }
  }
  return out;
}

/**
 * The helper's options and bwrap's capabilities for `limits`; the launcher opens the host's /proc/sys
 * directories the helper writes below (`plan`). Nothing when there is nothing to set.
 */
export function namespaceLimitArgs(
  plan: LaunchPlan,
  limits: NamespaceLimits | undefined,
): { readonly helper: string[]; readonly capabilities: string[] } {
  const helper: string[] = [];
  const capabilities: string[] = [];
  if (limits?.pidMax !== undefined)
    helper.push('--sysctl-kernel', `@${plan.open('/proc/sys/kernel')}`, '--pid-max', String(limits.pidMax));
  const userns = Object.entries(limits?.userns ?? {});
  if (userns.length > 0) {
    helper.push('--sysctl-user', `@${plan.open('/proc/sys/user')}`);
    for (const [name, value] of userns) helper.push('--userns-limit', `${name}=${value}`);
    capabilities.push('--cap-add', 'CAP_SYS_RESOURCE', '--cap-add', 'CAP_SETPCAP');
  }
  return { helper, capabilities };
}

/** The limits in words, for the profile's summary. */
export function namespaceLimitsInWords(limits: NamespaceLimits | undefined): string[] {
  const out: string[] = [];
  if (limits?.pidMax !== undefined) {
    const { always, atMost } = pidMaxBounds(limits.pidMax);
    out.push(
      `limits: the PID namespace's pid_max is ${limits.pidMax}: ${always} processes and threads of the command at a time, however many it starts over its life; up to ${atMost} before its PIDs first wrap at ${RESERVED_PIDS} (RLIMIT_NPROC is the exact bound where the command's kernel uid is not 0)`,
    );
  }
  const userns = Object.entries(limits?.userns ?? {});
  if (userns.length > 0)
    out.push(`limits: the user namespace's own counts: ${userns.map(([k, v]) => `${k}=${v}`).join(', ')}`);
  return out;
}
