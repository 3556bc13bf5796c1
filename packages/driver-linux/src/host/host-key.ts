/**
 * What the preflight's verdict and the mechanisms' facts depend on, read cheaply (a few files of /proc
 * and two stat calls, no process): the kernel, the helper and bubblewrap binaries, who this process is,
 * its capabilities, seccomp and no_new_privs state, its namespaces, cgroup and LSM label, and the kernel
 * settings about user namespaces. A cached verdict is used only while all of them are the same.
 */
import { createHash } from 'node:crypto';
import { readFileSync, readlinkSync, realpathSync, statSync } from 'node:fs';
import os from 'node:os';
import { readSysctl } from './sysctl.js';
import { which } from './which.js';

const STATUS_FIELDS = [
  'CapInh',
  'CapPrm',
  'CapEff',
  'CapBnd',
  'CapAmb',
  'NoNewPrivs',
  'Seccomp',
  'Seccomp_filters',
];
const NAMESPACES = ['user', 'mnt', 'pid', 'net', 'uts', 'ipc', 'cgroup'];
const SYSCTLS = [
  'user/max_user_namespaces',
  'kernel/unprivileged_userns_clone',
  'kernel/apparmor_restrict_unprivileged_userns',
  'kernel/overflowuid',
];

function read(file: string): string | null {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return null;
  }
}

/** A binary's identity: where it really is, and its inode, size and times. */
function binaryIdentity(file: string | null): string | null {
  if (file === null) return null;
  try {
    const real = realpathSync(file);
    const st = statSync(real);
    return `${real}:${st.dev}:${st.ino}:${st.size}:${st.mtimeMs}:${st.ctimeMs}`;
  } catch {
    return null;
  }
}

/** The capability, no_new_privs and seccomp lines of /proc/self/status. */
function statusFacts(): string[] {
  const status = read('/proc/self/status') ?? '';
  return STATUS_FIELDS.map((f) => new RegExp(`^${f}:\\s*(.*)$`, 'm').exec(status)?.[1] ?? '-');
}

function nsId(ns: string): string {
  try {
    return readlinkSync(`/proc/self/ns/${ns}`);
  } catch {
    return '-';
  }
}

/**
 * The host's side of the key, as a list of values (`hostKeyParts`), and its digest (`hostKey`). `extra` is
 * what else the caller's verdict depends on (the driver's settings).
 */
export function hostKeyParts(helperPath: string, bwrap: string): unknown[] {
  return [
    os.release(),
    os.version(),
    os.arch(),
    binaryIdentity(helperPath),
    binaryIdentity(which(bwrap)),
    process.getuid?.(),
    process.getgid?.(),
    process.getgroups?.(),
    statusFacts(),
    NAMESPACES.map(nsId),
    SYSCTLS.map((s) => readSysctl(s) ?? null),
    read('/proc/self/cgroup'),
    read('/proc/self/attr/current'),
    os.tmpdir(),
  ];
}

/** The digest of `hostKeyParts` and `extra`. */
export function hostKey(helperPath: string, bwrap: string, extra: unknown): string {
  return createHash('sha256')
    .update(JSON.stringify([hostKeyParts(helperPath, bwrap), extra]))
    .digest('hex');
}
