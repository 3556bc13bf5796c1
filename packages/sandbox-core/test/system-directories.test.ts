import { mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { isAlephError, refuseSystemWorkspace, systemDirectoryOf } from '../src/index.js';

const posix = process.platform !== 'win32';
const dir = mkdtempSync(path.join(os.tmpdir(), 'aleph-sysdir-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe.skipIf(!posix)(`systemDirectoryOf${posix ? '' : ' [skipped: POSIX paths]'}`, () => {
  it('names the system directory a path is or lies in; project directories are none', () => {
    expect(systemDirectoryOf('/')).toBe('/');
    expect(systemDirectoryOf('/etc')).toBe('/etc');
    expect(systemDirectoryOf('/etc/cron.d/')).toBe('/etc');
    expect(systemDirectoryOf('/usr/local/bin')).toBe('/usr');
    expect(systemDirectoryOf('/var/spool/cron')).toBe('/var/spool');
    expect(systemDirectoryOf('/home')).toBe('/home');
    expect(systemDirectoryOf('/tmp')).toBe('/tmp');
    expect(systemDirectoryOf('/System/Library', 'darwin')).toBe('/System');
    for (const ok of [dir, '/home/me/project', '/var/lib/aleph/workspaces', '/srv/agent/work', os.homedir()])
      expect([ok, systemDirectoryOf(ok)]).toEqual([ok, undefined]);
  });

  it('resolves the links of the part that exists: a link to /etc, and a missing path below it', () => {
    const link = path.join(dir, 'etc-link');
    symlinkSync('/etc', link);
    expect(systemDirectoryOf(link)).toBe('/etc');
    expect(systemDirectoryOf(path.join(link, 'new', 'deep'))).toBe('/etc');
    expect(systemDirectoryOf(path.join(dir, 'missing', 'deep'))).toBeUndefined();
  });

  it('refuseSystemWorkspace is a typed error naming the field, the value and the fix', () => {
    try {
      refuseSystemWorkspace('/usr/local/bin');
      expect.unreachable();
    } catch (e) {
      expect(isAlephError(e) && e.code).toBe('ALEPH_CONFIG_INVALID');
      expect((e as Error).message).toBe(
        `workspace lies in the system directory /usr: a sandboxed command may write its workspace, and the host runs, trusts or keeps every user's files there (got "/usr/local/bin"); pass a project directory (such as /home/you/project or /srv/agent/work), or a workspaceRoot whose session directories lie outside system directories`,
      );
    }
    expect(() => refuseSystemWorkspace(dir)).not.toThrow();
  });
});

describe('systemDirectoryOf on Windows paths', () => {
  it('refuses a drive root and the Windows and Program Files directories, case-insensitively', () => {
    const saved = { SystemRoot: process.env.SystemRoot, ProgramFiles: process.env.ProgramFiles };
    process.env.SystemRoot = 'C:\\Windows';
    process.env.ProgramFiles = 'C:\\Program Files';
    try {
      expect(systemDirectoryOf('C:\\', 'win32')).toBe('C:\\');
      expect(systemDirectoryOf('c:\\windows\\system32', 'win32')).toBe('C:\\Windows');
      expect(systemDirectoryOf('C:\\Program Files\\app', 'win32')).toBe('C:\\Program Files');
      expect(systemDirectoryOf('C:\\Users\\me\\project', 'win32')).toBeUndefined();
    } finally {
      for (const [k, v] of Object.entries(saved)) {
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      }
    }
  });
});
