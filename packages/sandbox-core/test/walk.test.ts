import { describe, expect, it } from 'vitest';
import { selectLines } from '../src/files/line-range.js';
import {
  type DriverFileTarget,
  FileAccessError,
  isAlephError,
  type WalkOps,
  walkBeneath,
} from '../src/index.js';

// A tree in memory: paths → 'dir' | 'file' | { link: text }. Handles are paths; the root is '/w'.
type Node = 'dir' | 'file' | { link: string };
function tree(entries: Record<string, Node>) {
  const nodes = new Map<string, Node>(Object.entries({ '/w': 'dir', ...entries }));
  const opened: string[] = [];
  const released: string[] = [];
  const ops: WalkOps<string> = {
    lookup(dir, name) {
      const p = `${dir}/${name}`;
      const n = nodes.get(p);
      if (n === undefined) return undefined;
      opened.push(p);
      return { handle: p, type: n === 'dir' ? 'directory' : n === 'file' ? 'file' : 'symlink' };
    },
    readlink: (dir, name) => (nodes.get(`${dir}/${name}`) as { link: string }).link,
    mkdir: (dir, name) => {
      nodes.set(`${dir}/${name}`, 'dir');
    },
    release: (h) => {
      released.push(h);
    },
  };
  return { ops, opened, released, nodes };
}

function target(components: string[], checks: string[] = []): DriverFileTarget {
  return {
    root: '/w',
    components,
    path: components.join('/'),
    operation: 'readFile',
    check: (resolved, action) => {
      checks.push(`${action} ${resolved}`);
    },
    error: (code, reason, fix) =>
      new FileAccessError(code, {
        operation: 'readFile',
        path: components.join('/'),
        reason,
        fix: fix ?? 'fix',
      }),
  };
}

const code = (fn: () => unknown) => {
  try {
    fn();
  } catch (e) {
    if (isAlephError(e)) return e.code;
    throw e;
  }
  return 'ok';
};

describe('walkBeneath', () => {
  it('follows relative and absolute links that stay inside, popping .. on the directory stack', () => {
    const { ops } = tree({
      '/w/a': 'dir',
      '/w/a/b': 'dir',
      '/w/a/b/f': 'file',
      '/w/up': { link: 'a/b/../b/f' },
      '/w/abs': { link: '/w/a/b' },
      '/w/a/sib': { link: '../a/b' },
    });
    expect(walkBeneath(ops, '/w', target(['up']), { followFinal: true }).resolved).toBe('/w/a/b/f');
    const viaAbs = walkBeneath(ops, '/w', target(['abs', 'f']), { followFinal: true });
    expect([viaAbs.resolved, viaAbs.node?.type]).toEqual(['/w/a/b/f', 'file']);
    expect(walkBeneath(ops, '/w', target(['a', 'sib', 'f']), { followFinal: true }).resolved).toBe(
      '/w/a/b/f',
    );
    const link = walkBeneath(ops, '/w', target(['up']), { followFinal: false });
    expect(link.node?.type).toBe('symlink');
  });

  it('refuses an absolute link outside, .. above the root, and loops; releases what it opened', () => {
    const { ops, opened, released } = tree({
      '/w/a': 'dir',
      '/w/a/out': { link: '/etc/passwd' },
      '/w/a/up': { link: '../../etc' },
      '/w/prefix': { link: '/wx/secret' },
      '/w/loop': { link: 'loop' },
    });
    for (const c of [['a', 'out'], ['a', 'up'], ['prefix']]) {
      expect(code(() => walkBeneath(ops, '/w', target(c), { followFinal: true }))).toBe(
        'ALEPH_PATH_OUTSIDE_WORKSPACE',
      );
    }
    expect(code(() => walkBeneath(ops, '/w', target(['loop']), { followFinal: true }))).toBe(
      'ALEPH_INVALID_PATH',
    );
    expect(new Set(released)).toEqual(new Set(opened));
  });

  it('a missing final component is reported with its parent; a missing directory on the way is not found', () => {
    const { ops } = tree({ '/w/a': 'dir', '/w/f': 'file' });
    const w = walkBeneath(ops, '/w', target(['a', 'new']), { followFinal: false });
    expect([w.node, w.name, w.parent, w.resolved]).toEqual([undefined, 'new', '/w/a', '/w/a/new']);
    expect(code(() => walkBeneath(ops, '/w', target(['x', 'y']), { followFinal: false }))).toBe(
      'ALEPH_FILE_NOT_FOUND',
    );
    expect(code(() => walkBeneath(ops, '/w', target(['f', 'y']), { followFinal: false }))).toBe(
      'ALEPH_NOT_A_DIRECTORY',
    );
  });

  it('creates missing parents after checking the file and each directory', () => {
    const { ops, nodes } = tree({});
    const checks: string[] = [];
    walkBeneath(ops, '/w', target(['x', 'y', 'f'], checks), { followFinal: false, createParents: true });
    expect(checks).toEqual(['write /w/x/y/f', 'create-directory /w/x', 'create-directory /w/x/y']);
    expect(nodes.get('/w/x/y')).toBe('dir');
  });

  it('a write that would make or change a git directory under any name is refused before it creates anything', () => {
    const write = { followFinal: false, createParents: true, write: true } as const;
    // HEAD beside objects, refs or commondir: the file's own directory, or any directory above it.
    const { ops, nodes, opened, released } = tree({
      '/w/src': 'dir',
      '/w/src/HEAD': 'file',
      '/w/bare': 'dir',
      '/w/bare/HEAD': 'file',
      '/w/bare/refs': 'dir',
      '/w/bare/hooks': 'dir',
      '/w/wt': 'dir',
      '/w/wt/commondir': 'file',
      '/w/half': 'dir',
      '/w/half/objects': 'dir',
    });
    const before = new Map(nodes);
    for (const c of [
      ['src', 'objects', 'info', 'alternates'], // makes src/objects beside src/HEAD
      ['src', 'refs'], // a file named refs counts too
      ['bare', 'config'],
      ['bare', 'hooks', 'post-checkout'], // inside one
      ['bare', 'new', 'deep', 'f'],
      ['wt', 'HEAD'], // HEAD beside commondir
      ['half', 'HEAD'], // HEAD beside objects
    ]) {
      expect(
        code(() => walkBeneath(ops, '/w', target(c), write)),
        c.join('/'),
      ).toBe('ALEPH_PATH_PROTECTED');
    }
    expect(nodes).toEqual(before);
    expect(new Set(released)).toEqual(new Set(opened));
  });

  it('names the git directory, and leaves other writes, reads and deletes alone', () => {
    const { ops } = tree({ '/w/src': 'dir', '/w/src/HEAD': 'file', '/w/r': 'dir', '/w/r/refs': 'dir' });
    const write = { followFinal: false, createParents: true, write: true } as const;
    try {
      walkBeneath(ops, '/w', target(['r', 'HEAD']), write);
      expect.unreachable();
    } catch (e) {
      expect((e as Error).message).toContain(
        'git directory, /w/r (it holds HEAD beside objects, refs or commondir)',
      );
    }
    // HEAD alone, or objects/refs without HEAD, are ordinary names.
    expect(code(() => walkBeneath(ops, '/w', target(['src', 'config']), write))).toBe('ok');
    expect(code(() => walkBeneath(ops, '/w', target(['r', 'objects', 'x']), write))).toBe('ok');
    expect(code(() => walkBeneath(ops, '/w', target(['r', 'refs', 'x']), { followFinal: false }))).toBe('ok');
  });

  it('the root itself, and a path ending in .., end on the directory stack', () => {
    const { ops } = tree({ '/w/a': 'dir' });
    expect(walkBeneath(ops, '/w', target([]), { followFinal: true })).toMatchObject({
      resolved: '/w',
      parent: undefined,
    });
    expect(walkBeneath(ops, '/w', target(['a', '..']), { followFinal: true }).resolved).toBe('/w');
  });
});

describe('selectLines', () => {
  it('keeps terminators, clamps past the end, and is empty for an inverted range', () => {
    expect(selectLines('a\nb\nc\nd\n', 2, 3)).toBe('b\nc\n');
    expect(selectLines('a\nb', 2, 10)).toBe('b');
    expect(selectLines('a\nb\n', 3)).toBe('');
    expect(selectLines('a\nb\n', 2, 1)).toBe('');
    expect(selectLines('only')).toBe('only');
  });
});
