// A machine no prebuilt helper fits: the first use fails with ALEPH_HELPER_MISSING naming the platform and
// the one command that builds a helper (`npx aleph-sandbox build-helper`), which puts it under
// ~/.aleph/helper/<version>-<arch>/; the driver uses such a helper only when nobody else can have written it.
import { chmodSync, chownSync, copyFileSync, mkdirSync, readFileSync, symlinkSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { isAlephError, WorkspaceSandbox } from '@aleph/sandbox-core';
import { describe, expect, it } from 'vitest';
import {
  BUILD_HELPER_COMMAND,
  checkHelperSync,
  createLinuxDriver,
  HELPER_ELF_MACHINES,
  resolveHelperPath,
  userHelperDistrust,
  userHelperPath,
  userHelperRoot,
} from '../src/index.js';
import { tempDirs } from './temp-dirs.js';

const tempDir = tempDirs('aleph-user-helper-test-');
const pkgDir = fileURLToPath(new URL('..', import.meta.url));
const version = JSON.parse(readFileSync(path.join(pkgDir, 'package.json'), 'utf8')).version as string;
const linux = process.platform === 'linux' && process.arch in HELPER_ELF_MACHINES;
const root = process.getuid?.() === 0;

/** A home holding a helper built as `aleph-sandbox build-helper` lays it out (a copy of `bin/false`). */
function homeWithHelper(): { home: string; helper: string } {
  const home = tempDir();
  const helper = userHelperPath(pkgDir, process.arch, home);
  mkdirSync(path.dirname(helper), { recursive: true, mode: 0o755 });
  chmodSync(path.join(home, '.aleph'), 0o700);
  copyFileSync('/bin/true', helper);
  chmodSync(helper, 0o755);
  return { home, helper };
}

describe.runIf(linux)('a helper built from source', () => {
  it('lives in ~/.aleph/helper/<version>-<arch>/', () => {
    expect(userHelperPath(pkgDir, 'x64', '/home/u')).toBe(
      `/home/u/.aleph/helper/${version}-x64/aleph-sandbox-init`,
    );
    expect(userHelperRoot('/home/u')).toBe('/home/u/.aleph/helper');
  });

  it('is trusted when it and its directories up to ~/.aleph are ours (or root’s) and writable by nobody else', () => {
    const { home, helper } = homeWithHelper();
    expect(userHelperDistrust(helper, home)).toBeUndefined();
  });

  it.each([
    [
      'its directory is group-writable',
      (h: string) => chmodSync(path.dirname(h), 0o775),
      /writable by its group/,
    ],
    [
      '~/.aleph/helper is writable by others',
      (h: string) => chmodSync(path.dirname(path.dirname(h)), 0o757),
      /writable by its group or others/,
    ],
    ['the file is writable by others', (h: string) => chmodSync(h, 0o757), /writable by its group or others/],
  ])('is not trusted when %s', (_name, spoil, said) => {
    const { home, helper } = homeWithHelper();
    spoil(helper);
    expect(userHelperDistrust(helper, home)).toMatch(said);
  });

  it('is not trusted when it is a symlink', () => {
    const { home, helper } = homeWithHelper();
    const elsewhere = path.join(tempDir(), 'planted');
    copyFileSync('/bin/true', elsewhere);
    const link = path.join(path.dirname(helper), 'link');
    symlinkSync(elsewhere, link);
    expect(userHelperDistrust(link, home)).toMatch(/not a regular file/);
  });

  it.skipIf(!root)(
    `is not trusted when another user owns its directory${root ? '' : ' [skipped: needs root to chown]'}`,
    () => {
      const { home, helper } = homeWithHelper();
      chownSync(path.dirname(helper), 65534, 65534);
      expect(userHelperDistrust(helper, home)).toMatch(/belongs to uid 65534/);
    },
  );

  it('is used before the platform package’s helper, and refused by the run-path check when it is not trusted', () => {
    const { home, helper } = homeWithHelper();
    const saved = process.env.HOME;
    process.env.HOME = home;
    try {
      expect(resolveHelperPath()).toBe(helper);
      expect(checkHelperSync(helper).ok).toBe(true);
      chmodSync(path.dirname(helper), 0o777);
      expect(checkHelperSync(helper)).toMatchObject({
        ok: false,
        problem: expect.stringMatching(/is not trusted: .* writable by its group or others/),
        fix: expect.stringContaining(BUILD_HELPER_COMMAND),
      });
    } finally {
      process.env.HOME = saved;
    }
  });
});

describe.runIf(linux)('no helper fits this machine', () => {
  it('checkHelperSync says which platform and the one command that builds one', () => {
    const check = checkHelperSync(path.join(tempDir(), 'aleph-sandbox-init'));
    expect(check).toMatchObject({
      ok: false,
      code: 'ALEPH_HELPER_MISSING',
      problem: expect.stringMatching(
        new RegExp(`no sandbox helper fits this machine \\(linux-${process.arch}\\)`),
      ),
    });
    if (!check.ok) expect(check.fix).toContain('`npx aleph-sandbox build-helper`');
  });

  it('the first command fails with ALEPH_HELPER_MISSING, naming the platform and the command', async () => {
    const driver = createLinuxDriver({
      helperPath: path.join(tempDir(), 'aleph-sandbox-init'),
      stateDir: tempDir(),
      homeRoot: tempDir(),
      forkServer: false,
    });
    const sandbox = new WorkspaceSandbox({ driver, workspaceRoot: tempDir() });
    try {
      const error = await sandbox.execute({ sessionId: 's', program: 'true' }).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(isAlephError(error, 'ALEPH_HELPER_MISSING'), String(error)).toBe(true);
      expect((error as Error).message).toMatch(new RegExp(`linux-${process.arch}`));
      expect((error as Error).message).toContain('npx aleph-sandbox build-helper');
    } finally {
      await sandbox.dispose();
    }
  });
});
