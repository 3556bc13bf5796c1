/** What makes unprivileged user namespaces work on this host, from what failed and the kernel's settings. */
import { readSysctl } from './sysctl.js';

/**
 * What makes user namespaces work here: from `exercised` (the helper's attempt: the step that failed and
 * its error) where it says, else from the kernel's settings.
 */
export function usernsFix(exercised?: string): string {
  const restricted = readSysctl('kernel/apparmor_restrict_unprivileged_userns');
  if (restricted !== undefined && restricted !== '0')
    return 'AppArmor restricts them (Ubuntu 24.04 and later): `sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0`, or an AppArmor profile for bwrap with `userns,` (see /etc/apparmor.d/bwrap-userns-restrict)';
  if (readSysctl('kernel/unprivileged_userns_clone') === '0')
    return '`sudo sysctl -w kernel.unprivileged_userns_clone=1`';
  if (readSysctl('user/max_user_namespaces') === '0' || /No space left/.test(exercised ?? ''))
    return '`sudo sysctl -w user.max_user_namespaces=15000` (in a container: on the host, or the namespace it runs in)';
  if (/creating a user namespace: Operation not permitted/.test(exercised ?? ''))
    return "a seccomp filter refuses unshare/clone with CLONE_NEWUSER (a container runtime's default profile): allow them (Docker: `--security-opt seccomp=unconfined`, or a profile permitting them)";
  if (/mount namespace inside/.test(exercised ?? ''))
    return 'the user namespace gets no capabilities (an LSM such as AppArmor or SELinux confines this program): allow bwrap user namespaces in its policy';
  return 'enable unprivileged user namespaces (kernel.unprivileged_userns_clone=1, user.max_user_namespaces > 0) and allow unshare with CLONE_NEWUSER';
}
