/**
 * The host-side launcher's arguments of a tier 1–2 plan (`aleph-sandbox-init --launch`, before its
 * `--`): the state directory, the uid (range) it picks from, the session's network namespace, the user
 * paths it opens, the writable roots it checks after the run (with a journal, and where what it sets aside
 * goes), and the mounts it clones (root host).
 */
import type { LaunchPlan } from '../mounts/launch-plan.js';
import type { RenderedMounts } from '../mounts/render-mounts.js';
import type { LinuxProfile } from './profile-types.js';

/** The launcher's arguments, in the order it reads them. */
export function namespaceLauncherArgs(options: {
  readonly stateDir: string;
  readonly quarantineDir: string | undefined;
  /** Root host: keep a change journal (fanotify) for the check after the run. */
  readonly journal: boolean;
  readonly identity: LinuxProfile['identity'];
  /** Root host, network of its own: the fork server lends the run its session's namespace (netpool.c). */
  readonly networkKey: string | undefined;
  readonly plan: LaunchPlan;
  readonly writableRoots: readonly string[];
  readonly clones: RenderedMounts['clones'];
  /** `--publish PORT` for each published port. */
  readonly publish: readonly string[];
  /** bwrap runs in user and network namespaces the launcher makes (`ProfileInputs.outerNamespaces`). */
  readonly outerNamespaces?: boolean;
}): string[] {
  const { identity, plan } = options;
  const launch: string[] = ['--state', options.stateDir];
  if (identity.mode === 'drop-to-uid') {
    if (identity.range !== null)
      launch.push('--uid-range', String(identity.range[0]), String(identity.range[1]));
    else launch.push('--uid', String(identity.uid));
  }
  if (options.networkKey !== undefined) launch.push('--net-pool', options.networkKey);
  launch.push(...plan.args);
  launch.push(...checkArgs(plan, options.writableRoots, options));
  for (const clone of options.clones) launch.push('--clone', clone.name, clone.mode);
  launch.push(...options.publish);
  if (options.outerNamespaces === true) launch.push('--outer-ns');
  return launch;
}

/**
 * The check after the run (native/linux/after-run/check.c), every tier: each writable root, what the
 * command left there for host tools to run or follow (git control files, set-id bits, protected paths
 * that appeared, symlinks out) is set aside into the quarantine, cleared or reported.
 */
export function checkArgs(
  plan: LaunchPlan,
  writableRoots: readonly string[],
  options: { readonly quarantineDir: string | undefined; readonly journal: boolean },
): string[] {
  const args: string[] = [];
  for (const root of writableRoots) args.push('--check-root', plan.open(root));
  if (options.journal) args.push('--journal');
  if (options.quarantineDir !== undefined) args.push('--quarantine', options.quarantineDir);
  return args;
}
