import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { GitIdentitySync, readGitIdentity, renderGitIdentity } from '../src/run/git-identity.js';
import { ensureSessionHome } from '../src/run/session-home.js';
import { tempDirs } from './temp-dirs.js';

const temp = tempDirs('aleph-git-identity-');

/** A host home and the session homes' root beside it. */
function world() {
  const base = temp();
  const home = path.join(base, 'home');
  const homeRoot = path.join(home, '.aleph', 'homes');
  mkdirSync(homeRoot, { recursive: true });
  return { base, home, homeRoot };
}

describe('the git identity of the session HOMEs', () => {
  it('reads only user.name and user.email, the later file winning, never a subsection or an include', () => {
    const { home } = world();
    mkdirSync(path.join(home, '.config', 'git'), { recursive: true });
    writeFileSync(
      path.join(home, '.config', 'git', 'config'),
      '[user]\n\tname = Xdg Name\n\temail = xdg@example.test\n',
    );
    writeFileSync(
      path.join(home, '.gitconfig'),
      '[include]\n\tpath = /etc/evil\n[user "x"]\n\tname = Sub\n[user]\n\tname = "Home Name"\n[credential]\n\thelper = store\n',
    );
    expect(readGitIdentity(home)).toEqual({ name: 'Home Name', email: 'xdg@example.test' });
    expect(renderGitIdentity({ name: 'A "quoted" \\ name' })).toBe(
      '# The host user\'s git identity, kept up to date by aleph-sandbox (read-only in the sandbox).\n[user]\n\tname = "A \\"quoted\\" \\\\ name"\n',
    );
  });

  it('follows the user: an identity set, changed or removed after the first sync is in the file at the next', () => {
    const { home, homeRoot } = world();
    const sync = new GitIdentitySync(homeRoot, home);
    const file = sync.sync();
    expect(file).toBe(path.join(homeRoot, 'git-identity'));
    expect(readFileSync(file, 'utf8')).not.toContain('[user]');
    expect(statSync(file).mode & 0o777).toBe(0o644);
    writeFileSync(path.join(home, '.gitconfig'), '[user]\n\tname = Later\n\temail = later@example.test\n');
    sync.sync();
    expect(readFileSync(file, 'utf8')).toContain('\tname = "Later"\n\temail = "later@example.test"\n');
    writeFileSync(path.join(home, '.gitconfig'), '[user]\n\tname = Renamed\n');
    sync.sync();
    expect(readFileSync(file, 'utf8')).toContain('\tname = "Renamed"\n');
    expect(readFileSync(file, 'utf8')).not.toContain('email');
  });

  it('does nothing while nothing changed, and puts back a file removed or replaced meanwhile', () => {
    const { home, homeRoot } = world();
    writeFileSync(path.join(home, '.gitconfig'), '[user]\n\tname = Same\n');
    const sync = new GitIdentitySync(homeRoot, home);
    const file = sync.sync();
    const before = statSync(file);
    sync.sync();
    expect(statSync(file).ino).toBe(before.ino);
    writeFileSync(file, '[core]\n\tfsmonitor = /tmp/x\n');
    sync.sync();
    expect(readFileSync(file, 'utf8')).not.toContain('fsmonitor');
  });

  it("a new session's .gitconfig includes it, and git run in that HOME uses it; what the command sets wins", () => {
    const { home, homeRoot } = world();
    writeFileSync(path.join(home, '.gitconfig'), '[user]\n\tname = Host User\n\temail = host@example.test\n');
    const session = ensureSessionHome(homeRoot, 'k'.repeat(32), []);
    new GitIdentitySync(homeRoot, home).sync();
    const git = (...args: string[]) =>
      spawnSync('git', args, {
        env: { PATH: process.env.PATH, HOME: session },
        encoding: 'utf8',
      }).stdout.trim();
    expect(git('var', 'GIT_AUTHOR_IDENT')).toMatch(/^Host User <host@example\.test> /);
    git('config', '--global', 'user.name', 'Command Choice');
    expect(git('var', 'GIT_AUTHOR_IDENT')).toMatch(/^Command Choice <host@example\.test> /);
  });

  it('writes beside the HOMEs without following a link there', () => {
    const { base, home, homeRoot } = world();
    const elsewhere = path.join(base, 'elsewhere');
    writeFileSync(elsewhere, 'untouched\n');
    symlinkSync(elsewhere, path.join(homeRoot, 'git-identity'));
    new GitIdentitySync(homeRoot, home).sync();
    expect(readFileSync(elsewhere, 'utf8')).toBe('untouched\n');
  });
});
