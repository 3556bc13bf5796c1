import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { changeList, runChanges } from '../src/changes/change-set.js';
import { recordedRoots, runIdOf } from '../src/changes/change-store.js';
import { decodeName, parseStates, readStates } from '../src/changes/states.js';

/** A state group as the launcher writes it (native/linux/changes/state.c). */
const st = (
  type: string,
  o: { mode?: string; ino?: number; size?: number; m?: number; uid?: number; target?: string } = {},
) =>
  `${type} ${o.mode ?? '644'} ${o.uid ?? 0} 0 ${o.size ?? 0} 8 2049 ${o.ino ?? 0} ${o.m ?? 1} 0 1 0 :${o.target ?? ''}`;
const entry = (rel: string, before: string, after: string) => `entry 0 0 0 :${rel} ${before} ${after}`;
const file = (lines: string[]) =>
  ['aleph-changes 1', 'root 0 :/w', 'recorded 1 :', 'undoable 1 :', 'bytes 4096', ...lines, ''].join('\n');
const ABSENT = st('-', { mode: '0' });

describe('the change set from a run’s states', () => {
  it('decodes escaped names (spaces, %, newlines, bytes above ASCII)', () => {
    expect(decodeName(':a%20b%25c%0Ad')).toBe('a b%c\nd');
    expect(decodeName(':')).toBe('');
    expect(decodeName(':caf\xc3\xa9')).toBe('café');
    expect(() => decodeName('x')).toThrow();
  });

  it('names created, deleted, modified (what) and renamed paths, in path order', () => {
    const states = parseStates(
      file([
        entry('new.txt', ABSENT, st('f', { ino: 10 })),
        entry('gone', st('d', { mode: '755', ino: 11 }), ABSENT),
        entry('edit', st('f', { ino: 12, size: 3 }), st('f', { ino: 12, size: 9, m: 2 })),
        entry('exec', st('f', { mode: '755', ino: 13 }), st('f', { mode: '644', ino: 13 })),
        entry('mine', st('f', { ino: 14 }), st('f', { ino: 14, uid: 1000 })),
        entry('ln', st('l', { ino: 15, target: 'a' }), st('l', { ino: 15, target: 'b' })),
        entry('old', st('d', { ino: 16 }), ABSENT),
        entry('moved', ABSENT, st('d', { ino: 16 })),
        entry('dir', st('d', { ino: 17 }), st('d', { ino: 18 })),
      ]),
    );
    expect(states.bytes).toBe(4096);
    expect(changeList(states.entries, new Set(['/w/new.txt']))).toEqual([
      { op: 'modified', path: '/w/edit', type: 'file', what: ['content'] },
      { op: 'modified', path: '/w/exec', type: 'file', what: ['mode'] },
      { op: 'deleted', path: '/w/gone', type: 'directory' },
      { op: 'modified', path: '/w/ln', type: 'symlink', what: ['target'] },
      { op: 'modified', path: '/w/mine', type: 'file', what: ['owner'] },
      { op: 'renamed', path: '/w/moved', from: '/w/old', type: 'directory' },
      { op: 'created', path: '/w/new.txt', type: 'file', quarantined: true },
    ]);
  });

  it('knows an object by its inode and birth: an inode freed and handed to a new directory is no rename', () => {
    // `rm -rf one && mkdir two`, where the filesystem gave two the inode one had (seen on ext4), then a
    // real rename (the same inode, born at the same time). The births follow the entry's two states.
    const born = (e: string, before: string, after: string) => `${e} @${before} @${after}`;
    const states = parseStates(
      file([
        born(entry('one', st('d', { ino: 30 }), ABSENT), '100.000000005', '0.000000000'),
        born(entry('two', ABSENT, st('d', { ino: 30 })), '0.000000000', '200.000000007'),
        born(entry('f', st('f', { ino: 31 }), st('f', { ino: 31 })), '100.000000001', '200.000000002'),
        born(entry('old', st('d', { ino: 32 }), ABSENT), '100.000000009', '0.000000000'),
        born(entry('new', ABSENT, st('d', { ino: 32 })), '0.000000000', '100.000000009'),
      ]),
    );
    expect(states.entries[0]?.before.birth).toBe('100.000000005');
    expect(states.entries[0]?.after.birth).toBe('');
    expect(changeList(states.entries, new Set())).toEqual([
      { op: 'modified', path: '/w/f', type: 'file', what: ['content'] },
      { op: 'renamed', path: '/w/new', from: '/w/old', type: 'directory' },
      { op: 'deleted', path: '/w/one', type: 'directory' },
      { op: 'created', path: '/w/two', type: 'directory' },
    ]);
    // Without births (an older states file), the inode alone pairs them, as before.
    const old = parseStates(
      file([entry('one', st('d', { ino: 30 }), ABSENT), entry('two', ABSENT, st('d', { ino: 30 }))]),
    );
    expect(changeList(old.entries, new Set())).toEqual([
      { op: 'renamed', path: '/w/two', from: '/w/one', type: 'directory' },
    ]);
  });

  it('marks what was set aside, and what is beneath a directory set aside, as quarantined', () => {
    const states = parseStates(
      file([
        entry('sub/.git/hooks', ABSENT, st('d', { ino: 20 })),
        entry('sub/.git/hooks/pre-commit', ABSENT, st('f', { ino: 21 })),
        entry('sub/.git/hooksx', ABSENT, st('f', { ino: 22 })),
        entry('sub/.git/HEAD', ABSENT, st('f', { ino: 23 })),
      ]),
    );
    const c = runChanges(states, new Set(['/w/sub/.git/hooks']));
    expect(c.entries.filter((e) => e.quarantined).map((e) => e.path)).toEqual([
      '/w/sub/.git/hooks',
      '/w/sub/.git/hooks/pre-commit',
    ]);
    expect(c.counts.quarantined).toBe(2);
  });

  it('cuts the entries at the limit and says so, counting them all', () => {
    const lines = Array.from({ length: 12 }, (_, i) =>
      entry(`f${String(i).padStart(2, '0')}`, ABSENT, st('f', { ino: 100 + i })),
    );
    const c = runChanges(parseStates(file(lines)), new Set(), 5);
    expect(c.counts.created).toBe(12);
    expect(c.entries).toHaveLength(5);
    expect(c.entries[0]?.path).toBe('/w/f00');
    expect(c.truncated).toBe(true);
  });

  it('says why a run was not recorded or cannot be undone', () => {
    const unrecorded = parseStates(
      file([]).replace('recorded 1 :', 'recorded 0 :seccomp%20user%20notification'),
    );
    expect(runChanges(unrecorded, new Set())).toMatchObject({
      recorded: false,
      reason: 'seccomp user notification',
      undoable: false,
    });
    const kept = parseStates(file([]).replace('undoable 1 :', 'undoable 0 :too%20large:%20big.iso'));
    expect(runChanges(kept, new Set())).toMatchObject({
      recorded: true,
      undoable: false,
      undoRefusal: 'too large: big.iso',
    });
  });
});

describe('the store’s inputs', () => {
  const dirs: string[] = [];
  afterAll(() => {
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  it('records the checked roots but the session HOME', () => {
    const launch = [
      '--open',
      'p0',
      '/w',
      '--open',
      'p1',
      '/h',
      '--open',
      'p2',
      '/g',
      '--check-root',
      'p0',
      '--check-root',
      'p1',
      '--check-root',
      'p2',
    ];
    expect(recordedRoots(launch, '/h')).toEqual(['/w', '/g']);
  });

  it('takes the pipeline’s runId, else makes one of the same form', () => {
    const base = { sessionId: 's' } as unknown as Parameters<typeof runIdOf>[0];
    expect(runIdOf({ ...base, runId: 'r00lmq3x2k9a-1f2e3d4c' } as never)).toBe('r00lmq3x2k9a-1f2e3d4c');
    expect(runIdOf({ ...base, runId: '../etc' } as never)).toMatch(/^r[0-9a-z]{12}-[0-9a-f]{8}$/);
    expect(runIdOf(base)).toMatch(/^r[0-9a-z]{12}-[0-9a-f]{8}$/);
  });

  it('reads a states file as the launcher leaves it, and nothing where there is none', () => {
    const d = mkdtempSync(path.join(os.tmpdir(), 'aleph-states-'));
    dirs.push(d);
    expect(readStates(d)).toBeUndefined();
    mkdirSync(path.join(d, 'blobs'));
    writeFileSync(path.join(d, 'states'), file([entry('a%20b', ABSENT, st('f', { ino: 3 }))]), 'latin1');
    expect(readStates(d)?.entries[0]?.path).toBe('/w/a b');
  });
});
