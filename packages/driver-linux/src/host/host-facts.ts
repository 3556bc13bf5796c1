/** The host facts every profile uses, read once per driver: who we are, system directories, /etc's secrets. */
import { lstatSync, readdirSync, readlinkSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** How a system directory appears on this host. */
export type SystemDir =
  | { readonly path: string; readonly kind: 'dir' }
  | { readonly path: string; readonly kind: 'symlink'; readonly target: string };

/** Facts about the host that every profile uses, read once. */
export interface HostFacts {
  readonly isRoot: boolean;
  readonly uid: number;
  readonly gid: number;
  readonly home: string;
  /** `/usr`, `/bin`, `/sbin`, `/lib*`, `/etc` as they exist here (directories or usr-merge symlinks). */
  readonly systemDirs: readonly SystemDir[];
  /** Sensitive files and directories under /etc hidden inside (shadow, sudoers, ssh host keys, …). */
  readonly maskedFiles: readonly string[];
  readonly maskedDirs: readonly string[];
}

const SYSTEM_DIRS = ['/usr', '/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32', '/etc'];
const SENSITIVE_FILES = [
  '/etc/shadow',
  '/etc/shadow-',
  '/etc/gshadow',
  '/etc/gshadow-',
  '/etc/sudoers',
  '/etc/security/opasswd',
];
const SENSITIVE_DIRS = ['/etc/sudoers.d', '/etc/ssl/private'];

function kindOf(p: string): 'dir' | 'file' | 'symlink' | undefined {
  try {
    const st = lstatSync(p);
    if (st.isSymbolicLink()) return 'symlink';
    if (st.isDirectory()) return 'dir';
    return 'file';
  } catch {
    return undefined;
  }
}

/** Reads the host facts (cheap: a few lstat calls and one readdir). */
export function readHostFacts(): HostFacts {
  const systemDirs: SystemDir[] = [];
  for (const p of SYSTEM_DIRS) {
    const kind = kindOf(p);
    if (kind === 'dir') systemDirs.push({ path: p, kind: 'dir' });
    else if (kind === 'symlink') systemDirs.push({ path: p, kind: 'symlink', target: readlinkSync(p) });
  }
  const maskedFiles = SENSITIVE_FILES.filter((p) => kindOf(p) === 'file');
  try {
    for (const name of readdirSync('/etc/ssh')) {
      if (/^ssh_host_.*_key$/.test(name)) maskedFiles.push(path.join('/etc/ssh', name));
    }
  } catch {
    // no sshd here
  }
  const maskedDirs = SENSITIVE_DIRS.filter((p) => kindOf(p) === 'dir');
  const uid = process.getuid?.() ?? 0;
  return {
    isRoot: uid === 0,
    uid,
    gid: process.getgid?.() ?? 0,
    home: os.homedir(),
    systemDirs,
    maskedFiles,
    maskedDirs,
  };
}
