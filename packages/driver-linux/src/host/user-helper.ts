/**
 * Helpers built from the shipped C source by `aleph-sandbox build-helper`, where no prebuilt platform
 * package fits: where they live (`~/.aleph/helper/<version>-<arch>/`) and when one may be trusted.
 */
import { lstatSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { HELPER_NAME } from './helper-path.js';

/** The command that builds the helper from the source driver-linux ships, where no prebuilt one fits. */
export const BUILD_HELPER_COMMAND = 'npx aleph-sandbox build-helper';

/** Where helpers built from source by {@link BUILD_HELPER_COMMAND} live: `~/.aleph/helper`. */
export function userHelperRoot(home: string = os.homedir()): string {
  return path.join(home, '.aleph', 'helper');
}

/**
 * Where {@link BUILD_HELPER_COMMAND} puts the helper for the driver-linux package in `pkgDir`:
 * `~/.aleph/helper/<version>-<arch>/aleph-sandbox-init` (a new version never uses an older build).
 */
export function userHelperPath(pkgDir: string, arch: string = process.arch, home?: string): string {
  const { version } = JSON.parse(readFileSync(path.join(pkgDir, 'package.json'), 'utf8')) as {
    version: string;
  };
  return path.join(userHelperRoot(home), `${version}-${arch}`, HELPER_NAME);
}

/**
 * Why a helper under {@link userHelperRoot} cannot be trusted, or undefined when it can: the file and each
 * directory from it up to `~/.aleph` must be owned by this user or root, be writable by nobody else, and
 * not be a symlink (anyone who could replace the helper would run code outside every sandbox).
 */
export function userHelperDistrust(file: string, home: string = os.homedir()): string | undefined {
  const stop = path.dirname(userHelperRoot(home));
  const uid = process.getuid?.() ?? -1;
  for (let at = file; ; at = path.dirname(at)) {
    let st: ReturnType<typeof lstatSync>;
    try {
      st = lstatSync(at);
    } catch (error) {
      return `${at} cannot be read: ${(error as Error).message}`;
    }
    const kind = at === file ? st.isFile() : st.isDirectory();
    if (!kind) return `${at} is not a ${at === file ? 'regular file' : 'directory'} (a symlink or other)`;
    if (st.uid !== uid && st.uid !== 0) return `${at} belongs to uid ${st.uid}, not to this user or root`;
    if ((st.mode & 0o022) !== 0)
      return `${at} is writable by its group or others (mode ${(st.mode & 0o777).toString(8)})`;
    if (at === stop || at === path.dirname(at)) return undefined;
  }
}
