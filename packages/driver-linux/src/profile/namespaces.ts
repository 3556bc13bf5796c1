/**
 * Who a tier 1–2 command runs as and in which namespaces: the identity (root host: a uid of its own, or a
 * fixed one; otherwise a user namespace) and bubblewrap's arguments for namespaces and capabilities.
 */
import type { LinuxProfile, ProfileInputs } from './profile-types.js';

/** The identity: tier 1 drops to a uid of the command's own (or the fixed `sandboxUid`), tier 2 maps one. */
export function profileIdentity(inputs: ProfileInputs, privileged: boolean): LinuxProfile['identity'] {
  if (!privileged && inputs.outerNamespaces === true) return { mode: 'user-namespace', uid: 0 };
  if (!privileged) return { mode: 'user-namespace', uid: inputs.innerUid ?? inputs.host.uid };
  return inputs.sandboxUid === undefined
    ? { mode: 'drop-to-uid', uid: 'per-run', gid: 'per-run', range: inputs.uidRange }
    : {
        mode: 'drop-to-uid',
        uid: inputs.sandboxUid,
        gid: inputs.sandboxGid ?? inputs.sandboxUid,
        range: null,
      };
}

/**
 * bwrap's arguments up to the helper: namespaces, capabilities, identity, session and hostname, then its
 * mounts (`mountArgs`); the helper changes into the cwd once its own mounts are made.
 */
export function bwrapArgs(
  options: {
    readonly sharedNetwork: boolean;
    readonly privileged: boolean;
    readonly devInHelper: boolean;
    readonly innerUid: number | undefined;
    /** Tier 2: what the helper keeps to set its namespaces' limits, and drops itself (`ns-limits.ts`): bwrap's `--cap-add` arguments. */
    readonly helperCapabilities?: readonly string[];
    /** The helper binds the bridge's ports below 1024 (the resolver's 53, egress 80 and 443). */
    readonly bindLowPorts: boolean;
    /**
     * Tier 2 with the host's /proc (`ProfileInputs.hostProc`): no hostname is set, and no
     * `--disable-userns` (it needs a /proc of the sandbox's own).
     */
    readonly keepHostname?: boolean;
    /** `ProfileInputs.outerNamespaces`: the user and network namespaces are the launcher's. */
    readonly outerNamespaces?: boolean;
  },
  mountArgs: readonly string[],
): string[] {
  const bwrap: string[] = ['--unshare-ipc', '--unshare-pid', '--unshare-uts', '--unshare-cgroup-try'];
  const outer = options.outerNamespaces === true;
  if (!options.sharedNetwork && !outer) bwrap.push('--unshare-net');
  if (options.privileged) {
    // bwrap runs as root without a user namespace (a root-mapped one would keep root's file identity);
    // the helper attaches the idmapped user-path mounts (CAP_SYS_ADMIN, and the two DAC capabilities to
    // resolve mount points in directories the idmap shows as the sandbox uid's), then empties the
    // bounding set and switches to the sandbox uid (the other three), before anything of the command runs.
    bwrap.push(
      '--cap-drop',
      'ALL',
      '--cap-add',
      'CAP_SYS_ADMIN',
      '--cap-add',
      'CAP_DAC_OVERRIDE',
      '--cap-add',
      'CAP_DAC_READ_SEARCH',
      '--cap-add',
      'CAP_SETUID',
      '--cap-add',
      'CAP_SETGID',
      '--cap-add',
      'CAP_SETPCAP',
    );
    // The helper makes /dev's device nodes (devfs.c).
    if (options.devInHelper) bwrap.push('--cap-add', 'CAP_MKNOD');
    // The helper binds the bridge's low ports, routes every address to the namespace's loopback (so
    // transparent egress takes connections to address entries) and opens the bridge's watch on refused
    // connections (a packet socket on lo) before it drops its identity (and every capability).
    if (options.bindLowPorts)
      bwrap.push(
        '--cap-add',
        'CAP_NET_BIND_SERVICE',
        '--cap-add',
        'CAP_NET_ADMIN',
        '--cap-add',
        'CAP_NET_RAW',
      );
  } else {
    // The launcher's user namespace (`--outer-ns`) has the host uid alone, as uid 0: bwrap runs there as
    // root of it, without one of its own.
    if (!outer) bwrap.push('--unshare-user');
    // Root without CAP_SYS_ADMIN (tier 2): root is shown as another uid inside, so its files are not root's.
    if (options.innerUid !== undefined && !outer)
      bwrap.push('--uid', String(options.innerUid), '--gid', String(options.innerUid));
    // Only for the helper, which drops them all itself before the program runs (identity.c): what it
    // needs to set its namespaces' limits, and, as bwrap's network namespace belongs to an outer user
    // namespace where no port below 1024 can be bound, what it needs to make one of its own for the
    // bridge (--own-netns) and bind its ports there (native/linux/helper/netns.c).
    const keep = new Set((options.helperCapabilities ?? []).filter((arg) => arg !== '--cap-add'));
    // As uid 0 of the launcher's user namespace, the helper locks uid 0 out of capabilities at any later
    // execve (securebits) and empties the bounding set: both need CAP_SETPCAP (identity.c).
    if (outer) keep.add('CAP_SETPCAP');
    if (options.bindLowPorts)
      for (const cap of [
        'CAP_SYS_ADMIN',
        'CAP_NET_ADMIN',
        'CAP_NET_BIND_SERVICE',
        'CAP_NET_RAW',
        'CAP_SETPCAP',
      ])
        keep.add(cap);
    // --disable-userns writes /proc/sys/user/max_user_namespaces in the sandbox's own /proc; the host's,
    // bound read-only, cannot take it. Nested user namespaces stay refused by seccomp (clone and unshare
    // with CLONE_NEWUSER; clone3 is ENOSYS).
    // With the launcher's user namespace, bwrap has none of its own to disable them in; seccomp refuses
    // them all the same.
    if (options.keepHostname !== true && !outer) bwrap.push('--disable-userns');
    bwrap.push('--cap-drop', 'ALL');
    for (const cap of keep) bwrap.push('--cap-add', cap);
  }
  bwrap.push('--die-with-parent', '--new-session');
  if (options.keepHostname !== true) bwrap.push('--hostname', 'aleph-sandbox');
  bwrap.push(...mountArgs, '--chdir', '/');
  return bwrap;
}
