/**
 * Tier 3's view of /etc: without mounts its secrets cannot be hidden, so Landlock grants /etc entry by
 * entry and leaves them out.
 */
import { lstatSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { isPathWithin } from '@aleph/sandbox-core';
import type { LandlockRule } from './profile-types.js';

/** Sensitive entries under /etc, left out of the grant (with the directories that hold them). */
const ETC_SECRET = /^(shadow|gshadow|sudoers|opasswd|ssh_host_.*_key|private|\.pwd\.lock|master\.passwd)/;

/** What `p` is, without following a symlink. */
export function pathKind(p: string): 'dir' | 'file' | 'symlink' | undefined {
  try {
    const st = lstatSync(p);
    return st.isSymbolicLink() ? 'symlink' : st.isDirectory() ? 'dir' : 'file';
  } catch {
    return undefined;
  }
}

/**
 * Read rules for `dir`, entry by entry, leaving out the sensitive ones and descending only into the
 * directories that hold one (`/etc/ssl` for `ssl/private`, `/etc/ssh` for the host keys), so the rest of
 * each directory is granted whole.
 */
export function etcRules(dir: string, secrets: readonly string[]): LandlockRule[] {
  const rules: LandlockRule[] = [];
  let names: string[];
  try {
    names = readdirSync(dir).sort();
  } catch {
    return rules;
  }
  for (const name of names) {
    const full = path.join(dir, name);
    if (ETC_SECRET.test(name) || secrets.includes(full)) continue;
    if (secrets.some((s) => isPathWithin(s, full)) && pathKind(full) === 'dir')
      rules.push(...etcRules(full, secrets));
    else rules.push({ path: full, access: 'read-exec' });
  }
  return rules;
}
