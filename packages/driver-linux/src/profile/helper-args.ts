/**
 * The helper's arguments (`aleph-sandbox-init`, inside the sandbox): its mounts, the identity it drops
 * to, the rlimits, the Landlock rules, the bridge, and where the seccomp program and the command's
 * environment arrive. The rlimit and Landlock vocabulary is shared with tier 3 (`direct-profile.ts`).
 */
import type { SandboxCapabilities } from '@aleph/sandbox-core';
import { BRIDGE_PORT, INNER_PROXY_SOCKET } from '../options.js';
import { DEFAULT_MAX_OPEN_FILES } from './limits.js';
import type { LandlockRule, LinuxProfile, ProfileInputs } from './profile-types.js';

/** The helper's flag for each Landlock access. */
export const LANDLOCK_FLAG = {
  'read-exec': '--ll-ro',
  'read-write-exec': '--ll-rw',
  device: '--ll-dev',
  list: '--ll-list',
} as const;

/** `--rlimit NAME=VALUE` for each limit, in order. */
export function rlimitArgs(rlimits: Readonly<Record<string, number>>): string[] {
  const args: string[] = [];
  for (const [name, value] of Object.entries(rlimits)) args.push('--rlimit', `${name}=${value}`);
  return args;
}

/**
 * The helper's flag and path for each rule, in order; a rule on a launcher descriptor names a copy of it
 * (`@NAME:v`, which the launcher replaces by the copy's number: bwrap closes the descriptors it binds).
 */
export function landlockArgs(rules: readonly LandlockRule[]): string[] {
  const args: string[] = [];
  for (const rule of rules)
    args.push(LANDLOCK_FLAG[rule.access], rule.fd === undefined ? rule.path : `@${rule.fd}:v`);
  return args;
}

/** `RLIMIT_*` of a tier 1–2 command: no core dumps, open files, and its memory and file-size limits. */
export function profileRlimits(caps: SandboxCapabilities, inputs: ProfileInputs): Record<string, number> {
  const rlimits: Record<string, number> = {
    CORE: 0,
    NOFILE: inputs.maxOpenFiles ?? DEFAULT_MAX_OPEN_FILES,
  };
  if (caps.maxMemoryMb !== undefined) rlimits.AS = caps.maxMemoryMb * 1024 * 1024;
  const maxFileMb = Math.min(
    caps.maxFileMb ?? Number.POSITIVE_INFINITY,
    inputs.maxFileMb ?? Number.POSITIVE_INFINITY,
  );
  if (Number.isFinite(maxFileMb)) rlimits.FSIZE = maxFileMb * 1024 * 1024;
  return rlimits;
}

/**
 * The tier 1–2 helper's arguments: its own mounts (`mountArgs`), the identity it drops to, the rlimits,
 * the Landlock rules (no TCP rules: in its own network namespace a command may bind and connect on its
 * loopback, a dev server and its client, which reaches nothing else; with allowAll it shares the host's
 * network), the bridge for allowHosts, and the cwd and descriptors.
 */
export function namespaceHelperArgs(options: {
  readonly mountArgs: readonly string[];
  readonly identity: LinuxProfile['identity'];
  readonly rlimits: Readonly<Record<string, number>>;
  readonly landlock: ProfileInputs['landlock'];
  readonly rules: readonly LandlockRule[];
  readonly bridge: boolean;
  /** The bridge's resolver, egress ports and published ports (`network-plan.ts`). */
  readonly network: readonly string[];
  readonly cwd: string;
}): string[] {
  const { identity } = options;
  const helper: string[] = [...options.mountArgs];
  if (identity.mode === 'drop-to-uid')
    helper.push(
      '--uid',
      identity.uid === 'per-run' ? '@UID' : String(identity.uid),
      '--gid',
      identity.gid === 'per-run' ? '@GID' : String(identity.gid),
    );
  helper.push(...rlimitArgs(options.rlimits));
  helper.push('--landlock', options.landlock);
  helper.push(...landlockArgs(options.rules));
  helper.push('--ll-scope', 'on');
  if (options.bridge) helper.push('--bridge', `${BRIDGE_PORT}:${INNER_PROXY_SOCKET}`);
  helper.push(...options.network);
  helper.push('--chdir', options.cwd, '--seccomp-fd', '3', '--env-fd', '4');
  return helper;
}
