import { describe, expect, it } from 'vitest';
import { DEFAULT_PROTECTED_PATHS, defaultVaultPaths, pickEnv, resolveProtectedPaths } from '../src/index.js';

describe('driver defaults', () => {
  it('protected paths: the defaults, a custom list, and protectAllGit replacing only .git entries', () => {
    expect(resolveProtectedPaths({})).toEqual([...DEFAULT_PROTECTED_PATHS]);
    expect(resolveProtectedPaths({ protectedPaths: ['.env'] })).toEqual(['.env']);
    expect(resolveProtectedPaths({ protectAllGit: true })).toEqual([
      '.git',
      ...DEFAULT_PROTECTED_PATHS.filter((p) => !p.startsWith('.git/')),
    ]);
    expect(DEFAULT_PROTECTED_PATHS).toEqual(
      expect.arrayContaining([
        '.git/hooks',
        '.git/config',
        '.git/commondir',
        '.git/modules',
        '.git/worktrees',
      ]),
    );
    expect(
      resolveProtectedPaths({ protectAllGit: true, protectedPaths: ['.git/hooks', '.github', '.git'] }),
    ).toEqual(['.git', '.github']);
  });

  it('vault paths live under ~/.aleph', () => {
    expect(defaultVaultPaths('/home/u')).toEqual(['/home/u/.aleph/data', '/home/u/.aleph/.shared_token']);
  });

  it('pickEnv keeps exact names and prefixes, nothing else', () => {
    const env = {
      PATH: '/bin',
      LC_ALL: 'C',
      LC_TIME: 'x',
      LCX: 'no',
      SECRET_TOKEN: 's',
      PATHX: 'no',
      U: undefined,
    };
    expect(pickEnv(['PATH', 'LC_*'], env)).toEqual({ PATH: '/bin', LC_ALL: 'C', LC_TIME: 'x' });
    expect(pickEnv([], env)).toEqual({});
  });
});
