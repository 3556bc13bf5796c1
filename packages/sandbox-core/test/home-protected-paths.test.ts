import { describe, expect, it } from 'vitest';
import {
  DEFAULT_HOME_PROTECTED_PATHS,
  DEFAULT_PROTECTED_PATHS,
  defaultHomeProtectedPaths,
  protectedEntryKind,
} from '../src/index.js';

describe('the home list', () => {
  it('holds the startup and tool config files of attack round 34 (finding A), each once', () => {
    const list: readonly string[] = DEFAULT_HOME_PROTECTED_PATHS;
    for (const rel of [
      '.bash_aliases',
      '.vimrc',
      '.kube/config',
      '.cargo/config.toml',
      '.gradle/init.d',
      '.config/environment.d',
      '.xprofile',
      '.xsessionrc',
      '.tmux.conf',
      '.sqliterc',
      '.psqlrc',
      '.irbrc',
      '.docker/config.json',
      '.config/nvim',
      '.inputrc',
      '.bashrc',
      '.profile',
      '.gitconfig',
      '.ssh',
      '.local/bin',
    ])
      expect(list, rel).toContain(rel);
    expect(new Set(list).size).toBe(list.length);
  });

  it('on Windows: the entries its tools read under %USERPROFILE% and an empty stub leaves working', () => {
    const windows = defaultHomeProtectedPaths('windows');
    expect(windows).toEqual(expect.arrayContaining(['.bashrc', '.gitconfig', '.ssh', '.npmrc', '.aleph']));
    expect(windows).not.toContain('.vimrc');
    expect(windows.every((p) => DEFAULT_HOME_PROTECTED_PATHS.includes(p))).toBe(true);
    expect(defaultHomeProtectedPaths('posix')).toBe(DEFAULT_HOME_PROTECTED_PATHS);
  });

  it('protectedEntryKind: the kind the lists give, else a file when named like one or with an extension', () => {
    for (const rel of [
      '.bashrc',
      '.kube/config',
      '.docker/config.json',
      '.inputrc',
      '.yarnrc.yml',
      '.git/config',
    ])
      expect(protectedEntryKind(rel), rel).toBe('file');
    for (const rel of [
      '.ssh',
      '.emacs.d',
      '.gradle/init.d',
      '.config/nvim',
      '.local/bin',
      'bin',
      '.git/hooks',
    ])
      expect(protectedEntryKind(rel), rel).toBe('dir');
    expect(protectedEntryKind('x/pip.conf')).toBe('file');
    expect(protectedEntryKind('x/config')).toBe('file');
    expect(protectedEntryKind('.foo.d')).toBe('dir');
    expect(protectedEntryKind('.foo')).toBe('dir');
    for (const rel of DEFAULT_PROTECTED_PATHS) expect(['file', 'dir']).toContain(protectedEntryKind(rel));
  });
});
