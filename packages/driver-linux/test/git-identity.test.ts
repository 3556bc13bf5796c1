import { spawnSync } from 'node:child_process';
import { linkSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  GitIdentitySync,
  initialGitconfig,
  readGitIdentity,
  refreshGitconfig,
} from '../src/run/git-identity.js';
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

const HOST = { name: 'Host User', email: 'host@example.test' };
const LATE = { name: 'Late User', email: 'late@example.test' };
/** git in a session HOME: `git var GIT_AUTHOR_IDENT`, `git config --global …`. */
const gitIn =
  (home: string) =>
  (...args: string[]) =>
    spawnSync('git', args, { env: { PATH: process.env.PATH, HOME: home }, encoding: 'utf8' }).stdout.trim();

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
  });

  it("a new HOME's .gitconfig is a plain [user] section git reads, --global included", () => {
    const text = initialGitconfig({ name: 'A "quoted" \\ name', email: 'a@b' });
    expect(text).toMatch(
      /^# aleph-sandbox wrote .*\n\[user\]\n\tname = "A \\"quoted\\" \\\\ name"\n\temail = "a@b"\n$/,
    );
    const { homeRoot } = world();
    const { dir } = ensureSessionHome(homeRoot, 'k'.repeat(32), HOST);
    const git = gitIn(dir);
    expect(git('config', '--global', 'user.email')).toBe('host@example.test');
    expect(git('var', 'GIT_AUTHOR_IDENT')).toMatch(/^Host User <host@example\.test> /);
  });

  it('brings the values it wrote to the new identity; values the command set stay its own', () => {
    const first = initialGitconfig(HOST);
    const later = refreshGitconfig(first, LATE) as string;
    expect(later).toBe(initialGitconfig(LATE));
    expect(refreshGitconfig(later, LATE)).toBeUndefined();
    // The command set its own name (git rewrites the line) and a signing key: both stay; the email follows.
    const owned = first
      .replace('\tname = "Host User"', '\tname = Agent')
      .replace('[user]\n', '[user]\n\tsigningkey = K\n');
    const next = refreshGitconfig(owned, LATE) as string;
    expect(next).toContain('\tname = Agent\n');
    expect(next).toContain('\tsigningkey = K\n');
    expect(next).toContain('\temail = "late@example.test"\n');
    // …and later changes never take its name again.
    expect(refreshGitconfig(next, { name: 'Third', email: 'late@example.test' })).toBeUndefined();
    // An identity the user gained after the HOME was made is added; one removed goes.
    expect(refreshGitconfig(initialGitconfig({}), HOST)).toBe(initialGitconfig(HOST));
    expect(refreshGitconfig(initialGitconfig(HOST), { name: 'Host User' })).toBe(
      initialGitconfig({ name: 'Host User' }),
    );
    // Without the record (the command rewrote the file, or removed the line) nothing is the driver's.
    expect(refreshGitconfig('[user]\n\tname = "Host User"\n', LATE)).toBeUndefined();
    expect(
      refreshGitconfig(
        '# aleph-sandbox wrote the [user] name and email below, and keeps them up to date: null\n',
        LATE,
      ),
    ).toBeUndefined();
  });

  it('follows the user: an identity set after a session began is in its .gitconfig at its next run', () => {
    const { home, homeRoot } = world();
    const sync = new GitIdentitySync(home);
    const key = 'k'.repeat(32);
    const { dir } = ensureSessionHome(homeRoot, key, sync.current());
    sync.made(key, sync.current());
    expect(gitIn(dir)('config', '--global', 'user.email')).toBe('');
    writeFileSync(path.join(home, '.gitconfig'), '[user]\n\tname = Late User\n\temail = late@example.test\n');
    sync.refresh(dir, key);
    expect(gitIn(dir)('var', 'GIT_AUTHOR_IDENT')).toMatch(/^Late User <late@example\.test> /);
    // A command's own `git config --global user.name` wins from then on.
    gitIn(dir)('config', '--global', 'user.name', 'Command Choice');
    writeFileSync(path.join(home, '.gitconfig'), '[user]\n\tname = Renamed\n\temail = late@example.test\n');
    sync.refresh(dir, key);
    expect(gitIn(dir)('var', 'GIT_AUTHOR_IDENT')).toMatch(/^Command Choice <late@example\.test> /);
  });

  it('never writes through a link, a second link or anything but a regular file', () => {
    const { base, home, homeRoot } = world();
    writeFileSync(path.join(home, '.gitconfig'), '[user]\n\tname = Late User\n');
    const victim = path.join(base, 'victim');
    const planted = `${initialGitconfig(HOST)}`;
    for (const [i, plant] of [
      (file: string) => symlinkSync(victim, file),
      (file: string) => linkSync(victim, file),
    ].entries()) {
      writeFileSync(victim, planted);
      const key = String(i).repeat(32);
      const dir = path.join(homeRoot, key);
      mkdirSync(dir);
      plant(path.join(dir, '.gitconfig'));
      new GitIdentitySync(home).refresh(dir, key);
      expect(readFileSync(victim, 'utf8'), `plant ${i}`).toBe(planted);
    }
  });
});
