import { chownSync, mkdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { linuxStack, REQUIRED, requiredButMissing } from '../support.js';
import { makeHarnessBase, runHarnessAs } from './harness-run.js';
import { identities } from './hosts.js';

/**
 * Every run's change set and undo (issue 38), in the real sandbox, as root and as uid 65534: each
 * workload's change set must equal a host-side diff of the workspace (snapshots before and after the
 * command, renames by inode), undo must put the workspace back exactly (types, modes, owners, bytes, link
 * targets), and a second undo is refused as already undone. A host edit after the run makes undo refuse,
 * naming the path, until forced. Two runs at once in one workspace each get their own change set.
 */

const stack = linuxStack();
const PY = '/usr/bin/python3';

const NPM_LIKE = `
import os
for p in range(30):
    for d in range(10):
        base = f'node_modules/pkg{p}/lib/d{d}'
        os.makedirs(base, exist_ok=True)
        for f in range(10):
            with open(f'{base}/f{f}.js', 'w') as fh:
                fh.write(f'module.exports = {p * 100 + d * 10 + f};\\n')
`;

const MMAP_TRUNCATE = `
import mmap, os
with open('data.bin', 'r+b') as f:
    m = mmap.mmap(f.fileno(), 0)
    m[0:5] = b'HELLO'
    m.flush()
    m.close()
    os.ftruncate(f.fileno(), 1000)
`;

// A package of 3,000 small files (30 directories of 100) packed as npm packs it, and an app to install it in.
const NPM_TARBALL = [
  'mkdir -p pkgsrc/package && cd pkgsrc/package',
  `echo '{"name":"big","version":"1.0.0"}' > package.json`,
  'for d in $(seq 0 29); do mkdir lib$d; for f in $(seq 0 99); do echo "module.exports = $d$f;" > lib$d/f$f.js; done; done',
  'cd .. && tar czf ../big-1.0.0.tgz package && cd .. && rm -rf pkgsrc',
  `echo '{"name":"app","version":"1.0.0"}' > package.json`,
].join(' && ');

const GIT = 'git -c user.name=t -c user.email=t@example.com -c init.defaultBranch=main';

const WORKLOADS = [
  {
    id: 'rm-rf',
    setup:
      'mkdir -p src/a/b && echo one > src/a/one.txt && echo two > src/a/b/two.sh && chmod 750 src/a/b/two.sh && ' +
      'ln -s a/one.txt src/link && head -c 300000 /dev/urandom > src/blob && truncate -s 5M src/sparse && chmod 700 src/a',
    command: 'rm -rf src',
  },
  {
    id: 'git-checkout',
    setup: `${GIT} init -q . && for i in 1 2 3 4 5; do echo v$i > f$i.txt; done && ${GIT} add . && ${GIT} commit -qm c && for i in 1 2 3; do echo changed$i > f$i.txt; done`,
    command: 'git checkout -- . && git status --short',
  },
  {
    id: 'sed-i',
    setup: 'for i in $(seq 1 40); do echo "foo $i" > "t$i.txt"; done',
    command: "sed -i 's/foo/bar/' t*.txt",
  },
  {
    id: 'chmod-x',
    setup: 'mkdir bin && for i in 1 2 3; do printf "#!/bin/sh\\n" > bin/s$i.sh; chmod 755 bin/s$i.sh; done',
    command: 'chmod -x bin/*.sh',
  },
  {
    id: 'symlink-to-file',
    setup: 'echo target > t.txt && ln -s t.txt l',
    command: 'rm l && echo now-a-file > l',
  },
  { id: 'hard-link', setup: 'echo first > a', command: 'ln a b && echo more >> b' },
  {
    // FIFOs (test suites make them): made and used by the command; one of the user's removed, and undo
    // makes it again with its mode.
    id: 'fifo',
    setup: 'mkfifo pipe && chmod 640 pipe && echo x > f',
    command: 'mkfifo made && rm pipe && (echo through > made &) && cat made',
  },
  {
    // A file written and renamed (either order): undo moves it back and puts its bytes back.
    id: 'write-and-rename',
    setup: 'echo 1 > f && echo 2 > h',
    command: 'echo m >> f && mv f g && mv h i && echo n >> i',
  },
  { id: 'mv-dir', setup: 'mkdir -p d/e && echo x > d/e/x && echo y > d/y', command: 'mv d d2' },
  {
    // Changes beneath a directory after it moved: recorded under the names from before the run, told where
    // they are now, and undone (the moved directory back, then what changed in it).
    id: 'mv-dir-then-change',
    setup: 'mkdir -p d/e && echo x > d/e/x && echo y > d/y && echo z > d/z',
    command:
      'mv d d2 && rm d2/y && echo changed > d2/z && echo new > d2/n && mv d2/e d2/e2 && rm d2/e2/x && mv d2 d3',
  },
  {
    // What a test suite does (gnulib's test-rename): a directory made, filled, renamed, and emptied.
    id: 'made-then-moved',
    setup: 'echo keep > keep',
    command: 'mkdir t && echo f > t/f && mv t t2 && rm t2/f && mkdir t3 && echo g > t3/g && mv t3 t4',
  },
  {
    // Renames inside a directory that moved: two directories swapped in it, a file moved into a
    // directory made by the run (undo parks the moved objects deepest first, then removes what was made).
    id: 'renames-inside-moved',
    setup: 'mkdir -p a/x a/y && echo X > a/x/f && echo Y > a/y/f && echo one > g',
    command: 'mv a c && mv c/x c/t && mv c/y c/x && mv c/t c/y && mkdir c/n && mv g c/n/ && mv c/x/f c/x/h',
  },
  {
    // What configure does (gnulib's rename checks): a directory renamed, then a rename that fails (a
    // directory onto a file), then all removed; and a file a failed rename would have replaced, written
    // after. Neither failure counts as a change, and the written file's bytes come back.
    id: 'failed-renames',
    setup: 'echo f > conftest.f && echo w > written && mkdir dir',
    command:
      'mkdir conftest.d1 && ' +
      `${PY} -c "import os\nos.rename('conftest.d1', 'conftest.d2')\nfor a, b in (('conftest.d2', 'conftest.f'), ('dir', 'written')):\n  try: os.rename(a, b)\n  except OSError: pass\nopen('written', 'a').write('more')" && ` +
      'rm -rf conftest.d1 conftest.d2',
  },
  {
    // A directory put in the place of one removed, then changed there.
    id: 'mv-dir-onto-removed',
    setup: 'mkdir a b && echo ax > a/x && echo bx > b/x',
    command: 'rm -rf a && mv b a && echo more >> a/x',
  },
  {
    id: 'node-rename',
    setup: 'mkdir -p lib/inner && echo a > lib/a && echo b > lib/inner/b',
    command: `node -e "require('fs').renameSync('lib', 'lib2')"`,
  },
  { id: 'npm-like', setup: 'echo {} > package.json', command: `${PY} -c "${NPM_LIKE.replace(/"/g, '\\"')}"` },
  {
    id: 'mmap-truncate',
    setup: 'head -c 100000 /dev/urandom > data.bin',
    command: `${PY} -c "${MMAP_TRUNCATE.replace(/"/g, '\\"')}"`,
  },
  {
    id: 'host-edit',
    setup: 'echo original > notes.txt && echo keep > other.txt',
    command: 'echo by-the-command > notes.txt',
    hostEdit: 'echo by-the-user >> notes.txt',
    conflicts: ['notes.txt'],
  },
  {
    // An attack on undo: a symlink out planted where the run removed a directory. Undo refuses; forced, it
    // removes the link itself and writes nothing through it.
    id: 'planted-symlink',
    setup: 'mkdir src && echo a > src/a && mkdir -p ../outside-planted',
    command: 'rm -rf src',
    hostEdit: 'ln -s ../outside-planted src',
    conflicts: ['src'],
  },
  {
    id: 'two-at-once',
    setup: 'mkdir -p one two && echo 1 > one/a && echo 2 > two/b',
    command: 'rm -rf one && mkdir one && echo new > one/c',
    parallelWith: 'two-at-once-b',
  },
  {
    id: 'two-at-once-b',
    parallelOf: 'two-at-once',
    command: 'echo more >> two/b && mkdir two/sub && echo s > two/sub/s',
  },
  {
    // The directory made right after one is removed may get its inode (ext4 hands it on at once): a
    // deletion and a creation, never a rename, and undo puts back the first without the second's file.
    id: 'inode-handed-on',
    setup: 'mkdir one && echo a > one/a',
    command: 'rm -rf one && mkdir two && echo s > two/s',
  },
  {
    id: 'two-sessions',
    setup: 'mkdir -p one two && echo 1 > one/a && echo 2 > two/b',
    command: 'rm -rf one && echo new > c',
    parallelWith: 'two-sessions-b',
  },
  {
    id: 'two-sessions-b',
    parallelOf: 'two-sessions',
    partnerSession: true,
    // A spawned process's change set, when it exits (wait()).
    spawned: true,
    command: 'sed -i s/2/3/ two/b && mkdir two/sub && echo s > two/sub/s',
  },
  {
    // npm itself, offline, installing a local tarball of 3,000 files: undo removes them all.
    id: 'npm-install',
    setup: NPM_TARBALL,
    command: 'npm install --offline --no-audit --no-fund --ignore-scripts ./big-1.0.0.tgz',
  },
  {
    // Writes through paths outside the workspace that land in it: a descriptor's magic link, the cwd's, a
    // symlink from the session's temporary directory, /dev/fd.
    id: 'through-links',
    setup: 'echo f > f && echo g > g && echo k > k',
    command:
      'exec 3<f 4<k; echo x > /proc/self/fd/3; t=$(mktemp -d -t aleph-l-XXXXXX); ln -s "$PWD" "$t/l"; ' +
      'echo y > "$t/l/g"; echo z > /proc/self/cwd/h; echo v > /dev/fd/4; rm -r "$t"',
  },
  {
    // Writes through symlinks inside the workspace (a linked package directory, as pnpm makes them; a link
    // to a file): recorded, and undone, where they land.
    id: 'via-symlinks',
    setup:
      'mkdir -p packages/a/sub node_modules && echo a > packages/a/x && echo s > packages/a/sub/s && ' +
      'ln -s ../packages/a node_modules/a && echo t > t && ln -s t tl',
    command:
      'echo changed > node_modules/a/x && echo new > node_modules/a/y && echo via > tl && rm node_modules/a/sub/s',
  },
  {
    // A ".." after a symlink goes up from where the link leads, not from the link (the kernel's walk, not
    // the lexical one): recorded, and undone, where they land; through the cwd's magic link too.
    id: 'dotdot-after-symlinks',
    setup: 'mkdir -p a/b && echo k > a/k && ln -s a/b lnk',
    command:
      'echo x > lnk/../new && echo y > lnk/../k && mkdir lnk/../d && ' +
      'echo z > "/proc/self/cwd/../$(basename "$PWD")/via-cwd"',
  },
  {
    // A write through another process's magic link (its /proc/PID/cwd, as the sandbox numbers it): where
    // it lands cannot be known from outside, so the run says it cannot be undone, and undo refuses.
    id: 'magic-link-unknown',
    setup: 'echo a > a',
    command: 'echo b > /proc/$$/cwd/a',
    unundoable: 'a path through a link whose place could not be known',
  },
  {
    id: 'touch-times',
    setup: 'echo a > a.txt && echo b > b.txt && echo c > c.txt && chmod 444 c.txt',
    command: `touch -d 2001-02-03T04:05:06 a.txt && touch -m -d @1 c.txt && ${PY} -c "import os; os.utime('b.txt', (1, 2))"`,
  },
  {
    // Round-3-style plants (a nested repository's config and hooks): still set aside by the check after
    // the run, and listed in the change set as quarantined.
    id: 'plant',
    setup: 'echo keep > keep.txt',
    command:
      "git init -q sub && git -C sub config core.fsmonitor 'touch /tmp/aleph-pwned' && printf '#!/bin/sh\\ntouch /tmp/aleph-pwned\\n' > sub/.git/hooks/pre-commit && chmod +x sub/.git/hooks/pre-commit",
    quarantined: ['sub/.git/config', 'sub/.git/hooks', 'sub/.git/info'],
  },
];

interface Change {
  op: string;
  path: string;
  from?: string;
  type: string;
  what?: string[];
  quarantined?: boolean;
}
interface Outcome {
  id: string;
  outs: {
    exitCode: number;
    stderr: string;
    runId: string;
    changes: {
      recorded: boolean;
      undoable: boolean;
      undoRefusal?: string;
      entries: Change[];
      truncated: boolean;
      counts: Record<string, number>;
    };
  }[];
  diff: Change[];
  refused?: { undone: boolean; conflicts: { path: string; reason: string }[] };
  undo: { undone: boolean; conflicts: unknown[]; removed: string[]; restored: string[] }[];
  again: { undone: boolean; conflicts: { reason: string }[] };
  restored: boolean;
  /** What is in the workspace root's outside-planted (nothing may be written through a planted link). */
  outside: string[];
  afterUndo?: Change[];
}

interface Extra {
  probe: { available: boolean; detail: string };
  dropping: { afterRun: boolean[]; afterClose: boolean[]; afterDispose: boolean[] };
  keptAfterDispose: boolean[];
  off: {
    exitCode: number;
    changes: { recorded: boolean; reason?: string; undoable: boolean; entries: unknown[] };
    kept: boolean;
  };
}

const strip = (c: Change) => ({
  op: c.op,
  path: c.path,
  type: c.type,
  ...(c.from ? { from: c.from } : {}),
  ...(c.what ? { what: c.what } : {}),
});

const bases: string[] = [];
afterAll(() => {
  for (const b of bases) rmSync(b, { recursive: true, force: true });
});

// The real host as root and as uid 65534, and tier 3 (no namespaces: the two simulated container hosts).
const ids = identities().filter((i) =>
  ['root', 'unprivileged', 'seccomp-no-namespaces', 'no-userns'].includes(i.key),
);
/** Run `p` (absolute) is at `rel` in workload `id`'s workspace. */
const at = (p: string, id: string, rel: string) => p.endsWith(`/ws/${id}/${rel}`);

describe.skipIf(!stack.ok && !stack.missing.some((m) => REQUIRED.has(m)))(
  'change sets and undo (issue 38)',
  () => {
    it('needs the Linux stack', () => {
      expect(requiredButMissing(stack)).toBe(false);
    });
    for (const identity of ids) {
      describe.skipIf(identity.skip !== undefined)(
        `as ${identity.name}${identity.skip ? ` (skipped: ${identity.skip})` : ''}`,
        () => {
          let outcomes: Map<string, Outcome>;
          let extra: Extra;
          it('runs every workload', { timeout: 600_000 }, async () => {
            const h = makeHarnessBase(identity.uid, 'changes');
            bases.push(h.base);
            const workspaceRoot = path.join(h.base, 'ws');
            const stateDir = path.join(h.base, 'state');
            for (const d of [workspaceRoot, stateDir]) {
              mkdirSync(d, { mode: 0o700 });
              if (identity.uid !== process.getuid?.()) chownSync(d, identity.uid, identity.uid);
            }
            const out = await runHarnessAs<Extra & { uid: number; results: Outcome[] }>(
              identity.uid,
              h.base,
              'e2e/linux/changes-harness.mjs',
              { workspaceRoot, stateDir, workloads: WORKLOADS },
              identity.wrap,
            );
            const { results } = out;
            outcomes = new Map(results.map((r) => [r.id, r]));
            extra = out;
            expect(results.length).toBe(WORKLOADS.filter((w) => !('parallelOf' in w)).length);
          });
          it('probe() shows the changes mechanism; with recording off a run says it is unrecorded and keeps nothing', () => {
            expect(extra.probe).toMatchObject({ available: true });
            expect(extra.off.exitCode).toBe(0);
            expect(extra.off.changes).toMatchObject({ recorded: false, undoable: false, entries: [] });
            expect(extra.off.changes.reason).toMatch(/off/);
            expect(extra.off.kept).toBe(false);
            // What is not recorded is said where the mechanism is described (doctor, probe()).
            expect(extra.probe.detail).toContain('extended attributes (setxattr, removexattr)');
          });
          it('keepOnDispose: kept by default after the driver is disposed; false drops them at the session end', () => {
            expect(extra.keptAfterDispose.length).toBeGreaterThan(0);
            expect(extra.keptAfterDispose.every(Boolean)).toBe(true);
            // [the closed session's run, the plain session's run]
            expect(extra.dropping).toEqual({
              afterRun: [true, true],
              afterClose: [false, true],
              afterDispose: [false, false],
            });
          });
          for (const w of WORKLOADS.filter((x) => !('parallelOf' in x))) {
            it(`${w.id}: the change set is the host's diff, and undo restores the tree`, () => {
              const r = outcomes.get(w.id) as Outcome;
              if (w.unundoable !== undefined) {
                const c = r.outs[0]?.changes;
                expect(c).toMatchObject({ recorded: true, undoable: false });
                expect(c?.undoRefusal).toContain(w.unundoable);
                expect(r.undo[0]?.undone).toBe(false);
                expect(r.restored).toBe(false);
                return;
              }
              for (const o of r.outs) {
                expect(o.exitCode, o.stderr).toBe(0);
                expect(o.changes.recorded).toBe(true);
                expect(o.changes.undoable).toBe(true);
              }
              // What the check after the run set aside (and what is beneath it) is listed as quarantined,
              // and is not in the tree.
              const planted = w.quarantined ?? [];
              const entries = r.outs.flatMap((o) => o.changes.entries);
              const setAside = (p: string) =>
                planted.some((q) => at(p, w.id, q) || p.includes(`/ws/${w.id}/${q}/`));
              expect(entries.filter((c) => c.quarantined).map((c) => c.path)).toEqual(
                entries.filter((c) => setAside(c.path)).map((c) => c.path),
              );
              for (const q of planted)
                expect(entries.some((c) => c.quarantined && at(c.path, w.id, q))).toBe(true);
              expect(r.outs[0]?.changes.counts.quarantined).toBe(
                entries.filter((c) => setAside(c.path)).length,
              );
              const reported = entries.filter((c) => !setAside(c.path)).map(strip);
              const total = r.outs.reduce(
                (n, o) =>
                  n +
                  Object.entries(o.changes.counts)
                    .filter(([k]) => k !== 'quarantined')
                    .reduce((m, [, v]) => m + v, 0),
                0,
              );
              if (w.id === 'npm-like' || w.id === 'npm-install') {
                // Over 3,000 files: more than details keep (the driver keeps 1000, the pipeline's bound on
                // details fewer still); the first ones are kept, the counts are whole.
                expect(r.outs[0]?.changes.truncated).toBe(true);
                const kept = r.outs[0]?.changes.entries.length ?? 0;
                expect(kept).toBeGreaterThan(0);
                expect(kept).toBeLessThanOrEqual(1000);
                expect(reported).toEqual(r.diff.map(strip).slice(0, kept));
                expect(total).toBe(r.diff.length);
                expect(r.diff.length).toBeGreaterThan(w.id === 'npm-like' ? 3360 : 3030);
                if (w.id === 'npm-like') expect(r.diff.length).toBe(3361);
                expect(r.undo[0]?.removed.length).toBeGreaterThan(3000);
              } else {
                const sorted = reported.sort((x, y) =>
                  x.path < y.path ? -1 : x.path > y.path ? 1 : x.op < y.op ? -1 : 1,
                );
                expect(sorted).toEqual(r.diff.map(strip));
                expect(r.diff.length).toBeGreaterThan(0);
              }
              if (w.hostEdit !== undefined) {
                expect(r.refused?.undone).toBe(false);
                expect(r.refused?.conflicts.map((c) => path.basename(c.path))).toEqual(w.conflicts);
              }
              for (const u of r.undo) expect(u).toMatchObject({ undone: true, conflicts: [] });
              expect(r.afterUndo ?? []).toEqual([]);
              expect(r.restored).toBe(true);
              expect(r.outside).toEqual([]);
              expect(r.again.undone).toBe(false);
              expect(r.again.conflicts[0]?.reason).toBe('already undone');
            });
          }
        },
      );
    }
  },
);
