import { describe, expect, it } from 'vitest';
import { checkRoot, WorkspacePaths } from '../src/workspace-paths.js';

const real = '/home/u/.aleph/workspaces/abc';
const paths = new WorkspacePaths('/workspace', real);

describe('WorkspacePaths', () => {
  it('maps paths under the root to the file API, and leaves others to it', () => {
    expect(paths.forFiles('/workspace')).toBe('.');
    expect(paths.forFiles('/workspace/')).toBe('.');
    expect(paths.forFiles('/workspace/src/a.ts')).toBe('src/a.ts');
    expect(paths.forFiles('src/a.ts')).toBe('src/a.ts');
    expect(paths.forFiles('/workspaces/x')).toBe('/workspaces/x');
    expect(paths.forFiles('/etc/passwd')).toBe('/etc/passwd');
  });

  it('resolves working directories in the real workspace', () => {
    expect(paths.forCwd(undefined)).toBe(real);
    expect(paths.forCwd('  ')).toBe(real);
    expect(paths.forCwd('/workspace/sub')).toBe(`${real}/sub`);
    expect(paths.forCwd('sub/dir')).toBe(`${real}/sub/dir`);
    expect(paths.forCwd('/elsewhere')).toBe('/elsewhere');
  });

  it('names the real workspace where a command says the root, as a word or the start of a path', () => {
    expect(paths.command('cd /workspace && ls /workspace/src')).toBe(`cd ${real} && ls ${real}/src`);
    expect(paths.command('cat "/workspace/a b" \'/workspace\' x=/workspace/y')).toBe(
      `cat "${real}/a b" '${real}' x=${real}/y`,
    );
    expect(paths.command('ls /workspaces /foo/workspace ./workspace')).toBe(
      'ls /workspaces /foo/workspace ./workspace',
    );
  });

  it('shows the real workspace as the root in output', () => {
    expect(paths.output(`${real}\n${real}/src/a.ts: error\n`)).toBe(
      '/workspace\n/workspace/src/a.ts: error\n',
    );
  });

  it('changes nothing when the root is the real path', () => {
    const same = new WorkspacePaths(real, real);
    expect(same.command(`cd ${real}`)).toBe(`cd ${real}`);
    expect(same.output(real)).toBe(real);
    expect(same.forFiles(`${real}/x`)).toBe('x');
  });
});

describe('checkRoot', () => {
  it('accepts an alias such as /workspace, or the workspace itself', () => {
    expect(checkRoot('/workspace', real, [])).toBe('/workspace');
    expect(checkRoot('/repo/', real, [])).toBe('/repo');
    expect(checkRoot(real, real, [])).toBe(real);
  });

  it('refuses what cannot name the workspace: /, relative paths, system directories, grants', () => {
    expect(() => checkRoot('/', real, [])).toThrow(
      /manifest\.root "\/" is \/, which cannot name the workspace; omit it/,
    );
    expect(() => checkRoot('workspace', real, [])).toThrow(/is not an absolute path/);
    expect(() => checkRoot('/usr', real, [])).toThrow(/overlaps \/usr, which commands see as it is/);
    expect(() => checkRoot('/usr/local/app', real, [])).toThrow(/overlaps \/usr/);
    expect(() => checkRoot('/data', real, ['/data/shared'])).toThrow(/overlaps \/data\/shared/);
    expect(() => checkRoot('/work\u0000', real, [])).toThrow(/not an absolute path/);
  });
});
