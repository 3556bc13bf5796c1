// The directories that may never be a session's workspace: a sandboxed command may write its workspace,
// and the host's own programs run or trust what lies in these (its configuration, its binaries, its
// services' spools), or they hold every user's files (`/`, `/home`). A workspace is checked after the
// links of its existing part are resolved, so a link to one of them is no way round.
import { realpathSync } from 'node:fs';
import path from 'node:path';
import { InvalidInputError } from './errors.js';

/** POSIX directories refused as a workspace themselves, though a directory below them may be one. */
const POSIX_EXACT = [
  '/',
  '/home',
  '/tmp',
  '/var',
  '/var/lib',
  '/var/tmp',
  '/opt',
  '/srv',
  '/mnt',
  '/media',
  '/Users',
  '/Volumes',
  '/private',
  '/private/var',
  '/private/tmp',
];

/** POSIX directories refused as a workspace, and every directory below them. */
const POSIX_TREES = [
  '/bin',
  '/boot',
  '/dev',
  '/etc',
  '/lib',
  '/lib32',
  '/lib64',
  '/libx32',
  '/proc',
  '/run',
  '/sbin',
  '/snap',
  '/sys',
  '/usr',
  '/var/backups',
  '/var/cache',
  '/var/lib/apt',
  '/var/lib/dpkg',
  '/var/lib/systemd',
  '/var/log',
  '/var/mail',
  '/var/run',
  '/var/spool',
  // macOS
  '/Applications',
  '/Library',
  '/System',
  '/private/etc',
  '/private/var/db',
];

/** The path with the links of its longest existing prefix resolved (the rest as written). */
function resolveExisting(dir: string): string {
  const missing: string[] = [];
  let at = path.resolve(dir);
  for (;;) {
    try {
      return path.join(realpathSync.native(at), ...missing.reverse());
    } catch {
      const parent = path.dirname(at);
      if (parent === at) return path.resolve(dir);
      missing.push(path.basename(at));
      at = parent;
    }
  }
}

function windowsSystemDirectory(dir: string): string | undefined {
  const p = path.win32.resolve(dir).toLowerCase().replace(/\\+$/, '');
  if (/^[a-z]:$/.test(p)) return path.win32.resolve(dir);
  const env = process.env;
  for (const root of [env.SystemRoot, env.ProgramFiles, env['ProgramFiles(x86)'], env.ProgramData]) {
    if (root === undefined || root === '') continue;
    const r = path.win32.resolve(root).toLowerCase();
    if (p === r || p.startsWith(`${r}\\`)) return root;
  }
  return undefined;
}

/**
 * The system directory that `dir` is or lies in (after resolving the links of its existing part), or
 * `undefined` when it may be a workspace.
 *
 * @example
 * ```ts
 * systemDirectoryOf('/etc/cron.d') // '/etc'
 * systemDirectoryOf('/home/me/project') // undefined
 * ```
 */
export function systemDirectoryOf(
  dir: string,
  platform: NodeJS.Platform = process.platform,
): string | undefined {
  if (platform === 'win32') return windowsSystemDirectory(dir);
  const real = resolveExisting(dir);
  for (const candidate of new Set([path.resolve(dir), real])) {
    if (POSIX_EXACT.includes(candidate)) return candidate;
    const tree = POSIX_TREES.find((t) => candidate === t || candidate.startsWith(`${t}/`));
    if (tree !== undefined) return tree;
  }
  return undefined;
}

/** Why `dir` may not be a workspace, in words, naming the system directory; `undefined` when it may. */
export function systemDirectoryRefusal(dir: string): string | undefined {
  const sys = systemDirectoryOf(dir);
  if (sys === undefined) return undefined;
  const exact = [path.resolve(dir), resolveExisting(dir)].includes(sys);
  const where = exact ? `is the system directory ${sys}` : `lies in the system directory ${sys}`;
  return `${where}: a sandboxed command may write its workspace, and the host runs, trusts or keeps every user's files there`;
}

/**
 * Throws when `dir` may not be a workspace (see {@link systemDirectoryOf}); creates nothing.
 *
 * @throws {InvalidInputError} `ALEPH_CONFIG_INVALID` naming `field`, the directory and the fix.
 */
export function refuseSystemWorkspace(dir: string, field = 'workspace'): void {
  const refusal = systemDirectoryRefusal(dir);
  if (refusal === undefined) return;
  throw new InvalidInputError(
    'ALEPH_CONFIG_INVALID',
    field,
    dir,
    refusal,
    'pass a project directory (such as /home/you/project or /srv/agent/work), or a workspaceRoot whose session directories lie outside system directories',
  );
}
