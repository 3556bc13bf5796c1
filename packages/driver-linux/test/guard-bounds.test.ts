import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { checkHelperSync, resolveHelperPath } from '../src/index.js';

/**
 * Tier 3's guard past its bounds (issue 23: a deep directory inside .git/modules made the guard report it
 * "unchecked" from then on, and the next run's edit there survived). No bound makes a path unchecked: a
 * protected path larger or deeper than the snapshot keeps is walked and what changed is set aside, or it is
 * set aside whole; a .git/modules past the bounds is left to the check after the run, which finds the
 * control files written in each git directory inside. The real launcher runs a program that plays the
 * command (not sandboxed), with the guard and the check after the run on the workspace.
 */
const helper = resolveHelperPath();
const usable = process.platform === 'linux' && checkHelperSync(helper).ok;
const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** A workspace with a repository-like .git and a submodule's git directory in .git/modules/sub. */
function world() {
  const base = mkdtempSync(path.join(os.tmpdir(), 'aleph-guard-bounds-'));
  dirs.push(base);
  const ws = path.join(base, 'ws');
  for (const g of ['.git', '.git/modules/sub']) {
    mkdirSync(path.join(ws, g, 'objects'), { recursive: true });
    mkdirSync(path.join(ws, g, 'refs'), { recursive: true });
    writeFileSync(path.join(ws, g, 'HEAD'), 'ref: refs/heads/main\n');
    writeFileSync(path.join(ws, g, 'config'), '[core]\n\tbare = false\n');
  }
  mkdirSync(path.join(base, 'state'), { mode: 0o700 });
  // File times come from the kernel's coarse clock: a file written in the same tick as a run starts may be
  // taken for that run's own (and set aside by it, the safe side). What the host made here is from before.
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 50);
  return { base, ws, report: path.join(base, 'report') };
}

/** 40 directories down inside `rel` (deeper than the snapshot keeps), made by the host. */
function deepInside(ws: string, rel: string): void {
  mkdirSync(path.join(ws, rel, ...Array.from({ length: 40 }, () => 'd')), { recursive: true });
}

/** Runs `script` as the command; the report's lines (KIND PATH, what follows a tab dropped). */
function run(w: ReturnType<typeof world>, script: string, guarded: readonly string[]): string[] {
  rmSync(w.report, { force: true });
  const r = spawnSync(
    helper,
    [
      '--launch',
      '--state',
      path.join(w.base, 'state'),
      '--open',
      'p0',
      w.ws,
      '--check-root',
      'p0',
      '--quarantine',
      path.join(w.base, 'quarantine'),
      ...guarded.flatMap((rel) => ['--guard', 'p0', rel]),
      '--report',
      w.report,
      '--',
      '/bin/sh',
      '-c',
      script,
    ],
    { cwd: w.ws, encoding: 'utf8' },
  );
  expect(r.status, r.stderr).toBe(0);
  const text = existsSync(w.report) ? readFileSync(w.report, 'utf8') : '';
  return text
    .split('\n')
    .filter(Boolean)
    .map((l) => l.split('\t')[0] as string);
}

describe.runIf(usable)(
  'the tier 3 guard past its bounds (the real launcher) [needs the built helper]',
  () => {
    it('an edit of a submodule config next to a directory deeper than the snapshot keeps, in .git/modules, is set aside; nothing is unchecked', () => {
      const w = world();
      deepInside(w.ws, '.git/modules/big');
      const plant = 'printf "[core]\\n\\tfsmonitor = /tmp/planted\\n" >> .git/modules/sub/config';
      for (let round = 0; round < 2; round++) {
        const report = run(w, plant, ['.git/modules', '.git/config', '.git/hooks']);
        expect(report).toContain(`quarantined ${w.ws}/.git/modules/sub/config`);
        expect(report.filter((l) => l.startsWith('unchecked'))).toEqual([]);
        expect(existsSync(path.join(w.ws, '.git/modules/sub/config'))).toBe(false);
        writeFileSync(path.join(w.ws, '.git/modules/sub/config'), '[core]\n\tbare = false\n');
      }
      expect(existsSync(path.join(w.ws, '.git/modules/big'))).toBe(true);
    });

    it('a protected directory deeper than the snapshot keeps, where the command adds a file, is set aside whole and said not restored', () => {
      const w = world();
      deepInside(w.ws, '.claude');
      // Control: a small .claude keeps its snapshot: set aside and put back.
      const small = world();
      mkdirSync(path.join(small.ws, '.claude'));
      expect(run(small, 'echo x > .claude/settings.json', ['.claude'])).toEqual([
        `quarantined ${small.ws}/.claude`,
        `restored ${small.ws}/.claude`,
      ]);
      const report = run(w, 'echo x > .claude/settings.json', ['.claude']);
      expect(report).toEqual([
        `quarantined ${w.ws}/.claude`,
        `unrestored ${w.ws}/.claude: more than 20000 entries, deeper than 32 or unreadable: set aside whole, the original is not back`,
      ]);
      expect(existsSync(path.join(w.ws, '.claude'))).toBe(false);
      expect(existsSync(path.join(w.base, 'quarantine', w.ws, '.claude', 'settings.json'))).toBe(true);
    });
  },
);
