/**
 * Whether tier 1 can serve a plan's user paths: on a root host they reach the command through idmapped
 * mounts, which some filesystems refuse (ramfs, many FUSE and network filesystems, tmpfs before 6.3, any
 * filesystem mounted inside a user namespace). The helper's `--probe-idmap` does what the launcher does,
 * once per filesystem (device and type); the answers are kept with the host cache's verdict.
 */
import { execFile } from 'node:child_process';
import { statfsSync, statSync } from 'node:fs';
import { promisify } from 'node:util';
import { HOST_SIDE_ENV } from '../options.js';
import type { ChoiceCache } from './choice-cache.js';

const execFileAsync = promisify(execFile);

/** Names of the filesystems messages mention, by statfs magic. */
const FS_NAMES: Record<number, string> = {
  61267: 'ext4',
  1481003842: 'xfs',
  2435016766: 'btrfs',
  16914836: 'tmpfs',
  2240043254: 'ramfs',
  2035054128: 'overlayfs',
  1702057286: 'fuse',
  26985: 'nfs',
  16914839: '9p',
  4283649346: 'cifs',
  801189825: 'zfs',
};

/** A user path tier 1 cannot idmap, and why. */
export interface IdmapRefusal {
  readonly path: string;
  /** The filesystem's name (or its statfs magic). */
  readonly fs: string;
  /** What the kernel said (`mount_setattr: Invalid argument`). */
  readonly reason: string;
}

/** The filesystem of `p`: its device and type, and a name for messages. */
function filesystemOf(p: string): { key: string; name: string } | undefined {
  try {
    const type = statfsSync(p).type;
    return { key: `idmap:${statSync(p).dev}:${type}`, name: FS_NAMES[type] ?? `0x${type.toString(16)}` };
  } catch {
    return undefined;
  }
}

/**
 * The user paths a tier 1 plan clones into idmapped mounts (`--clone NAME` of a path opened by `--open
 * NAME PATH`; one opened beneath another (`--open-in`) is on its parent's filesystem but for a mount
 * point, and is checked as its top path).
 */
export function clonedPaths(launch: readonly string[]): string[] {
  const opened = new Map<string, string>();
  const cloned = new Set<string>();
  for (let i = 0; i < launch.length; i++) {
    if (launch[i] === '--open') opened.set(launch[i + 1] as string, launch[i + 2] as string);
    else if (launch[i] === '--open-in') {
      const top = opened.get(launch[i + 2] as string);
      if (top !== undefined) opened.set(launch[i + 1] as string, top);
    } else if (launch[i] === '--clone') cloned.add(launch[i + 1] as string);
  }
  return [...new Set([...cloned].map((n) => opened.get(n)).filter((p): p is string => p !== undefined))];
}

/** One driver's idmap answers, per filesystem. */
export class IdmapCheck {
  readonly #known = new Map<string, string>();

  constructor(
    readonly helperPath: string,
    readonly cache: ChoiceCache | undefined,
  ) {}

  /** Of `paths`, those on a filesystem that refuses idmapped mounts (asking the helper about new ones). */
  async refused(paths: readonly string[]): Promise<IdmapRefusal[]> {
    const found = paths.map((path) => ({ path, fs: filesystemOf(path) }));
    const unknown = new Map<string, string>();
    for (const { path, fs } of found) {
      if (fs === undefined || this.#known.has(fs.key)) continue;
      const noted = this.cache?.note(fs.key);
      if (noted !== undefined) this.#known.set(fs.key, noted);
      else if (!unknown.has(fs.key)) unknown.set(fs.key, path);
    }
    if (unknown.size > 0) await this.#ask(unknown);
    const out: IdmapRefusal[] = [];
    for (const { path, fs } of found) {
      const answer = fs === undefined ? undefined : this.#known.get(fs.key);
      if (fs !== undefined && answer !== undefined && answer !== 'ok')
        out.push({ path, fs: fs.name, reason: answer });
    }
    return out;
  }

  /** Asks the helper about one path of each new filesystem; keeps the answers that are about the filesystem. */
  async #ask(unknown: Map<string, string>): Promise<void> {
    let answers: unknown;
    try {
      const { stdout } = await execFileAsync(this.helperPath, ['--probe-idmap', ...unknown.values()], {
        env: HOST_SIDE_ENV,
        timeout: 10_000,
      });
      answers = JSON.parse(stdout);
    } catch {
      return; // no answer: the launcher itself says what failed
    }
    if (!Array.isArray(answers)) return;
    [...unknown.keys()].forEach((key, i) => {
      const answer = answers[i];
      // "open: …" is about the path (gone, a link), not the filesystem: the launcher decides then.
      if (typeof answer !== 'string' || !(answer === 'ok' || answer.startsWith('mount_setattr:'))) return;
      this.#known.set(key, answer);
      this.cache?.remember(key, answer);
    });
  }
}
