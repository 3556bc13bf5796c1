import { describe, expect, it } from 'vitest';
import { afterRunNotice } from '../src/cli/after-run-notice.js';

describe('afterRunNotice', () => {
  it('says nothing when the check after the run had nothing to say', () => {
    expect(afterRunNotice({ driver: 'linux', afterRun: { method: 'journal' } })).toBeUndefined();
  });

  it('names what was set aside and where it went, set-id bits cleared, symlinks out and what could not be examined', () => {
    const line = afterRunNotice({
      quarantine: [
        { path: '/w/.git/hooks', movedTo: '/h/.aleph/quarantine/k/w/.git/hooks' },
        { path: '/w/.envrc', movedTo: '/h/.aleph/quarantine/k/w/.envrc' },
      ],
      setIdCleared: ['/w/id'],
      symlinksOut: [
        { path: '/w/pw', target: '/etc/passwd', leads: 'outside' },
        { path: '/w/x', target: '/nowhere/x', leads: 'dangling' },
      ],
      afterRun: { method: 'walk', incomplete: ['/w/locked: could not be examined'] },
    });
    expect(line).toBe(
      'aleph-sandbox: after the run: set aside /w/.git/hooks, /w/.envrc (moved to /h/.aleph/quarantine/k); cleared the set-id bits of /w/id; left symlinks leading out of the workspace: /w/pw -> /etc/passwd, /w/x -> /nowhere/x (dangling); could not examine /w/locked: could not be examined (set aside whole); see --json for every path\n',
    );
  });

  it('says what was removed without being kept in the quarantine, and why', () => {
    expect(
      afterRunNotice({
        removed: ['/w/d/.git/hooks'],
        quarantineNotKept: ["/w/d/.git/hooks: over the quarantine's budget for a run"],
      }),
    ).toBe(
      "aleph-sandbox: after the run: removed /w/d/.git/hooks; not kept in the quarantine: /w/d/.git/hooks: over the quarantine's budget for a run; see --json for every path\n",
    );
  });

  it('counts what it does not name', () => {
    const quarantine = Array.from({ length: 5 }, (_, i) => ({ path: `/w/${i}`, movedTo: `/q/w/${i}` }));
    expect(afterRunNotice({ quarantine })).toMatch(
      /set aside \/w\/0, \/w\/1, \/w\/2 and 2 more \(moved to \/q\)/,
    );
  });

  it('counts too what the bound on details left out of a list (details.omitted)', () => {
    const quarantine = Array.from({ length: 5 }, (_, i) => ({ path: `/w/${i}`, movedTo: `/q/w/${i}` }));
    const symlinksOut = [{ path: '/w/l', target: '/etc', leads: 'outside' }];
    const text = afterRunNotice({ quarantine, symlinksOut, omitted: { quarantine: 95, symlinksOut: 2999 } });
    expect(text).toMatch(/set aside \/w\/0, \/w\/1, \/w\/2 and 97 more \(moved to \/q\)/);
    expect(text).toMatch(/leading out of the workspace: \/w\/l -> \/etc and 2999 more;/);
  });

  it('says first what the check of an interrupted earlier run set aside, naming its roots', () => {
    const text = afterRunNotice({
      interruptedRun: {
        roots: ['/w'],
        quarantine: [{ path: '/w/k3/.git/config', movedTo: '/q/k/w/k3/.git/config' }],
      },
      quarantine: [{ path: '/w/.envrc', movedTo: '/q/k/w/.envrc' }],
    });
    expect(text).toBe(
      'aleph-sandbox: before the run, for an earlier run in /w killed before its check after the run: set aside /w/k3/.git/config (moved to /q/k); see --json for every path\n' +
        'aleph-sandbox: after the run: set aside /w/.envrc (moved to /q/k); see --json for every path\n',
    );
  });
});
