/**
 * The host-side launcher's arguments of a tier 1–2 plan (`aleph-sandbox-init --launch`, before its
 * `--`): the state directory, the uid (range) it picks from, the session's network namespace, the user
 * paths it opens, the writable roots it sweeps after the run, and the mounts it clones (root host).
 */
import type { LaunchPlan } from '../mounts/launch-plan.js';
import type { RenderedMounts } from '../mounts/render-mounts.js';
import type { LinuxProfile } from './profile-types.js';

/** The launcher's arguments, in the order it reads them. */
export function namespaceLauncherArgs(options: {
  readonly stateDir: string;
  readonly identity: LinuxProfile['identity'];
  /** Root host, network of its own: the fork server lends the run its session's namespace (netpool.c). */
  readonly networkKey: string | undefined;
  readonly plan: LaunchPlan;
  readonly writableRoots: readonly string[];
  readonly clones: RenderedMounts['clones'];
  /** `--publish PORT` for each published port. */
  readonly publish: readonly string[];
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
  // After the run, repositories a command created or changed below the writable roots lose the control
  // files it wrote (renamed aside, reported): host git runs none of them.
  for (const root of options.writableRoots) launch.push('--git-sweep', plan.open(root));
  for (const clone of options.clones) launch.push('--clone', clone.name, clone.mode);
  launch.push(...options.publish);
  return launch;
}
