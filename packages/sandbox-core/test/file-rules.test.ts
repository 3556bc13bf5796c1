import { describe, expect, it } from 'vitest';
import { checkFileAction, protectedComponents, type ResolvedFileRules } from '../src/files/file-rules.js';

const rules: ResolvedFileRules = {
  roots: [
    { path: '/w', write: true },
    { path: '/ro', write: false },
    { path: '/grant', write: true },
  ],
  protectedPaths: protectedComponents(['.git/hooks', '.git/config', '.envrc', '.aleph']),
  homeProtectedPaths: protectedComponents(['.bashrc', '.ssh']),
  homes: ['/grant/home/alice'],
  hiddenPaths: ['/grant/home/alice/.aleph/data'],
};
const code = (
  resolved: string,
  action: 'read' | 'write' | 'create-directory' | 'delete',
  kind: 'file' | 'directory' = 'file',
) => checkFileAction(rules, resolved, action, kind)?.code ?? 'ok';

describe('checkFileAction', () => {
  it('protected paths of each writable root: the path, inside it, a file where it needs a directory', () => {
    expect(code('/w/.git/config', 'write')).toBe('ALEPH_PATH_PROTECTED');
    expect(code('/w/.git/hooks/pre-push', 'write')).toBe('ALEPH_PATH_PROTECTED');
    expect(code('/w/.git/hooks', 'create-directory', 'directory')).toBe('ALEPH_PATH_PROTECTED');
    expect(code('/w/.git', 'write')).toBe('ALEPH_PATH_PROTECTED');
    expect(code('/w/.git', 'create-directory', 'directory')).toBe('ok');
    expect(code('/w/.git/HEAD', 'write')).toBe('ok');
    expect(code('/grant/.envrc', 'write')).toBe('ALEPH_PATH_PROTECTED');
    expect(code('/w/src/.envrc', 'write')).toBe('ok');
  });

  it('nested repositories: git control files under any .git, and a .git file', () => {
    expect(code('/w/vendor/x/.git/hooks/post-checkout', 'write')).toBe('ALEPH_PATH_PROTECTED');
    expect(code('/w/vendor/x/.git/config', 'delete')).toBe('ALEPH_PATH_PROTECTED');
    expect(code('/w/vendor/x/.git', 'write')).toBe('ALEPH_PATH_PROTECTED');
    expect(code('/w/vendor/x/.git/objects/ab', 'write')).toBe('ok');
  });

  it('deletes: a protected path, or a directory holding one', () => {
    expect(code('/w/.git', 'delete', 'directory')).toBe('ALEPH_PATH_PROTECTED');
    expect(code('/w/.aleph', 'delete', 'directory')).toBe('ALEPH_PATH_PROTECTED');
    expect(code('/w/src', 'delete', 'directory')).toBe('ok');
  });

  it("home directories inside a writable root: their startup files; the home itself can't be deleted", () => {
    expect(code('/grant/home/alice/.bashrc', 'write')).toBe('ALEPH_PATH_PROTECTED');
    expect(code('/grant/home/alice/.ssh/authorized_keys', 'write')).toBe('ALEPH_PATH_PROTECTED');
    expect(code('/grant/home/alice/notes.txt', 'write')).toBe('ok');
    expect(code('/grant/home', 'delete', 'directory')).toBe('ALEPH_PATH_PROTECTED');
    expect(code('/grant/home/alice', 'delete', 'directory')).toBe('ALEPH_PATH_PROTECTED');
  });

  it('hidden paths: refused for reads too, and a delete of what holds them', () => {
    expect(code('/grant/home/alice/.aleph/data/token', 'read')).toBe('ALEPH_PATH_PROTECTED');
    expect(code('/grant/home/alice/.aleph', 'delete', 'directory')).toBe('ALEPH_PATH_PROTECTED');
    expect(code('/grant/home/alice/.aleph/config.toml', 'read')).toBe('ok');
  });

  it('reads of protected paths, and anything in a read-only root, pass the rules', () => {
    expect(code('/w/.git/config', 'read')).toBe('ok');
    expect(code('/ro/.git/config', 'write')).toBe('ok');
  });
});
